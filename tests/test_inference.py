"""The tensor-native inference path and integer exactness of node indices."""

import numpy as np
import pytest
import torch
from stable_baselines3 import PPO
from torch_geometric.data import Batch, Data

from graphtransfer.config import ModelConfig
from graphtransfer.graphs import erdos_renyi
from graphtransfer.nn import build_policy, policy_kwargs, to_disjoint
from graphtransfer.solve.inference import act, objective_text, obs_to_tensors, pyg_to_padded
from graphtransfer.tasks import MISEnv, MVCEnv


def test_act_on_tensors_equals_sb3_predict_on_numpy():
    env = MISEnv([erdos_renyi(50, 4.0, 0)])
    model = PPO(
        build_policy("node-wise", ModelConfig(), env.observation_space, env.action_space).__class__,
        env,
        policy_kwargs=policy_kwargs("node-wise", ModelConfig()),
        n_steps=16,
        batch_size=16,
        seed=0,
    )
    obs, _ = env.reset(seed=1)
    expected, _ = model.predict(obs, deterministic=True)
    got = act(model.policy, obs_to_tensors(obs, model.policy.device), deterministic=True)
    assert np.array_equal(got[0].cpu().numpy(), expected)  # the policy is on CUDA where torch sees a GPU


def test_pyg_batch_becomes_the_same_padded_batch_the_env_gives():
    graphs = [erdos_renyi(n, 3.0, n) for n in (7, 12, 5)]
    env = MISEnv(graphs)
    observations = [env.reset(seed=0, options={"graph_index": i})[0] for i in range(3)]
    batch = Batch.from_data_list(
        [
            Data(x=torch.from_numpy(o["x"][: g.num_nodes]), edge_index=torch.from_numpy(o["edge_index"][:, : int(o["num_edges"][0])]))
            for o, g in zip(observations, graphs, strict=True)
        ]
    )
    padded = pyg_to_padded(batch)
    stacked = {k: torch.as_tensor(np.stack([o[k] for o in observations])) for k in observations[0]}
    for key in ("x", "edge_index"):
        merged, expected = to_disjoint(padded), to_disjoint(stacked)
        assert torch.equal(merged.x, expected.x) and torch.equal(merged.edge_index, expected.edge_index), key


def test_act_takes_a_single_pyg_graph_and_returns_one_action_per_node():
    env = MISEnv([erdos_renyi(30, 3.0, 1)])
    policy = build_policy("node-wise", ModelConfig(), env.observation_space, env.action_space)
    obs, _ = env.reset(seed=0)
    data = Data(x=torch.from_numpy(obs["x"]), edge_index=torch.from_numpy(obs["edge_index"]))
    actions = act(policy, data, deterministic=True)
    assert actions.shape == (30,)
    assert torch.equal(actions, act(policy, obs_to_tensors(obs, policy.device), deterministic=True)[0])


def test_act_refuses_tensors_on_another_device():
    env = MVCEnv([erdos_renyi(10, 3.0, 0)])
    policy = build_policy("node-choice", ModelConfig(), env.observation_space, env.action_space)
    obs = obs_to_tensors(env.reset(seed=0)[0], torch.device("meta"))
    with pytest.raises(ValueError, match="on meta, the policy on cpu; move them"):
        act(policy, obs)


def test_node_indices_stay_exact_beyond_2_to_the_24():
    """Two graphs whose offsets push node ids past 2^24, where float32 stops counting by one."""
    big = 2**24 + 3
    obs = {
        "x": torch.zeros((2, big, 1)),
        "edge_index": torch.tensor([[[0, big - 1], [big - 1, 0]], [[1, 2], [2, 1]]]),
        "num_nodes": torch.tensor([[big], [3]]),
        "num_edges": torch.tensor([[2], [2]]),
    }
    merged = to_disjoint(obs)
    assert merged.edge_index.dtype == torch.int64
    assert merged.edge_index[:, 2:].tolist() == [[big + 1, big + 2], [big + 2, big + 1]]
    assert float(torch.tensor(big + 2, dtype=torch.float32)) != big + 2  # what a float32 path would lose


@pytest.mark.parametrize("decoding", ["drawn", "local-max-sampled"])
def test_a_solve_repeats_for_its_seed_and_leaves_the_callers_random_state_alone(decoding):
    """solve seeds what it samples from its own seed, and torch's global generator is the
    caller's again afterwards: a user's training loop that calls predict is not reseeded."""
    from graphtransfer.solve.inference import solve

    graph = erdos_renyi(150, 6.0, seed=3)
    env = MISEnv([graph], horizon=MISEnv.inference_horizon)
    policy = build_policy("node-wise", ModelConfig(), env.observation_space, env.action_space)
    torch.manual_seed(1234)
    before = torch.get_rng_state()
    first = solve(policy, env, seed=5, decoding=decoding)
    assert torch.equal(torch.get_rng_state(), before)
    torch.manual_seed(99)  # another caller state: the same seed still gives the same set
    again = solve(policy, env, seed=5, decoding=decoding)
    assert np.array_equal(first.solution, again.solution)


def test_an_objective_reads_in_full_when_whole():
    assert objective_text(3_458_476.0) == "3458476"  # a 10^7-node graph's set, not 3.45848e+06
    assert objective_text(12.5) == "12.5"
    assert objective_text(1 / 3) == "0.333333"
