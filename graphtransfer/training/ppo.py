"""PPO and MaskablePPO whose update shows where its time goes and can bound how many graph
nodes one backward pass spans.

The update is SB3's, step for step (without a budget, the same weights bit for bit: tested
against SB3's own ``train``), and it also records where its time goes -- rebuilding minibatches
from the rollout buffer, forward, backward, optimizer step -- and the approximate KL of every
epoch, as ``time/update_*_seconds`` and ``train/approx_kl_epoch_<i>`` in progress.csv; a
``report`` callable (the train command's output) hears when ``target_kl`` stops an update early,
and a line per update when it asks for every update.

With ``max_nodes_per_batch`` set, each minibatch is split into groups of observations whose
real nodes sum to at most the budget (an observation larger than the budget is a group of its
own); each group's loss is scaled by its share of the minibatch and backpropagated, and the
optimizer steps once on the accumulated gradient. That is the minibatch's gradient (to float
rounding: tested to 1e-6 on the parameters after an update), with the memory of one group.
Advantages are normalised over the whole minibatch first and the gradient norm is clipped after
accumulation, as SB3 does for the unsplit minibatch; the same ``train/*`` values are logged.

The budget also reaches the policy's :class:`~graphtransfer.nn.GNNExtractor`, so rollout steps
and value bootstraps over many (or large) observations run layer-wise in chunks.

Without a budget, minibatches of more than :data:`UPDATE_GROUP_NODES` real nodes are split the
same way on the CPU (by whole observations only; nothing runs in chunks): the same gradient to
float rounding, and faster, because each group's ``(nodes, width)`` tensors stay small enough to
be reused from the heap and to stay in the caches. On a GPU only a budget splits them
(:func:`update_groups`). Smaller minibatches are SB3's update bit for bit.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBufferSamples
from stable_baselines3 import PPO
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.type_aliases import DictRolloutBufferSamples, Schedule
from stable_baselines3.common.utils import explained_variance

from graphtransfer.training.runtime import RuntimeSettings

UPDATE_GROUP_NODES = 32_768
"""the most real nodes one group of a minibatch spans when no budget is set: on the CPU, groups of
this size train faster than a whole minibatch of 10,000-node observations, in less peak memory
(``bench/training_recipe.py``)."""


GPU_UPDATE_GROUP_NODES = 1 << 21
"""the most real nodes one group of a minibatch spans on a GPU when no budget is set: a minibatch of
8 observations of 148,640 nodes is one group (about twice as fast as groups of :data:`UPDATE_GROUP_NODES`
there, ``bench/gpu.py``), and a group's activations
stay a few GiB at the default width, where a minibatch of 10^6-node observations whole would not"""


def node_budget_groups(num_nodes: list[int], budget: int) -> list[slice]:
    """Consecutive groups of observations whose node counts sum to at most ``budget``; an
    observation above the budget is a group of its own."""
    groups, start, total = [], 0, 0
    for index, nodes in enumerate(num_nodes):
        if index > start and total + nodes > budget:
            groups.append(slice(start, index))
            start, total = index, 0
        total += nodes
    groups.append(slice(start, len(num_nodes)))
    return groups


Samples = TypeVar("Samples", DictRolloutBufferSamples, MaskableDictRolloutBufferSamples)
"""SB3's rollout samples of Dict observations, with action masks for MaskablePPO"""


def update_groups(samples: Samples, max_nodes_per_batch: int | None) -> list[slice]:
    """The groups an update backpropagates ``samples`` in. On the CPU at most the node budget and
    at most :data:`UPDATE_GROUP_NODES` real nodes (see the module). On a GPU the node budget, or
    without one :data:`GPU_UPDATE_GROUP_NODES`: the CPU's reason (tensors that stay in its caches)
    does not hold there, and each group is a sequence of kernel launches the GPU waits for (at
    148,640 nodes, minibatches of 8 were 8 groups)."""
    if samples.advantages.device.type != "cpu":
        budget = max_nodes_per_batch or GPU_UPDATE_GROUP_NODES
    else:
        budget = min(max_nodes_per_batch or UPDATE_GROUP_NODES, UPDATE_GROUP_NODES)
    return node_budget_groups(samples.observations["num_nodes"].reshape(-1).long().tolist(), budget)


def take(samples: Samples, rows: slice) -> Samples:
    """The rows ``rows`` of every field of SB3's rollout samples (observation dicts key by key)."""
    fields = [None if f is None else {k: v[rows] for k, v in f.items()} if isinstance(f, dict) else f[rows] for f in samples]
    return type(samples)._make(fields)


def scheduled(setting: float | Schedule, progress_remaining: float) -> float:
    """A PPO setting at this point of the run: SB3 makes each a schedule when it sets the model up,
    but types the attribute as the constructor's argument (a number or a schedule)."""
    return setting(progress_remaining) if callable(setting) else setting


