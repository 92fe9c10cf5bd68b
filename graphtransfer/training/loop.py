"""Training a GNN policy on small graphs with Stable-Baselines3: PPO, A2C or DQN (``config.algo``).

Ctrl-C stops a run between env steps and saves a resumable checkpoint; :func:`resume` continues it
to the same budget. With the same seed, ``threads=1`` and the CPU, a run repeats bit for bit, with
or without evaluations and checkpoints on the way (:mod:`graphtransfer.training.callbacks` writes those and
the logs).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from stable_baselines3.common.callbacks import BaseCallback

from graphtransfer.checkpoint import (
    CONFIG,
    check_fits,
    is_model_folder,
    load_optimizer_state,
    load_strict,
    read_checkpoint,
    save_or_keep,
)
from graphtransfer.config import RunConfig, Runtime
from graphtransfer.envs.protocol import head_of
from graphtransfer.errors import ClusterLost, GraphTransferError, UsageError
from graphtransfer.graphs import Graph, load_graphs, resolve
from graphtransfer.io import check_output_folder
from graphtransfer.nn.devices import check_device
from graphtransfer.solve.loading import DEFAULT_RUNTIME
from graphtransfer.tasks.factory import run_env
from graphtransfer.training.callbacks import (
    EvalOnGraphs,
    PhaseTimer,
    ProgressLines,
    SaveCheckpoints,
    StopOnInterrupt,
    best_so_far,
)
from graphtransfer.training.logs import CHECKPOINTS, PROGRESS, check_log_settings, make_logger, move_in, staging_folder
from graphtransfer.training.model import check_algo, check_buffer_fits, check_vec_env, make_model
from graphtransfer.training.runtime import RuntimeSettings
from graphtransfer.training.tracking import Tracking, TrackingFailed, check_tracking, start_tracking
from graphtransfer.zoo import zoo_folder

UserCallback = BaseCallback | list[BaseCallback] | None
"""what ``callback=`` takes, as SB3's ``learn`` does: a callback, a list of them, or a ``CallbackList``"""


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
    update_phases: dict[str, float] = field(default_factory=dict)
    """this process's update seconds by phase: sample, forward, backward, step"""
    model: RuntimeSettings | None = None
    """the trained SB3 algorithm of ``config.algo`` (``PPO`` or ``MaskablePPO``, ``A2C`` or
    ``MaskableA2C``, ``GraphDQN``) to keep using:
    ``model.predict``, ``model.policy``; its envs are closed, so ``model.set_env`` before more ``learn``"""

    @property
    def steps_per_second(self) -> float:
        return self.steps / max(self.seconds, 1e-9)


def default_run_folder(config: RunConfig) -> Path:
    """``runs/<task or env name>/<graph set name>``."""
    return Path("runs") / config.name / Path(config.graphs).stem


def train(
    config: RunConfig,
    folder: str | Path | None = None,
    progress: bool = False,
    log: Callable[[str], None] = print,
    callback: UserCallback = None,
    tracking: Tracking | None = None,
    force: bool = False,
) -> TrainResult:
    """Train on ``config.graphs`` and save the policy to ``folder`` (default
    :func:`default_run_folder`), with ``config.log``'s logs, evaluations and checkpoints there.
    A folder that holds a model already is replaced only with ``force`` (:func:`check_run_folder`).
    Ctrl-C stops it early with a checkpoint for :func:`resume`. ``tracking`` also records the run
    in MLflow (:mod:`graphtransfer.training.tracking`).

    ``callback`` takes SB3 callbacks as ``PPO.learn`` does (a ``BaseCallback``, a list, or a
    ``CallbackList``, e.g. SB3's ``EvalCallback``); they run after the run's own (timing, Ctrl-C,
    evaluations, checkpoints), and one whose ``_on_step`` returns False ends training early, saved
    as complete at that step. The result holds the trained SB3 model (``result.model``).

    Example::

        from stable_baselines3.common.callbacks import EvalCallback
        result = train(RunConfig(task="mis", graphs="small"), callback=EvalCallback(eval_env, eval_freq=500))
        action, _ = result.model.predict(obs, deterministic=True)
    """
    config.check()
    graphs = load_graphs(config.graphs)
    ppo = config.ppo
    if config.algo == "ppo" and ppo.batch_size > ppo.n_steps * ppo.n_envs:  # A2C takes whole rollouts, DQN replayed steps
        raise UsageError(f"batch_size={ppo.batch_size} exceeds n_steps * n_envs = {ppo.n_steps * ppo.n_envs}; lower it or raise n_steps")
    check_device(config.runtime.device)
    eval_graphs = check_log_settings(config.log)
    if tracking is not None:
        check_tracking(tracking)
    folder = Path(folder or default_run_folder(config))
    check_run_folder(folder, config, force)
    probe = run_env(config, graphs)
    config = replace(config, head=head_of(probe).value)
    check_algo(config)
    check_vec_env(config, probe)
    check_buffer_fits(config, probe, log)
    model = make_model(config, graphs, ppo.seed)
    sizes = [g.num_nodes for g in graphs]
    what = f"{config.name} ({config.head} head, {model.algorithm_name})"
    log(f"training {what} on {len(graphs)} graphs of {min(sizes)}-{max(sizes)} nodes for {ppo.total_timesteps} steps")
    return _learn(model, config, graphs, eval_graphs, folder, progress, log, callback=callback, tracking=tracking)


