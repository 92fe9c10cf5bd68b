"""Training a GNN policy with Stable-Baselines3's PPO (MaskablePPO for node choice) on small graphs.

Ctrl-C stops a run between env steps and saves a resumable checkpoint; :func:`resume` continues it
to the same budget. With the same seed, ``threads=1`` and the CPU, a run repeats bit for bit.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv

from graphtransfer.buffers import CompactDictRolloutBuffer, CompactMaskableDictRolloutBuffer, estimate_rollout_bytes
from graphtransfer.checkpoint import CONFIG, check_fits, load_optimizer_state, load_strict, read_checkpoint, save_checkpoint
from graphtransfer.config import PPOConfig, RunConfig
from graphtransfer.envs.factory import head_of, make_env
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, load_graphs
from graphtransfer.nn import POLICIES, policy_kwargs


@dataclass
class TrainResult:
    folder: Path
    steps: int
    seconds: float
    rollout_seconds: float
    update_seconds: float
    budget: int
    interrupted: bool = False
    """stopped by Ctrl-C before the budget; the folder then holds a checkpoint to resume"""

    @property
    def steps_per_second(self) -> float:
        return self.steps / max(self.seconds, 1e-9)


class PhaseTimer(BaseCallback):
    """Splits wall time into rollout collection and PPO updates."""

    def __init__(self):
        super().__init__()
        self.rollout = self.update = 0.0
        self._phase: str | None = None
        self._mark = 0.0

    def _on_rollout_start(self) -> None:
        self._switch("rollout")

    def _on_rollout_end(self) -> None:
        self._switch("update")

    def _on_training_end(self) -> None:
        self._switch(None)

    def _on_step(self) -> bool:
        return True

    def _switch(self, phase: str | None) -> None:
        """Charge the time since the last switch to the phase that was running."""
        now = time.perf_counter()
        if self._phase == "rollout":
            self.rollout += now - self._mark
        elif self._phase == "update":
            self.update += now - self._mark
        self._phase, self._mark = phase, now


class StopOnInterrupt(BaseCallback):
    """Ctrl-C asks PPO to stop at its next env step, so a save never lands inside an update.

    The rollout in progress is dropped, so :attr:`completed_steps` (the env steps of every rollout
    that went into an update) is the model's real progress.
    """

    def __init__(self):
        super().__init__()
        self.requested = self.stopped = False
        self.completed_steps = 0

    def _on_rollout_start(self) -> None:
        self.completed_steps = self.model.num_timesteps

    def _on_step(self) -> bool:
        self.stopped = self.requested
        return not self.requested

    @contextmanager
    def listening(self) -> Iterator[None]:
        """Inside, the first SIGINT only sets :attr:`requested`; a second one interrupts at once."""
        if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
            yield
            return
        previous = signal.getsignal(signal.SIGINT)

        def request(signum, frame) -> None:
            self.requested = True
            signal.signal(signal.SIGINT, signal.default_int_handler)

        signal.signal(signal.SIGINT, request)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


def default_run_folder(config: RunConfig) -> Path:
    """``runs/<task or env name>/<graph set name>``."""
    return Path("runs") / config.name / Path(config.graphs).stem


def run_env(config: RunConfig, graphs: list[Graph]):
    """The run's env over ``graphs``."""
    return make_env(config.task, config.env, config.env_kwargs, graphs, config.horizon)


def build_model(config: RunConfig, envs: VecEnv, seed: int | None = None) -> PPO:
    """The SB3 algorithm for ``config.head`` on ``envs``: PPO, or MaskablePPO for node choice."""
    if config.head == "node-choice" and not hasattr(envs.envs[0].unwrapped, "action_masks"):
        raise UsageError(f"{config.name}: a node-choice env (Discrete(max_nodes) actions) needs an action_masks() method for MaskablePPO")
    algorithm = MaskablePPO if config.head == "node-choice" else PPO
    kwargs = {**sb3_kwargs(config.ppo), "seed": config.ppo.seed if seed is None else seed}
    kwargs["rollout_buffer_class"] = buffer_class(config.head)
    return algorithm(POLICIES[config.head], envs, policy_kwargs=policy_kwargs(config.head, config.model), **kwargs)