class TermSums:
    """Share-weighted sums of the loss terms an update logs, over the groups of one minibatch, kept
    where the terms are until read: one copy to the host per minibatch. A copy per group and term
    (six per group) made the host wait for a GPU at each, and the GPU for the host's next launches."""

    def __init__(self, names: tuple[str, ...]):
        self.sums: dict[str, torch.Tensor | float] = dict.fromkeys(names, 0.0)

    def add(self, share: float, terms: dict[str, torch.Tensor]) -> None:
        for name in self.sums:
            self.sums[name] = self.sums[name] + share * terms[name].detach().double()

    def read(self) -> dict[str, float]:
        values = torch.stack([torch.as_tensor(value, dtype=torch.float64) for value in self.sums.values()]).tolist()
        return dict(zip(self.sums, values, strict=True))


LOGGED_TERMS = ("loss", "policy_gradient_loss", "value_loss", "entropy_loss", "clip_fraction", "approx_kl")
"""the values of a minibatch's loss that the update logs, as SB3 does"""

UPDATE_PHASES = ("sample", "forward", "backward", "step")
"""where an update's time goes: rebuilding minibatches, the loss's forward, backward, the optimizer step"""


class UpdateClock:
    """Seconds per update phase, summed over one update."""

    def __init__(self):
        self.seconds = dict.fromkeys(UPDATE_PHASES, 0.0)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - started

    def timed(self, minibatches) -> Iterator:
        """``minibatches`` with the time to produce each one charged to ``sample``."""
        iterator = iter(minibatches)
        while True:
            with self.phase("sample"):
                item = next(iterator, None)
            if item is None:
                return
            yield item