def check_run_folder(folder: Path, config: RunConfig, force: bool = False) -> None:
    """The output rule for a run folder (:func:`graphtransfer.io.check_output_folder`): new, empty
    or (with ``force``) an earlier model, never a folder of graphs the run reads or a folder of
    other files. The refusal of an interrupted run names ``--resume`` beside ``--force``."""
    inputs = [resolve(spec) for spec in (config.graphs, config.log.eval_graphs) if spec]
    check_output_folder(folder, inputs, is_model_folder, "model", force=force, alternative=resumable(folder))


def resumable(folder: Path) -> str:
    """``" or --resume FOLDER to continue its run (stopped at step S of B)"``, where ``folder`` holds
    an interrupted run, else ``""``: what a refusal to replace the folder offers beside --force."""
    try:
        meta = json.loads((Path(folder) / CONFIG).read_text())
        done, budget = meta["training"], meta["config"]["ppo"]["total_timesteps"]
        if done.get("complete", True):
            return ""
        return f" or --resume {folder} to continue its run (stopped at step {done['steps']} of {budget})"
    except (OSError, ValueError, RecursionError, KeyError, TypeError, AttributeError):
        return ""


def resume(
    folder: str | Path,
    progress: bool = False,
    log: Callable[[str], None] = print,
    max_nodes_per_batch: int | None = None,
    mixed_precision: bool | None = None,
    env: str | None = None,
    callback: UserCallback = None,
) -> TrainResult:
    """Continue an interrupted run in ``folder`` to its budget, with the folder's config; the
    runtime settings ``max_nodes_per_batch`` and ``mixed_precision`` override the folder's when
    given. ``env`` names the user env of a run trained on one; ``callback`` is as in :func:`train`.

    Restored: the policy's weights, Adam's moments and step counts, and the env-step count (which
    drives the schedules). Not restored: the RNG streams and the envs' episodes in progress; the
    resumed run starts fresh episodes, seeded ``seed + steps done``, so it does not repeat the
    first run's episodes and is not bit-identical to an uninterrupted run.
    """
    if zoo_folder(folder) is not None:
        raise UsageError(f"--resume {folder}: is the built-in model {folder}, trained to completion; train a model of your own instead")
    checkpoint = read_checkpoint(folder, env)
    if not os.access(folder, os.W_OK | os.X_OK):  # found before the run rather than at its save
        raise UsageError(f"--resume {folder}: is not writable, so the resumed run could not be saved there; make it writable or copy it")
    config, done = checkpoint.config, checkpoint.meta.get("training")
    if done is None:
        raise UsageError(f"{folder}: holds no training run to resume (no training record in its {CONFIG}); train a new model instead")
    steps, budget = done.get("steps", 0), config.ppo.total_timesteps
    if done.get("complete", True):  # version 1 folders have no "complete": every run of theirs finished
        raise UsageError(f"{folder}: training is complete ({steps} of {budget} steps); nothing to resume, train a new model instead")
    config = replace(config, runtime=_with_runtime(config.runtime, max_nodes_per_batch, mixed_precision))
    graphs = load_graphs(config.graphs)
    check_device(config.runtime.device)
    eval_graphs = check_log_settings(config.log)
    check_fits(checkpoint, run_env(config, graphs))
    model = make_model(config, graphs, config.ppo.seed + steps)
    load_strict(model.policy, checkpoint.tensors)
    load_optimizer_state(model.policy.optimizer, model.policy, checkpoint)
    model.num_timesteps = steps
    log(f"resuming {config.name} ({config.head} head) from {folder} at step {steps} of {budget}")
    return _learn(model, config, graphs, eval_graphs, Path(folder), progress, log, done, callback)