def buffer_class(head: str) -> type[CompactDictRolloutBuffer | CompactMaskableDictRolloutBuffer]:
    """The compact rollout buffer for ``head``'s algorithm (MaskablePPO's keeps action masks)."""
    return CompactMaskableDictRolloutBuffer if head == "node-choice" else CompactDictRolloutBuffer


def sb3_kwargs(ppo: PPOConfig) -> dict[str, Any]:
    """The arguments of SB3's ``PPO`` that :class:`PPOConfig` sets."""
    names = (
        "n_steps",
        "batch_size",
        "n_epochs",
        "learning_rate",
        "gamma",
        "gae_lambda",
        "clip_range",
        "ent_coef",
        "target_kl",
        "seed",
        "device",
    )
    return {name: getattr(ppo, name) for name in names} | {"verbose": 0}


def check_buffer_fits(config: RunConfig, env, log: Callable[[str], None]) -> None:
    """Print the rollout buffer's estimated size; refuse, with an n_steps that fits, when it
    would not. The estimate fills a real buffer with a short probe of ``env`` (which it steps)."""
    ppo = config.ppo
    estimate = estimate_rollout_bytes(buffer_class(config.head), env)
    needed = estimate.total(ppo.n_steps, ppo.n_envs)
    budget = available_memory_bytes() // 2  # leave room for the model, activations and the envs
    log(f"rollout buffer: {needed / 2**20:.1f} MiB for {ppo.n_steps} steps x {ppo.n_envs} envs (estimated from a 16-step probe)")
    if needed > budget:
        fits = max(1, estimate.steps_that_fit(budget, ppo.n_envs))
        raise UsageError(
            f"the rollout buffer needs {needed / 2**30:.1f} GiB but {budget / 2**30:.1f} GiB is half of the available memory; "
            f"use n_steps={fits} or fewer (or fewer envs, or smaller graphs)"
        )


def available_memory_bytes() -> int:
    """MemAvailable from /proc/meminfo; ``$GRAPHTRANSFER_MEMORY_LIMIT_MB`` overrides it."""
    if "GRAPHTRANSFER_MEMORY_LIMIT_MB" in os.environ:
        return int(os.environ["GRAPHTRANSFER_MEMORY_LIMIT_MB"]) * 2**20
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 2**63


def train(config: RunConfig, folder: str | Path | None = None, progress: bool = False, log: Callable[[str], None] = print) -> TrainResult:
    """Train on ``config.graphs`` and save the policy to ``folder`` (default
    :func:`default_run_folder`). Ctrl-C stops it early with a checkpoint for :func:`resume`."""
    graphs = load_graphs(config.graphs)
    ppo = config.ppo
    if ppo.batch_size > ppo.n_steps * ppo.n_envs:
        raise UsageError(f"batch_size={ppo.batch_size} exceeds n_steps * n_envs = {ppo.n_steps * ppo.n_envs}; lower it or raise n_steps")
    probe = run_env(config, graphs)
    config = replace(config, head=head_of(probe))
    check_buffer_fits(config, probe, log)
    model = _model(config, graphs, ppo.seed)
    sizes = [g.num_nodes for g in graphs]
    what = f"{config.name} ({config.head} head, {type(model).__name__})"
    log(f"training {what} on {len(graphs)} graphs of {min(sizes)}-{max(sizes)} nodes for {ppo.total_timesteps} steps")
    return _learn(model, config, graphs, Path(folder or default_run_folder(config)), progress)


def resume(folder: str | Path, progress: bool = False, log: Callable[[str], None] = print) -> TrainResult:
    """Continue an interrupted run in ``folder`` to its budget, with the folder's config.

    Restored: the policy's weights, Adam's moments and step counts, and the env-step count (which
    drives the schedules). Not restored: the RNG streams and the envs' episodes in progress; the
    resumed run starts fresh episodes, seeded ``seed + steps done``, so it does not repeat the
    first run's episodes and is not bit-identical to an uninterrupted run.
    """
    checkpoint = read_checkpoint(folder)
    config, done = checkpoint.config, checkpoint.meta.get("training")
    if done is None:
        raise UsageError(f"{folder}: holds no training run to resume (no training record in its {CONFIG}); train a new model instead")
    steps, budget = done.get("steps", 0), config.ppo.total_timesteps
    if done.get("complete", True):  # version 1 folders have no "complete": every run of theirs finished
        raise UsageError(f"{folder}: training is complete ({steps} of {budget} steps); nothing to resume, train a new model instead")
    graphs = load_graphs(config.graphs)
    model = _model(config, graphs, config.ppo.seed + steps)
    check_fits(checkpoint, model.env.envs[0])
    load_strict(model.policy, checkpoint.tensors)
    load_optimizer_state(model.policy.optimizer, model.policy, checkpoint)
    model.num_timesteps = steps
    log(f"resuming {config.name} ({config.head} head) from {folder} at step {steps} of {budget}")
    return _learn(model, config, graphs, Path(folder), progress, done)