class NodeBudgetUpdate(RuntimeSettings, OnPolicyAlgorithm):
    """The timed, optionally split-and-accumulate update, mixed into SB3's PPO or sb3-contrib's MaskablePPO."""

    # PPO's settings, set by the PPO class it is mixed into
    n_epochs: int
    batch_size: int | None
    clip_range: float | Schedule
    clip_range_vf: float | Schedule | None
    normalize_advantage: bool
    target_kl: float | None

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.update_seconds = dict.fromkeys(UPDATE_PHASES, 0.0)  # summed over the run
        self.update_deadline: float | None = None
        """a ``time.perf_counter()`` reading after which an update takes no further minibatch (a time budget)"""

    def _evaluate(self, samples, actions: torch.Tensor):
        return self.policy.evaluate_actions(samples.observations, actions)

    def train(self) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        clip_range = scheduled(self.clip_range, self._current_progress_remaining)
        clip_range_vf = None if self.clip_range_vf is None else scheduled(self.clip_range_vf, self._current_progress_remaining)
        logged: dict[str, list[float]] = {"entropy_loss": [], "policy_gradient_loss": [], "value_loss": [], "clip_fraction": []}
        clock, epoch_kl, stopped = UpdateClock(), [], None
        continue_training, loss = True, 0.0
        for epoch in range(self.n_epochs):
            approx_kl_divs = []
            for samples in clock.timed(self.rollout_buffer.get(self.batch_size)):
                self.policy.optimizer.zero_grad()
                terms = self._accumulate_minibatch(samples, clip_range, clip_range_vf, clock)
                for name in logged:
                    logged[name].append(terms[name])
                loss = terms["loss"]
                approx_kl_divs.append(terms["approx_kl"])
                if self.target_kl is not None and terms["approx_kl"] > 1.5 * self.target_kl:
                    continue_training = False  # as SB3: this minibatch's step is not taken
                    stopped = (epoch, terms["approx_kl"])
                    break
                with clock.phase("step"):
                    torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
                    self.policy.optimizer.step()
                if self.update_deadline is not None and time.perf_counter() >= self.update_deadline:
                    continue_training = False  # out of time: the steps taken so far stand, as with target_kl
                    break
            epoch_kl.append(float(np.mean(approx_kl_divs)))
            self._n_updates += 1
            if not continue_training:
                break
        self._log_update(logged, approx_kl_divs, loss, clip_range, clip_range_vf)
        self._log_where_time_went(clock, epoch_kl, stopped)

    def _log_where_time_went(self, clock: UpdateClock, epoch_kl: list[float], stopped: tuple[int, float] | None) -> None:
        """progress.csv gets the update's phase seconds and each epoch's KL; ``report`` hears of an early stop."""
        for name, seconds in clock.seconds.items():
            self.update_seconds[name] += seconds
            self.logger.record(f"time/update_{name}_seconds", round(seconds, 4))
        for epoch, kl in enumerate(epoch_kl, 1):
            self.logger.record(f"train/approx_kl_epoch_{epoch}", kl)
        if self.report is None or not (stopped or self.report_every_update):
            return
        kls = ", ".join(f"{kl:.4f}" for kl in epoch_kl)
        phases = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in clock.seconds.items())
        line = f"update at step {self.num_timesteps}: approx_kl by epoch {kls}; {phases}"
        if stopped:
            epoch, kl = stopped
            line += f"; stopped early in epoch {epoch + 1} of {self.n_epochs}: approx_kl {kl:.4f} > 1.5 x target_kl {self.target_kl}"
        self.report(line)

    def _accumulate_minibatch(self, samples, clip_range: float, clip_range_vf: float | None, clock: UpdateClock) -> dict[str, float]:
        """Backpropagate the minibatch's PPO loss group by group (one group when its real nodes
        fit the node budget, or :data:`UPDATE_GROUP_NODES` without one); return its logged terms."""
        advantages = samples.advantages
        if self.normalize_advantage and len(advantages) > 1:  # over the whole minibatch, before splitting
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        samples = samples._replace(advantages=advantages)
        size = len(advantages)
        groups = update_groups(samples, self.max_nodes_per_batch)
        sums = TermSums(LOGGED_TERMS)
        for rows in groups:
            group = samples if len(groups) == 1 else take(samples, rows)
            share = (rows.stop - rows.start) / size  # each term is a mean: a group weighs its share
            with clock.phase("forward"):
                terms = self._group_loss(group, clip_range, clip_range_vf)
            with clock.phase("backward"):
                (terms["loss"] if len(groups) == 1 else share * terms["loss"]).backward()
            sums.add(share, terms)
        return sums.read()

    def _group_loss(self, group, clip_range: float, clip_range_vf: float | None) -> dict[str, torch.Tensor]:
        """PPO's clipped loss on one group, with the values SB3 logs (means over the group)."""
        actions = group.actions.long().flatten() if isinstance(self.action_space, spaces.Discrete) else group.actions
        values, log_prob, entropy = self._evaluate(group, actions)
        values = values.flatten()
        ratio = torch.exp(log_prob - group.old_log_prob)
        surrogate = torch.min(group.advantages * ratio, group.advantages * torch.clamp(ratio, 1 - clip_range, 1 + clip_range))
        policy_loss = -surrogate.mean()
        if clip_range_vf is not None:
            values = group.old_values + torch.clamp(values - group.old_values, -clip_range_vf, clip_range_vf)
        value_loss = F.mse_loss(group.returns, values)
        entropy_loss = -torch.mean(-log_prob) if entropy is None else -torch.mean(entropy)
        with torch.no_grad():
            log_ratio = log_prob - group.old_log_prob
            approx_kl = torch.mean((torch.exp(log_ratio) - 1) - log_ratio)
            clip_fraction = torch.mean((torch.abs(ratio - 1) > clip_range).float())
        return {
            "loss": policy_loss + self.ent_coef * entropy_loss + self.vf_coef * value_loss,
            "policy_gradient_loss": policy_loss.detach(),
            "value_loss": value_loss.detach(),
            "entropy_loss": entropy_loss.detach(),
            "clip_fraction": clip_fraction,
            "approx_kl": approx_kl,
        }

    def _log_update(self, logged: dict[str, list[float]], approx_kl_divs: list[float], loss: float, clip_range, clip_range_vf) -> None:
        """The keys and values SB3's ``PPO.train`` records."""
        for name, values in logged.items():
            self.logger.record(f"train/{name}", np.mean(values))
        self.logger.record("train/approx_kl", np.mean(approx_kl_divs))
        self.logger.record("train/loss", loss)
        buffer = self.rollout_buffer
        self.logger.record("train/explained_variance", explained_variance(buffer.values.flatten(), buffer.returns.flatten()))
        if hasattr(self.policy, "log_std"):
            self.logger.record("train/std", torch.exp(self.policy.log_std).mean().item())
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/clip_range", clip_range)
        if clip_range_vf is not None:
            self.logger.record("train/clip_range_vf", clip_range_vf)


class BudgetPPO(NodeBudgetUpdate, PPO):  # type: ignore[misc]  # SB3's PPO types batch_size int, MaskablePPO's takes None
    """SB3's PPO with an optional node budget (``max_nodes_per_batch``) for its update."""

    algorithm_name = "PPO"  # what the user is told runs: the update is PPO's


class BudgetMaskablePPO(NodeBudgetUpdate, MaskablePPO):
    """sb3-contrib's MaskablePPO with an optional node budget for its update; masks are split
    with the observations."""

    algorithm_name = "MaskablePPO"

    def _evaluate(self, samples, actions: torch.Tensor):
        return self.policy.evaluate_actions(samples.observations, actions, action_masks=samples.action_masks)
