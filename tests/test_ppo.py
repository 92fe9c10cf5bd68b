"""The node-budget PPO update: split minibatches, accumulated gradients, the same update."""

import copy

import numpy as np
import pytest
import torch
from stable_baselines3.common.callbacks import BaseCallback

from graphtransfer.config import ModelConfig, PPOConfig, RunConfig, Runtime
from graphtransfer.graphs import load_graphs
from graphtransfer.training.model import make_model
from graphtransfer.training.ppo import BudgetMaskablePPO, BudgetPPO, node_budget_groups


class KeepRollout(BaseCallback):
    """Keeps a copy of everything the first update starts from: weights, Adam, buffer, RNGs."""

    def _on_rollout_end(self) -> None:
        model = self.model
        self.state = copy.deepcopy(
            (
                model.policy.state_dict(),
                model.policy.optimizer.state_dict(),
                model.rollout_buffer,
                np.random.get_state(),
                torch.get_rng_state(),
            )
        )

    def _on_step(self) -> bool:
        return True

    def restore(self, model) -> None:
        weights, adam, buffer, numpy_rng, torch_rng = copy.deepcopy(self.state)
        model.policy.load_state_dict(weights)
        model.policy.optimizer.load_state_dict(adam)
        model.rollout_buffer = buffer
        np.random.set_state(numpy_rng)
        torch.set_rng_state(torch_rng)


def batch_sizes_seen(policy) -> list[int]:
    """Record the number of observations of every evaluate_actions call."""
    seen, evaluate = [], policy.evaluate_actions

    def spy(obs, *args, **kwargs):
        seen.append(int(obs["num_nodes"].shape[0]))
        return evaluate(obs, *args, **kwargs)

    policy.evaluate_actions = spy
    return seen


def after_one_rollout(task: str, head: str):
    """A small model of the task on 6 training graphs, one rollout of 32 steps learned, and the
    kept state its first update started from (minibatches of 16, 2 epochs)."""
    config = RunConfig(
        task=task,
        graphs="small",
        head=head,
        model=ModelConfig(width=16, head_width=16, num_layers=2),
        ppo=PPOConfig(n_envs=2, n_steps=16, batch_size=16, n_epochs=2, target_kl=None, seed=3),
        runtime=Runtime(device="cpu"),
    )
    model = make_model(config, load_graphs("small")[:6], 3)
    keep = KeepRollout()
    model.learn(32, callback=keep)
    return model, keep


def test_groups_hold_the_budget_and_a_large_observation_alone():
    assert node_budget_groups([30, 40, 50, 10, 200, 5], 100) == [slice(0, 2), slice(2, 4), slice(4, 5), slice(5, 6)]
    assert node_budget_groups([7], 3) == [slice(0, 1)]


@pytest.mark.parametrize(("task", "head", "algorithm"), [("mis", "node-wise", BudgetPPO), ("mvc", "node-choice", BudgetMaskablePPO)])
@pytest.mark.parametrize("budget", [150, 25])
def test_split_update_equals_the_unsplit_update(task, head, algorithm, budget):
    """One rollout, two updates from the same state: SB3's, and split by a node budget.

    The 20-60-node training graphs in minibatches of 16 observations: budget 150 groups a few
    observations; budget 25 puts each alone and runs the larger ones layer-wise in chunks.
    """
    model, keep = after_one_rollout(task, head)
    assert type(model) is algorithm and model.max_nodes_per_batch is None
    unsplit = {name: p.detach().clone() for name, p in model.policy.named_parameters()}
    logged = {k: v for k, v in model.logger.name_to_value.items() if k.startswith("train/")}

    keep.restore(model)
    model.set_max_nodes_per_batch(budget)
    seen = batch_sizes_seen(model.policy)
    model.train()
    assert len(seen) > 4 and max(seen) < 16  # 2 epochs x 2 minibatches of 16, each split
    for name, parameter in model.policy.named_parameters():
        assert torch.allclose(parameter, unsplit[name], atol=1e-6, rtol=0), name
    assert not all(torch.equal(p, keep.state[0][n]) for n, p in model.policy.named_parameters())  # it did update
    split_logged = {k: v for k, v in model.logger.name_to_value.items() if k.startswith("train/")}
    assert split_logged.keys() == logged.keys()
    for key, value in logged.items():
        expected = value + (2 if key == "train/n_updates" else 0)  # the second train() counts on
        assert split_logged[key] == pytest.approx(expected, abs=1e-6), key


@pytest.mark.parametrize(("task", "head"), [("mis", "node-wise"), ("mvc", "node-choice")])
def test_without_a_budget_large_minibatches_run_in_groups_with_the_same_update(task, head, monkeypatch):
    """Minibatches above UPDATE_GROUP_NODES real nodes split by whole observations with no
    budget set (nothing runs in chunks): the whole minibatch's update to 1e-6."""
    from graphtransfer.training import ppo

    model, keep = after_one_rollout(task, head)
    whole = {name: p.detach().clone() for name, p in model.policy.named_parameters()}
    monkeypatch.setattr(ppo, "UPDATE_GROUP_NODES", 120)  # 2-6 of the 20-60-node observations per group
    seen = batch_sizes_seen(model.policy)
    grouped = train_from(model, keep)
    assert model.max_nodes_per_batch is None and len(seen) > 8 and 1 < max(seen) < 16
    assert model.policy.features_extractor.max_nodes_per_batch is None  # no layer-wise chunks
    for name, parameter in grouped.items():
        assert torch.allclose(parameter, whole[name], atol=1e-6, rtol=0), name
    assert not all(torch.equal(p, keep.state[0][n]) for n, p in grouped.items())  # it did update