FINETUNE_NODES_PER_MINIBATCH = 600_000  # two 250k-node observations (SB3's PPO needs at least two)


def finetune(policy, config: RunConfig, graphs: list[Graph], steps: int, log: Callable[[str], None] = print) -> TrainResult:
    """A few PPO iterations of ``policy`` on ``graphs`` (the transfer destination), in place.

    Rollouts are short and minibatches hold at most :data:`FINETUNE_NODES_PER_MINIBATCH` nodes,
    so that graphs of 10^5-10^6 nodes fit in memory; the rollout buffer is checked first.
    """
    max_nodes = max(g.num_nodes for g in graphs)
    n_steps = max(2, min(config.ppo.n_steps, steps))
    batch_size = max(2, min(n_steps, FINETUNE_NODES_PER_MINIBATCH // max_nodes))
    tuned = replace(config, ppo=replace(config.ppo, n_envs=1, n_steps=n_steps, batch_size=batch_size, n_epochs=1, total_timesteps=steps))
    probe = run_env(tuned, graphs)
    tuned = replace(tuned, head=head_of(probe))  # folders from before heads were recorded have none
    check_buffer_fits(tuned, probe, log)
    model = _model(tuned, graphs, tuned.ppo.seed)
    model.policy.load_state_dict(policy.state_dict())
    timer = PhaseTimer()
    started = time.perf_counter()
    model.learn(steps, callback=timer)
    policy.load_state_dict(model.policy.state_dict())
    return TrainResult(Path(), model.num_timesteps, time.perf_counter() - started, timer.rollout, timer.update, steps)


def _model(config: RunConfig, graphs: list[Graph], seed: int) -> PPO:
    torch.set_num_threads(config.ppo.threads)
    envs = make_vec_env(lambda: run_env(config, graphs), n_envs=config.ppo.n_envs, seed=seed)
    return build_model(config, envs, seed)


def _learn(
    model: PPO, config: RunConfig, graphs: list[Graph], folder: Path, progress: bool, earlier: dict[str, Any] | None = None
) -> TrainResult:
    """Run PPO up to the budget (or Ctrl-C) and save; ``earlier`` is the interrupted run's training info."""
    timer, stop = PhaseTimer(), StopOnInterrupt()
    budget = config.ppo.total_timesteps
    started = time.perf_counter()
    with stop.listening():
        model.learn(budget - model.num_timesteps, callback=[timer, stop], progress_bar=progress, reset_num_timesteps=False)
    if stop.stopped:
        model.num_timesteps = stop.completed_steps
    earlier = earlier or {}
    result = TrainResult(
        folder,
        model.num_timesteps,
        earlier.get("seconds", 0.0) + time.perf_counter() - started,
        earlier.get("rollout_seconds", 0.0) + timer.rollout,
        earlier.get("update_seconds", 0.0) + timer.update,
        budget,
        stop.stopped,
    )
    sizes = [g.num_nodes for g in graphs]
    info = {
        "trained_on": {"graphs": config.graphs, "num_graphs": len(graphs), "min_nodes": min(sizes), "max_nodes": max(sizes)},
        "training": {
            "steps": result.steps,
            "budget": budget,
            "complete": not result.interrupted,
            "seconds": round(result.seconds, 2),
            "rollout_seconds": round(result.rollout_seconds, 2),
            "update_seconds": round(result.update_seconds, 2),
        },
    }
    save_checkpoint(folder, model.policy, config, info, optimizer=model.policy.optimizer if result.interrupted else None)
    return result