def _with_runtime(runtime: Runtime, max_nodes_per_batch: int | None, mixed_precision: bool | None) -> Runtime:
    """The folder's runtime settings, with those given in their place."""
    if max_nodes_per_batch is not None:
        runtime = replace(runtime, max_nodes_per_batch=max_nodes_per_batch)
    return runtime if mixed_precision is None else replace(runtime, mixed_precision=mixed_precision)


FINETUNE_MAX_NODES_PER_BATCH = 300_000
"""the default node budget of fine-tuning: one 250k-node observation per backward pass. 16 steps on
the 250k sample graph: 41.1 s and 2,958 MiB peak, against 42.3 s and 4,246 MiB at 600,000 (two
observations per pass; both on 2 threads, load 1)"""


def finetune(
    policy,
    config: RunConfig,
    graphs: list[Graph],
    steps: int,
    log: Callable[[str], None] = print,
    runtime: Runtime = DEFAULT_RUNTIME,
) -> TrainResult:
    """A few iterations of the run's algorithm on ``graphs`` (the transfer destination), training
    ``policy`` in place; see :func:`finetune_config` for how each algorithm's settings shrink.
    ``runtime``'s node budget (default :data:`FINETUNE_MAX_NODES_PER_BATCH`), mixed precision and
    device apply. The rollout or replay buffer is checked first."""
    tuned = finetune_config(config, graphs, steps, runtime)
    probe = run_env(tuned, graphs)
    tuned = replace(tuned, head=head_of(probe).value)  # folders from before heads were recorded have none
    check_buffer_fits(tuned, probe, log)
    model = make_model(tuned, graphs, tuned.ppo.seed)
    model.policy.load_state_dict(policy.state_dict())
    timer, stop = PhaseTimer(), StopOnInterrupt()
    started = time.perf_counter()
    with stop.listening():  # Ctrl-C stops at the next step, the weights as the last update left them (interrupted)
        log(f"fine-tuning {steps} steps on the destination graphs (Ctrl-C stops and saves the model as it then is)")
        model.learn(steps, callback=[timer, stop])
    if model.env is not None:
        model.env.close()
    policy.load_state_dict(model.policy.state_dict())
    done = stop.completed_steps if stop.stopped else model.num_timesteps
    seconds = time.perf_counter() - started
    return TrainResult(Path(), done, seconds, timer.rollout, timer.update, steps, interrupted=stop.requested, model=model)