def test_on_a_gpu_a_minibatch_splits_into_far_larger_groups():
    """The CPU's groups of UPDATE_GROUP_NODES (kept in its caches) are one group on a GPU up to
    GPU_UPDATE_GROUP_NODES, each group being launches the device waits for; a budget still
    splits. ("meta" tensors stand for a GPU's: the rule reads only where the samples are.)"""
    from stable_baselines3.common.type_aliases import DictRolloutBufferSamples

    from graphtransfer.training.ppo import GPU_UPDATE_GROUP_NODES, UPDATE_GROUP_NODES, update_groups

    def samples(device: str, nodes: float = 148_640.0) -> DictRolloutBufferSamples:
        counts = torch.full((8, 1), nodes)  # on the host even for "meta": the split reads them
        rows = torch.zeros(8, device=device)
        return DictRolloutBufferSamples({"num_nodes": counts}, rows, rows, rows, rows, rows)

    assert 148_640 > UPDATE_GROUP_NODES
    assert update_groups(samples("cpu"), None) == [slice(i, i + 1) for i in range(8)]
    assert update_groups(samples("meta"), None) == [slice(0, 8)]
    assert update_groups(samples("cpu"), 300_000) == [slice(i, i + 1) for i in range(8)]  # the CPU's cap holds
    assert update_groups(samples("meta"), 300_000) == [slice(i, i + 2) for i in range(0, 8, 2)]  # the budget alone
    assert 2 * 10**6 <= GPU_UPDATE_GROUP_NODES < 3 * 10**6  # 10^6-node observations: two to a group on a GPU
    assert update_groups(samples("meta", 1e6), None) == [slice(i, i + 2) for i in range(0, 8, 2)]


@pytest.mark.parametrize(("task", "head", "sb3_class"), [("mis", "node-wise", "PPO"), ("mvc", "node-choice", "MaskablePPO")])
def test_the_timed_update_is_sb3s_update_bit_for_bit(task, head, sb3_class):
    """Without a budget, our update (timed, KL per epoch) gives SB3's own train()'s weights exactly."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import PPO

    model, keep = after_one_rollout(task, head)
    ours = {name: p.detach().clone() for name, p in model.policy.named_parameters()}
    assert model.logger.name_to_value["time/update_forward_seconds"] > 0
    assert {"train/approx_kl_epoch_1", "train/approx_kl_epoch_2"} <= set(model.logger.name_to_value)
    keep.restore(model)
    {"PPO": PPO, "MaskablePPO": MaskablePPO}[sb3_class].train(model)
    for name, parameter in model.policy.named_parameters():
        assert torch.equal(parameter, ours[name]), name


def test_an_early_stop_by_target_kl_is_reported():
    config = RunConfig(
        task="mis",
        graphs="small",
        head="node-wise",
        model=ModelConfig(width=16, head_width=16, num_layers=2),
        ppo=PPOConfig(n_envs=2, n_steps=16, batch_size=8, n_epochs=8, target_kl=1e-9, seed=3, learning_rate=0.01),
        runtime=Runtime(device="cpu"),
    )
    model = make_model(config, load_graphs("small")[:6], 3)
    lines = []
    model.report = lines.append
    model.learn(64)
    assert lines and all("stopped early in epoch" in line and "> 1.5 x target_kl 1e-09" in line for line in lines)


def train_from(model, keep: KeepRollout) -> dict[str, torch.Tensor]:
    """The weights one update from the kept rollout gives."""
    keep.restore(model)
    model.train()
    return {name: p.detach().clone() for name, p in model.policy.named_parameters()}


@pytest.mark.parametrize(
    ("task", "env", "head"),
    [("mis", None, "node-wise"), ("mvc", None, "node-choice"), (None, "examples.seed_scale:SignalEnv", "graph-level")],
)
def test_the_structure_path_update_equals_the_gather_path_update(task, env, head, monkeypatch):
    """The update over cached structures (one static graph: SignalEnv) or structures of the
    disjoint union (residual graphs: MIS, MVC) gives PyG's gather/scatter update's weights."""
    from graphtransfer.graphs import erdos_renyi
    from graphtransfer.nn import extractor

    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parents[1]))
    config = RunConfig(
        task=task,
        env=env,
        head=head,
        model=ModelConfig(width=16, head_width=16, num_layers=2),
        ppo=PPOConfig(n_envs=2, n_steps=16, batch_size=16, n_epochs=2, target_kl=None, seed=3),
        runtime=Runtime(device="cpu"),
    )
    graphs = [erdos_renyi(300, 4.0, 1)] if env else load_graphs("small")[:6]
    model = make_model(config, graphs, 3)
    keep = KeepRollout()
    model.learn(32, callback=keep)
    monkeypatch.setattr(extractor, "CSR_MIN_EDGES", 1 << 40)
    gathered = train_from(model, keep)
    monkeypatch.setattr(extractor, "CSR_MIN_EDGES", 1)
    structured = train_from(model, keep)
    for name, parameter in structured.items():
        assert torch.allclose(parameter, gathered[name], atol=1e-5, rtol=0), name
    assert not all(torch.equal(p, keep.state[0][n]) for n, p in structured.items())  # it did update
    if env:  # every step and minibatch of the static graph found one cached structure
        assert len(model.policy.features_extractor._structures) == 1
