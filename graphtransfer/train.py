"""Training a GNN policy with Stable-Baselines3's PPO (MaskablePPO for node choice) on small graphs.

Ctrl-C stops a run between env steps and saves a resumable checkpoint; :func:`resume` continues it
to the same budget. With the same seed, ``threads=1`` and the CPU, a run repeats bit for bit, with
or without evaluations and checkpoints on the way (:mod:`graphtransfer.monitor` writes those and
the logs).
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
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from graphtransfer.buffers import CompactDictRolloutBuffer, CompactMaskableDictRolloutBuffer, estimate_rollout_bytes
from graphtransfer.checkpoint import CONFIG, check_fits, load_optimizer_state, load_strict, read_checkpoint, save_checkpoint
from graphtransfer.config import PPOConfig, RunConfig, schedule
from graphtransfer.envs.factory import head_of, make_env
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, load_graphs
from graphtransfer.monitor import EvalOnGraphs, SaveCheckpoints, check_log_settings, make_logger
from graphtransfer.nn import POLICIES, policy_kwargs
from graphtransfer.ppo import BudgetMaskablePPO, BudgetPPO

VEC_ENVS = {"dummy": DummyVecEnv, "subproc": SubprocVecEnv}


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
    """Splits wall time into rollout collection and PPO updates, and logs both running totals
    (``time/rollout_seconds``, ``time/update_seconds``) after every rollout.

    A resumed run starts from the seconds of its earlier part.
    """

    def __init__(self, rollout: float = 0.0, update: float = 0.0):
        super().__init__()
        self.rollout, self.update = rollout, update
        self._phase: str | None = None
        self._mark = 0.0

    def _on_rollout_start(self) -> None:
        self._switch("rollout")

    def _on_rollout_end(self) -> None:
        self._switch("update")
        self.logger.record("time/rollout_seconds", round(self.rollout, 3))
        self.logger.record("time/update_seconds", round(self.update, 3))

    @contextmanager
    def aside(self) -> Iterator[None]:
        """Time inside (evaluations, checkpoint saves) is charged to neither phase."""
        phase = self._phase
        self._switch(None)
        try:
            yield
        finally:
            self._switch(phase)

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
    """The SB3 algorithm for ``config.head`` on ``envs``: PPO, or MaskablePPO for node choice,
    each with the run's node budget and mixed-precision setting (SB3's own update without a budget)."""
    if config.head == "node-choice" and not envs.has_attr("action_masks"):
        raise UsageError(f"{config.name}: a node-choice env (Discrete(max_nodes) actions) needs an action_masks() method for MaskablePPO")
    algorithm = BudgetMaskablePPO if config.head == "node-choice" else BudgetPPO
    kwargs = {**sb3_kwargs(config.ppo), "seed": config.ppo.seed if seed is None else seed}
    kwargs |= {"max_nodes_per_batch": config.ppo.max_nodes_per_batch, "mixed_precision": config.ppo.mixed_precision}
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
    kwargs = {name: getattr(ppo, name) for name in names} | {"verbose": 0}
    return kwargs | {"learning_rate": schedule(ppo.learning_rate), "clip_range": schedule(ppo.clip_range)}


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
    :func:`default_run_folder`), with ``config.log``'s logs, evaluations and checkpoints there.
    Ctrl-C stops it early with a checkpoint for :func:`resume`."""
    graphs = load_graphs(config.graphs)
    ppo = config.ppo
    if ppo.batch_size > ppo.n_steps * ppo.n_envs:
        raise UsageError(f"batch_size={ppo.batch_size} exceeds n_steps * n_envs = {ppo.n_steps * ppo.n_envs}; lower it or raise n_steps")
    check_device(ppo.device)
    eval_graphs = check_log_settings(config.log)
    probe = run_env(config, graphs)
    config = replace(config, head=head_of(probe))
    check_buffer_fits(config, probe, log)
    model = _model(config, graphs, ppo.seed)
    sizes = [g.num_nodes for g in graphs]
    what = f"{config.name} ({config.head} head, {model.algorithm_name})"
    log(f"training {what} on {len(graphs)} graphs of {min(sizes)}-{max(sizes)} nodes for {ppo.total_timesteps} steps")
    return _learn(model, config, graphs, eval_graphs, Path(folder or default_run_folder(config)), progress)


def check_device(device: str) -> None:
    """Refuse a CUDA run where torch sees no GPU, before anything is built."""
    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError(f"device cuda: torch {torch.__version__} sees no CUDA GPU on this machine; use --device cpu or auto")