def finetune_config(config: RunConfig, graphs: list[Graph], steps: int, runtime: Runtime = DEFAULT_RUNTIME) -> RunConfig:
    """The run's settings for fine-tuning ``steps`` env steps on ``graphs`` (one env, short
    rollouts) with ``runtime``'s node budget (default :data:`FINETUNE_MAX_NODES_PER_BATCH`),
    mixed precision and device.

    Torch threads: the process's current setting (the transfer command's ``--threads``, every
    core by default), not the run's, which suit its small graphs.

    PPO: one epoch; minibatches keep the run's ``batch_size`` (at most the rollout), so the
    optimisation does not change with the graphs' size, and each is backpropagated in groups of
    observations within the budget. A2C: its update spans the whole rollout at once, so the
    rollout holds at most ``budget`` nodes (at least one step). DQN: minibatches of at most
    ``budget`` nodes (at least one observation), a replay buffer of ``steps`` transitions, no
    random warm-up and epsilon at its final value: the policy is trained already.
    """
    budget = runtime.max_nodes_per_batch or FINETUNE_MAX_NODES_PER_BATCH
    largest = max(g.num_nodes for g in graphs)
    n_steps = max(2, min(config.ppo.n_steps, steps))
    if config.algo == "a2c":
        n_steps = max(1, min(n_steps, budget // largest))
    batch_size = max(2, min(n_steps, config.ppo.batch_size))
    if config.algo == "dqn":
        batch_size = max(1, min(config.ppo.batch_size, budget // largest))
    ppo = replace(config.ppo, n_envs=1, n_steps=n_steps, batch_size=batch_size, n_epochs=1, total_timesteps=steps)
    # the caller's threads (transfer's --threads), not those chosen for small graphs
    tuned = replace(config.runtime, vec_env="dummy", threads=torch.get_num_threads(), max_nodes_per_batch=budget)
    tuned = replace(tuned, mixed_precision=runtime.mixed_precision, device=runtime.device)
    dqn = replace(config.dqn, buffer_size=steps, learning_starts=0, exploration_initial_eps=config.dqn.exploration_final_eps)
    return replace(config, ppo=ppo, dqn=dqn, runtime=tuned)


def _learn(
    model: RuntimeSettings,
    config: RunConfig,
    graphs: list[Graph],
    eval_graphs: list[Graph],
    folder: Path,
    progress: bool,
    log: Callable[[str], None],
    earlier: dict[str, Any] | None = None,
    callback: UserCallback = None,
    tracking: Tracking | None = None,
) -> TrainResult:
    """Run the algorithm up to the budget (or Ctrl-C) with the run's logs, evaluations and checkpoints, and
    the user's ``callback`` after them, and save; ``earlier`` is the interrupted run's training
    record. Without a progress bar, ``log``
    gets a progress line every 30 s or 5% of the run; it always hears of updates stopped early
    by ``target_kl`` (and of every update with ``log.stdout``).

    Logs, best model and checkpoints go to a staging folder and move into ``folder`` after the
    save commits (:mod:`graphtransfer.training.logs`); env workers or a Ray cluster that die, or a
    disk that fails under the logs, end the run with a resumable checkpoint (:class:`TrainingStopped`)."""
    resumed, earlier = bool(earlier), earlier or {}
    budget = config.ppo.total_timesteps
    tracked = start_tracking(tracking, config, folder) if tracking is not None else None  # before the clock: a new database takes seconds
    timer, stop = PhaseTimer(earlier.get("rollout_seconds", 0.0), earlier.get("update_seconds", 0.0)), StopOnInterrupt()
    started = time.perf_counter() - earlier.get("seconds", 0.0)
    staging = staging_folder(folder)

    def record(steps: int, complete: bool) -> dict[str, Any]:
        seconds = {"seconds": time.perf_counter() - started, "rollout_seconds": timer.rollout, "update_seconds": timer.update}
        return training_record(config, graphs, steps, complete, seconds)

    periodic: list[SaveCheckpoints | EvalOnGraphs] = [SaveCheckpoints(config, staging, lambda steps: record(steps, False), timer.aside)]
    if eval_graphs:
        periodic.append(EvalOnGraphs(config, eval_graphs, staging, timer.aside, best_so_far(folder) if resumed else None))
    model.set_logger(make_logger(staging, config.log, folder / PROGRESS if resumed else None))
    if tracked is not None:
        model.logger.output_formats.append(tracked.metrics)
    model.report, model.report_every_update = log, config.log.stdout
    callbacks = [timer, stop, *periodic] + ([] if progress else [ProgressLines(log, budget)]) + _user_callbacks(callback)
    died = None
    try:
        with stop.listening():
            model.learn(budget - model.num_timesteps, callback=callbacks, progress_bar=progress, reset_num_timesteps=False)
        if stop.stopped:
            model.num_timesteps = stop.completed_steps
        else:
            for callback in periodic:
                callback.at_end()
    except STOPPING_FAILURES as err:
        died, model.num_timesteps = err, stop.completed_steps  # the rollout in progress is lost with the worker
    except BaseException:
        _close_envs(model)
        _leave_staging(staging, log)
        if tracked is not None:
            with suppress(TrackingFailed):
                tracked.finish(None, "FAILED")
        raise
    finally:
        with suppress(OSError):  # a disk that failed under the logs fails again at their close; that is being handled
            model.logger.close()
    seconds = time.perf_counter() - started
    result = TrainResult(
        folder, model.num_timesteps, seconds, timer.rollout, timer.update, budget, stop.stopped, dict(model.update_seconds), model
    )
    unfinished = result.interrupted or died is not None
    try:
        _save(model, config, record(result.steps, not unfinished), folder, staging, resumed, unfinished)
    except BaseException:
        if tracked is not None:
            with suppress(TrackingFailed):
                tracked.finish(None, "FAILED")
        raise
    finally:  # after the save: closing envs on a Ray cluster that is gone takes seconds, and the save must not wait
        _close_envs(model)
    if tracked is not None:
        tracked.finish(folder, "FINISHED" if not unfinished else "KILLED" if died is None else "FAILED")
    if died is not None:
        raise TrainingStopped(
            f"training stopped at step {result.steps} of {budget}: {_why_stopped(died)}; saved {folder}; "
            f"resume with: {_resume_command(folder, config)}"
        ) from None
    return result


WORKER_DEATHS = (EOFError, BrokenPipeError, ConnectionResetError)
"""what SB3's SubprocVecEnv raises when a worker process is gone (killed, out of memory)"""
STOPPING_FAILURES = (*WORKER_DEATHS, ClusterLost, OSError)
"""what ends a run whose model is still worth saving: env worker processes or the Ray cluster gone,
a disk that fails under the logs"""


class TrainingStopped(GraphTransferError):
    """Training stopped because env workers, the Ray cluster or the disk failed; the run was saved as a resumable checkpoint."""


def _why_stopped(err: BaseException) -> str:
    if isinstance(err, ClusterLost):
        return str(err)
    if isinstance(err, WORKER_DEATHS):
        return f"an env worker process died ({type(err).__name__}: {err or 'connection lost'})"
    filename = getattr(err, "filename", None)
    where = f"{filename}: " if filename else ""
    return f"{where}{getattr(err, 'strerror', None) or err}"


def _resume_command(folder: Path, config: RunConfig) -> str:
    return f"graphtransfer train --resume {folder}" + (f" --env {config.env}" if config.env else "")


def _save(
    model: RuntimeSettings, config: RunConfig, info: dict[str, Any], folder: Path, staging: Path, resumed: bool, unfinished: bool
) -> None:
    """Save the run to ``folder`` (with the optimizer's state when it is ``unfinished``), then move
    its staged logs in. A save that fails keeps the model in a temporary folder and says where."""
    optimizer = model.policy.optimizer if unfinished else None

    def then(kept: Path) -> str:
        return f" (its logs stay in {staging})" + (f"; resume with: {_resume_command(kept, config)}" if unfinished else "")

    save_or_keep(folder, model.policy, config, info, optimizer, "unfinished run" if unfinished else "trained model", then)
    move_in(staging, folder, resumed)


def _leave_staging(staging: Path, log: Callable[[str], None]) -> None:
    """A run that fails keeps nothing of its own in the run folder, except checkpoints worth resuming."""
    if (staging / CHECKPOINTS).is_dir():
        log(f"the run failed; its checkpoints are in {staging / CHECKPOINTS} (train --resume one of them)")
    else:
        shutil.rmtree(staging, ignore_errors=True)


def _close_envs(model: RuntimeSettings) -> None:
    """Close the envs; with a worker process dead, the others are left to exit with this process."""
    try:
        if model.env is not None:
            model.env.close()
    except WORKER_DEATHS:
        pass


def _user_callbacks(callback: UserCallback) -> list[BaseCallback]:
    """The user's callbacks as a list to run after ours; anything else is refused by name."""
    given = [] if callback is None else list(callback) if isinstance(callback, list) else [callback]
    for item in given:
        if not isinstance(item, BaseCallback):
            raise UsageError(
                f"callback={item!r} is not an SB3 callback; pass a stable_baselines3.common.callbacks.BaseCallback, "
                "a list of them or a CallbackList"
            )
    return given


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
