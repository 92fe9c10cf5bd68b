"""The plain-SB3 recipes of docs/plain-sb3.md, run as a user copies them: a policy class passed
to PPO / MaskablePPO, trained on the small sample graphs, its state_dict loaded into a model for
a 10x larger env, predict on both."""

import re
from pathlib import Path

import numpy as np
import pytest
from gymnasium import spaces

from graphtransfer.graphs import erdos_renyi, load_graphs
from graphtransfer.nn import GraphPolicy, NodeChoicePolicy, NodePolicy, policy_for
from graphtransfer.tasks import EpidemicEnv, MISEnv, MVCEnv

PAGE = Path(__file__).parents[1] / "docs" / "plain-sb3.md"


def run_block(name: str, tmp_path, monkeypatch) -> dict:
    block = re.search(rf"<!-- {name} -->\n```python\n(.*?)```", PAGE.read_text(), re.S)
    assert block, f"docs/plain-sb3.md lost its {name} block"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(block.group(1), f"plain-sb3 {name}", "exec"), namespace)
    return namespace


def same_weights(namespace: dict) -> bool:
    small, large = namespace["small"].policy.state_dict(), namespace["large"].policy.state_dict()
    return small.keys() == large.keys() and all(np.array_equal(small[k].numpy(), large[k].numpy()) for k in small)


def test_node_wise_recipe_moves_the_weights_to_a_10x_larger_env(tmp_path, monkeypatch):
    namespace = run_block("plain-node-wise", tmp_path, monkeypatch)
    assert same_weights(namespace)
    assert namespace["large_env"].max_nodes >= 10 * namespace["small_env"].max_nodes
    assert namespace["action"].shape == (namespace["large_env"].max_nodes,)
    small_obs = namespace["small_env"].reset(seed=0)[0]
    assert namespace["small"].predict(small_obs, deterministic=True)[0].shape == (namespace["small_env"].max_nodes,)


def test_node_choice_recipe_picks_an_allowed_node_of_the_larger_graph(tmp_path, monkeypatch):
    namespace = run_block("plain-node-choice", tmp_path, monkeypatch)
    assert same_weights(namespace)
    action = int(namespace["action"])
    assert action < 600 and namespace["large_env"].action_masks()[action]  # a real, uncovered node of the larger graph


def test_graph_level_policy_needs_no_policy_kwargs(tmp_path):
    small_env, large_env = EpidemicEnv(load_graphs("small")), EpidemicEnv([erdos_renyi(600, 4.0, seed=1)])
    from stable_baselines3 import PPO

    small = PPO(GraphPolicy, small_env, n_steps=32, batch_size=32)
    small.learn(32)
    large = PPO(GraphPolicy, large_env, n_steps=32, batch_size=32)
    large.policy.load_state_dict(small.policy.state_dict())
    assert int(large.predict(large_env.reset(seed=0)[0], deterministic=True)[0]) in range(large_env.action_space.n)


def test_sb3s_own_multi_input_policy_is_what_fails_for_node_actions():
    """The failure the classes exist for, so that the docs' claim stays true."""
    from stable_baselines3 import PPO

    from graphtransfer.nn import GNNExtractor

    kwargs = {"features_extractor_class": GNNExtractor}
    small = PPO("MultiInputPolicy", MISEnv(load_graphs("small")), n_steps=32, batch_size=32, policy_kwargs=kwargs)
    large = PPO("MultiInputPolicy", MISEnv([erdos_renyi(600, 4.0, seed=1)]), n_steps=32, batch_size=32, policy_kwargs=kwargs)
    with pytest.raises(RuntimeError, match="size mismatch for action_net.weight"):
        large.policy.load_state_dict(small.policy.state_dict())


@pytest.mark.parametrize(
    ("env", "expected"),
    [(MISEnv, NodePolicy), (MVCEnv, NodeChoicePolicy), (EpidemicEnv, GraphPolicy)],
)
def test_policy_for_picks_the_class_of_the_envs_head(env, expected):
    built = env(load_graphs("small"))
    assert policy_for(built) is expected
    assert isinstance(built.action_space, (spaces.Discrete, spaces.MultiDiscrete))