def resume(
    folder: str | Path,
    progress: bool = False,
    log: Callable[[str], None] = print,
    max_nodes_per_batch: int | None = None,
    mixed_precision: bool | None = None,
) -> TrainResult:
    """Continue an interrupted run in ``folder`` to its budget, with the folder's config; the
    runtime settings ``max_nodes_per_batch`` and ``mixed_precision`` override the folder's when given.

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
    config = replace(config, ppo=_with_runtime(config.ppo, max_nodes_per_batch, mixed_precision))
    graphs = load_graphs(config.graphs)
    check_device(config.ppo.device)
    eval_graphs = check_log_settings(config.log)
    check_fits(checkpoint, run_env(config, graphs))
    model = _model(config, graphs, config.ppo.seed + steps)
    load_strict(model.policy, checkpoint.tensors)
    load_optimizer_state(model.policy.optimizer, model.policy, checkpoint)
    model.num_timesteps = steps
    log(f"resuming {config.name} ({config.head} head) from {folder} at step {steps} of {budget}")
    return _learn(model, config, graphs, eval_graphs, Path(folder), progress, done)


def _with_runtime(ppo: PPOConfig, max_nodes_per_batch: int | None, mixed_precision: bool | None) -> PPOConfig:
    if max_nodes_per_batch is not None:
        ppo = replace(ppo, max_nodes_per_batch=max_nodes_per_batch)
    return ppo if mixed_precision is None else replace(ppo, mixed_precision=mixed_precision)


FINETUNE_MAX_NODES_PER_BATCH = 600_000  # the default node budget of fine-tuning: two 250k-node observations per backward pass


def finetune(
    policy,
    config: RunConfig,
    graphs: list[Graph],
    steps: int,
    log: Callable[[str], None] = print,
    max_nodes_per_batch: int | None = None,
) -> TrainResult:
    """A few PPO iterations of ``policy`` on ``graphs`` (the transfer destination), in place.

    Rollouts are short and one epoch long. Memory is bounded by the node budget
    ``max_nodes_per_batch`` (default :data:`FINETUNE_MAX_NODES_PER_BATCH`): minibatches keep the
    run's ``batch_size`` (at most the rollout), so the optimisation does not change with the graphs'
    size, and each is backpropagated in groups of observations within the budget. The rollout
    buffer is checked first.
    """
    n_steps = max(2, min(config.ppo.n_steps, steps))
    budget = max_nodes_per_batch or FINETUNE_MAX_NODES_PER_BATCH
    batch_size = max(2, min(n_steps, config.ppo.batch_size))
    ppo = replace(config.ppo, n_envs=1, vec_env="dummy", n_steps=n_steps, batch_size=batch_size, n_epochs=1, total_timesteps=steps)
    tuned = replace(config, ppo=replace(ppo, max_nodes_per_batch=budget))
    probe = run_env(tuned, graphs)
    tuned = replace(tuned, head=head_of(probe))  # folders from before heads were recorded have none
    check_buffer_fits(tuned, probe, log)
    model = _model(tuned, graphs, tuned.ppo.seed)
    model.policy.load_state_dict(policy.state_dict())
    timer = PhaseTimer()
    started = time.perf_counter()
    model.learn(steps, callback=timer)
    model.env.close()
    policy.load_state_dict(model.policy.state_dict())
    return TrainResult(Path(), model.num_timesteps, time.perf_counter() - started, timer.rollout, timer.update, steps)


def _model(config: RunConfig, graphs: list[Graph], seed: int) -> PPO:
    """The run's algorithm on its vector env, with a logger that writes nothing (without one, SB3's
    ``learn`` makes an empty folder in the temp dir every call); :func:`_learn` sets the run's own."""
    torch.set_num_threads(config.ppo.threads)
    ppo = config.ppo
    envs = make_vec_env(lambda: run_env(config, graphs), n_envs=ppo.n_envs, seed=seed, vec_env_cls=VEC_ENVS[ppo.vec_env])
    try:
        model = build_model(config, envs, seed)
        model.set_logger(Logger(None, []))
        return model
    except BaseException:
        envs.close()  # subprocess envs would outlive the error
        raise


def _learn(
    model: PPO,
    config: RunConfig,
    graphs: list[Graph],
    eval_graphs: list[Graph],
    folder: Path,
    progress: bool,
    earlier: dict[str, Any] | None = None,
) -> TrainResult:
    """Run PPO up to the budget (or Ctrl-C) with the run's logs, evaluations and checkpoints, and
    save; ``earlier`` is the interrupted run's training record."""
    earlier = earlier or {}
    budget = config.ppo.total_timesteps
    timer, stop = PhaseTimer(earlier.get("rollout_seconds", 0.0), earlier.get("update_seconds", 0.0)), StopOnInterrupt()
    started = time.perf_counter() - earlier.get("seconds", 0.0)

    def record(steps: int, complete: bool) -> dict[str, Any]:
        seconds = {"seconds": time.perf_counter() - started, "rollout_seconds": timer.rollout, "update_seconds": timer.update}
        return training_record(config, graphs, steps, complete, seconds)

    periodic = [SaveCheckpoints(config, folder, lambda steps: record(steps, False), timer.aside)]
    if eval_graphs:
        periodic.append(EvalOnGraphs(config, eval_graphs, folder, timer.aside))
    model.set_logger(make_logger(folder, config.log, keep_rows=bool(earlier)))
    try:
        with stop.listening():
            model.learn(budget - model.num_timesteps, callback=[timer, stop, *periodic], progress_bar=progress, reset_num_timesteps=False)
        if stop.stopped:
            model.num_timesteps = stop.completed_steps
        else:
            for callback in periodic:
                callback.at_end()
    finally:
        model.env.close()
        model.logger.close()
    result = TrainResult(folder, model.num_timesteps, time.perf_counter() - started, timer.rollout, timer.update, budget, stop.stopped)
    info = record(result.steps, not result.interrupted)
    save_checkpoint(folder, model.policy, config, info, optimizer=model.policy.optimizer if result.interrupted else None)
    return result


def training_record(config: RunConfig, graphs: list[Graph], steps: int, complete: bool, seconds: dict[str, float]) -> dict[str, Any]:
    """What a model folder's config.json says about the training behind it; ``complete`` is false
    for a run stopped before its budget (which ``train --resume`` continues)."""
    sizes = [g.num_nodes for g in graphs]
    return {
        "trained_on": {"graphs": config.graphs, "num_graphs": len(graphs), "min_nodes": min(sizes), "max_nodes": max(sizes)},
        "training": {
            "steps": steps,
            "budget": config.ppo.total_timesteps,
            "complete": complete,
            **{name: round(value, 2) for name, value in seconds.items()},
        },
    }
