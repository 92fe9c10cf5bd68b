"""Every head: masks hold, padding never acts, and weights move unchanged to larger graphs."""

import numpy as np
import pytest
import torch

from graphtransfer.config import ModelConfig
from graphtransfer.envs.protocol import head_of
from graphtransfer.graphs import barabasi_albert, erdos_renyi
from graphtransfer.nn import build_policy
from graphtransfer.solve.inference import obs_to_tensors
from graphtransfer.tasks import EpidemicEnv, MaxCutEnv, MISEnv, MVCEnv


def stacked(env, count, rng):
    """``count`` observations from random points of random episodes, and their masks."""
    observations, masks = [], []
    for i in range(count):
        obs, _ = env.reset(seed=int(rng.integers(1 << 30)), options={"graph_index": i % len(env.graphs)})
        for _ in range(int(rng.integers(0, 3))):
            if env._finished():
                break
            obs, *_ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        observations.append(obs)
        masks.append(env.action_masks())
    batch = {k: torch.as_tensor(np.stack([o[k] for o in observations])) for k in observations[0]}
    return batch, np.stack(masks)


@pytest.mark.parametrize("seed", range(12))
def test_node_choice_never_picks_padding_or_masked_nodes(seed):
    rng = np.random.default_rng(seed)
    graphs = [erdos_renyi(int(rng.integers(4, 30)), 2.0, seed + i) for i in range(3)]
    env = MVCEnv(graphs + [erdos_renyi(int(rng.integers(30, 60)), 0.5, seed)])  # extra padding
    torch.manual_seed(seed)
    policy = build_policy("node-choice", ModelConfig(width=16, head_width=16), env.observation_space, env.action_space)
    obs, masks = stacked(env, 6, rng)
    for deterministic in (True, False):
        for _ in range(20):
            actions = policy.get_distribution(obs, action_masks=masks).get_actions(deterministic=deterministic).numpy()
            assert masks[np.arange(len(actions)), actions].all()
    # Without the env's masks the policy still never chooses padding.
    num_nodes = obs["num_nodes"].reshape(-1).numpy()
    for _ in range(20):
        actions = policy.get_distribution(obs).get_actions().numpy()
        assert (actions < num_nodes).all()


@pytest.mark.parametrize("seed", range(6))
def test_node_wise_padding_never_acts(seed):
    rng = np.random.default_rng(seed)
    env = MaxCutEnv([erdos_renyi(int(rng.integers(4, 20)), 2.0, seed), erdos_renyi(40, 2.0, seed)])
    policy = build_policy("node-wise", ModelConfig(width=16, head_width=16), env.observation_space, env.action_space)
    obs, _ = env.reset(seed=seed, options={"graph_index": 0})
    n = int(obs["num_nodes"][0])
    for deterministic in (True, False):
        actions = policy._predict(obs_to_tensors(obs, policy.device), deterministic=deterministic)[0].numpy()
        assert not actions[n:].any()


HEADS = [
    (MISEnv, "node-wise"),
    (MVCEnv, "node-choice"),
    (EpidemicEnv, "graph-level"),
]


@pytest.mark.parametrize(("env_class", "head"), HEADS)
def test_weights_load_strictly_into_a_20x_larger_model(env_class, head):
    small, large = env_class([erdos_renyi(30, 3.0, 0)]), env_class([barabasi_albert(1500, 3, 0)])
    assert head_of(small) == head
    model = ModelConfig(width=16, head_width=16)
    trained = build_policy(head, model, small.observation_space, small.action_space)
    moved = build_policy(head, model, large.observation_space, large.action_space)
    moved.load_state_dict(trained.state_dict(), strict=True)
    for (name, a), (_, b) in zip(trained.named_parameters(), moved.named_parameters(), strict=True):
        assert torch.equal(a, b), name


def test_the_graph_level_policy_is_sb3s_with_an_unchecked_categorical():
    """Same weights, same numbers as SB3's ``MultiInputActorCriticPolicy``; only torch's
    argument checks are gone, and non-finite logits still fail."""
    from stable_baselines3.common.policies import MultiInputActorCriticPolicy

    from graphtransfer.nn import policy_kwargs

    env = EpidemicEnv([erdos_renyi(30, 3.0, 0)])
    model = ModelConfig(width=16, head_width=16)
    ours = build_policy("graph-level", model, env.observation_space, env.action_space)
    sb3 = MultiInputActorCriticPolicy(env.observation_space, env.action_space, lambda _: 0.0, **policy_kwargs("graph-level", model))
    sb3.load_state_dict(ours.state_dict(), strict=True)
    obs, _ = env.reset(seed=0)
    batch = obs_to_tensors(obs, ours.device)
    ours_distribution, sb3_distribution = ours.get_distribution(batch), sb3.get_distribution(batch)
    assert not ours_distribution.distribution._validate_args and sb3_distribution.distribution._validate_args
    torch.testing.assert_close(ours_distribution.distribution.logits, sb3_distribution.distribution.logits, rtol=0, atol=0)
    actions = torch.arange(env.action_space.n)
    torch.testing.assert_close(ours_distribution.log_prob(actions), sb3_distribution.log_prob(actions), rtol=0, atol=0)
    broken = ours.action_dist.proba_distribution(torch.full((1, env.action_space.n), float("nan")))
    with pytest.raises(RuntimeError, match="probability tensor contains"):
        broken.sample()
