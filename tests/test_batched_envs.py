"""Every built-in task's batch gives the episodes of its single envs: K envs stepped one by one
(``DummyVecEnv`` around ``Monitor``) and as one batch (:class:`BatchedVecEnv`), seeded alike and
given the same actions, hand back bit-identical observations, rewards, dones, infos and masks; and
MaskablePPO learns on a node-choice task's batch weight for weight as on its envs one by one.

Stricter than :func:`~graphtransfer.training.batched_vec_env.first_difference`, which a user's batch
is checked with: dtypes too, the masks before every step, and now and then an action off the mask,
which a choice env takes as a step of its own."""

import dataclasses

import numpy as np
import pytest
import torch
from gymnasium import spaces
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

from graphtransfer.config import ModelConfig, PPOConfig, RunConfig, Runtime
from graphtransfer.envs.protocol import Head
from graphtransfer.graphs import Graph, erdos_renyi
from graphtransfer.tasks import TASKS
from graphtransfer.tasks.factory import make_env
from graphtransfer.training.batched_vec_env import BatchedVecEnv, batched
from graphtransfer.training.model import make_model

ENVS, SEED, STEPS = 5, 3, 60


def with_own_weights(graph: Graph) -> Graph:
    """``graph`` with edge weights of its own, as a file gives them (float64, the same both ways)."""
    low, high = np.sort(graph.edge_index, axis=0)
    return dataclasses.replace(graph, edge_weight=1.0 + (low * 31 + high * 17) % 13 / 3.7)


GRAPHS = [erdos_renyi(n, 3.0, seed) for seed, n in enumerate([20, 35, 50, 12])]
GRAPHS[1] = with_own_weights(GRAPHS[1])
"""graphs of different sizes, so the episodes pad their slots differently; one with its own
weights (float64) among hashed ones (float32), which the weighted tasks divide and sum in each's dtype"""
HORIZON = 8
"""short enough that some episodes are cut at it (truncated), long enough that others end"""


def random_actions(vec_env, rng: np.random.Generator) -> np.ndarray:
    """The envs' next actions, drawn as a policy of the task's head would give them: a value below
    ``num_actions`` per node or edge, a node the masks allow (now and then any slot, which a choice
    env must take as a step too), or one of a graph-level env's actions."""
    space = vec_env.action_space
    head = vec_env.get_attr("head")[0]
    if head == Head.NODE_CHOICE:
        masks = np.stack(vec_env.env_method("action_masks"))
        allowed = [rng.choice(np.flatnonzero(row)) if row.any() and rng.random() < 0.9 else rng.integers(space.n) for row in masks]
        return np.array(allowed, dtype=np.int64)
    if isinstance(space, spaces.MultiDiscrete):
        return rng.integers(0, space.nvec, (vec_env.num_envs, space.nvec.size))
    return rng.integers(0, space.n, vec_env.num_envs)


def assert_same_observation(single: dict, batch: dict, where: str) -> None:
    assert single.keys() == batch.keys(), where
    for key in single:
        assert single[key].dtype == batch[key].dtype, f"{where}: {key}"
        np.testing.assert_array_equal(single[key], batch[key], err_msg=f"{where}: {key}", strict=True)


def assert_same_infos(single: list[dict], batch: list[dict], where: str) -> None:
    for index, (one, other) in enumerate(zip(single, batch, strict=True)):
        assert one.get("TimeLimit.truncated") == other.get("TimeLimit.truncated"), f"{where}, env {index}"
        assert ("terminal_observation" in one) == ("terminal_observation" in other), f"{where}, env {index}"
        if "terminal_observation" in one:
            assert_same_observation(one["terminal_observation"], other["terminal_observation"], f"{where}, env {index}, terminal")
        if "episode" in one:
            assert (one["episode"]["r"], one["episode"]["l"]) == (other["episode"]["r"], other["episode"]["l"]), f"{where}, env {index}"


@pytest.mark.parametrize("task", sorted(TASKS))
def test_the_batch_gives_the_episodes_of_the_single_envs(task):
    def build():
        return make_env(task, None, {}, GRAPHS, HORIZON)

    probe = build()
    assert batched(probe), f"{task}: its env class declares no `batched`; every built-in task trains on a batch"
    single = make_vec_env(build, n_envs=ENVS, seed=SEED, vec_env_cls=DummyVecEnv)
    batch = BatchedVecEnv([probe, *(build() for _ in range(ENVS - 1))])
    batch.seed(SEED)
    assert_same_observation(single.reset(), batch.reset(), "reset")
    rng = np.random.default_rng(0)
    ended = truncated = 0
    for step in range(STEPS):
        if single.get_attr("head")[0] == Head.NODE_CHOICE:
            np.testing.assert_array_equal(np.stack(single.env_method("action_masks")), np.stack(batch.env_method("action_masks")))
        actions = random_actions(single, rng)
        obs, rewards, dones, infos = single.step(actions)
        batch_obs, batch_rewards, batch_dones, batch_infos = batch.step(actions)
        where = f"{task}, step {step}"
        assert_same_observation(obs, batch_obs, where)
        np.testing.assert_array_equal(rewards, batch_rewards, err_msg=where, strict=True)
        np.testing.assert_array_equal(dones, batch_dones, err_msg=where, strict=True)
        assert_same_infos(infos, batch_infos, where)
        ended += sum(done and not info["TimeLimit.truncated"] for done, info in zip(dones, infos, strict=True))
        truncated += sum(info["TimeLimit.truncated"] for info in infos)
    assert ended + truncated > ENVS, f"{task}: the steps crossed too few episode ends ({ended} ended, {truncated} cut)"


NODE_CHOICE = sorted(name for name, task in TASKS.items() if task.env.head == Head.NODE_CHOICE)


def trained_weights(task: str, vec_env: str) -> dict[str, torch.Tensor]:
    """The policy's weights after a tiny MaskablePPO run of ``task`` on envs stepped as ``vec_env`` says."""
    config = RunConfig(
        task=task,
        head="node-choice",
        model=ModelConfig(width=8, head_width=8, num_layers=1),
        ppo=PPOConfig(n_envs=4, n_steps=16, batch_size=32, n_epochs=1, seed=0),
        runtime=Runtime(threads=1, device="cpu", vec_env=vec_env),
    )
    model = make_model(config, GRAPHS, seed=0)
    assert type(model).__name__ == "BudgetMaskablePPO"
    assert isinstance(model.get_env(), BatchedVecEnv) == (vec_env == "batched")
    model.learn(128)
    return model.policy.state_dict()


@pytest.mark.parametrize("task", NODE_CHOICE)
def test_maskable_ppo_learns_on_a_batch_of_node_choice_episodes_as_on_the_envs_one_by_one(task):
    together, one_by_one = trained_weights(task, "batched"), trained_weights(task, "dummy")
    assert together.keys() == one_by_one.keys()
    for name, tensor in together.items():
        assert torch.equal(tensor, one_by_one[name]), name
