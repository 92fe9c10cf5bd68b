"""The callbacks of a training run: where the time goes (rollout vs update), Ctrl-C as a clean
stop, evaluations on held-out graphs with the best model in best/, and resumable checkpoints in
checkpoints/step-<N>/. Every model folder is our safetensors format.
"""

from __future__ import annotations

import json
import math
import random
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

from graphtransfer.checkpoint import save_checkpoint
from graphtransfer.config import RunConfig
from graphtransfer.graphs import Graph
from graphtransfer.solve.evaluate import EvalRow, evaluate_policy
from graphtransfer.solve.rollouts import ONE_ROLLOUT
from graphtransfer.training.logs import BEST, CHECKPOINTS, write_row
from graphtransfer.training.ppo import NodeBudgetUpdate


@contextmanager
def rng_kept() -> Iterator[None]:
    """Put back every RNG's state afterwards: evaluation seeds torch, and PPO's minibatches and
    action sampling must not see it, so a run with evaluations trains the same weights as one without."""
    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        yield
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


class Periodic(BaseCallback):
    """Acts every ``every`` env steps, between a PPO update and the next rollout (never inside an
    update), and once more when training reaches its budget (:meth:`at_end`)."""

    def __init__(self, every: int, aside: Callable[[], Any]):
        super().__init__()
        self.every, self.aside = every, aside
        self.done_at = -1

    def _on_training_start(self) -> None:
        self.next = (self.model.num_timesteps // self.every + 1) * self.every if self.every else None

    def _on_rollout_start(self) -> None:
        steps = self.model.num_timesteps
        if self.next is not None and steps >= self.next:
            self.next = (steps // self.every + 1) * self.every
            self._run()

    def _on_step(self) -> bool:
        return True

    def at_end(self) -> None:
        if self.done_at != self.model.num_timesteps:
            self._run()

    def _run(self) -> None:
        with self.aside():
            self.act()
        self.done_at = self.model.num_timesteps

    def act(self) -> None:
        raise NotImplementedError


class EvalOnGraphs(Periodic):
    """Evaluates the policy on held-out graphs with :func:`graphtransfer.solve.evaluate.evaluate_policy` (one
    seeded rollout per graph in the default decoding, as ``predict`` does), logs ``eval/objective`` and, where the
    task has baselines, ``eval/vs_<baseline>`` (mean policy/baseline ratio), and saves the best
    policy so far to ``best/``: best by that ratio, or by the objective without baselines."""

    def __init__(self, config: RunConfig, graphs: list[Graph], folder: Path, aside: Callable[[], Any], best: float | None = None):
        super().__init__(config.log.eval_every, aside)
        self.config, self.graphs, self.folder = config, graphs, folder
        self.best = best  # a resumed run's best so far, which it must not replace by a worse model

    def act(self) -> None:
        started = time.perf_counter()
        with rng_kept():
            # one rollout per graph: the policy's score during training, as it was before auto rollouts, at a 32nd of the cost
            rows = evaluate_policy(self.model.policy, self.config, self.graphs, ONE_ROLLOUT)
        sense = rows[0].sense
        values = {"eval/objective": float(np.mean([row.policy.objective for row in rows]))}
        score, by = eval_score(rows)
        if by != "objective":
            values[f"eval/{by}"] = score
        values["eval/seconds"] = time.perf_counter() - started
        write_row(self.logger, values, self.model.num_timesteps)
        better = self.best is None or (score > self.best if sense == "max" else score < self.best)
        if better and np.isfinite(score):
            self.best = score
            record = {"evaluation": {"steps": self.model.num_timesteps, "graphs": self.config.log.eval_graphs, "by": by, "score": score}}
            save_checkpoint(self.folder / BEST, self.model.policy, self.config, record)


def eval_score(rows: list[EvalRow]) -> tuple[float, str]:
    """What an evaluation is judged by, and its name: the mean policy/baseline ratio against the
    task's first baseline (``vs_<baseline>``), or the mean objective where there is no baseline.
    Better is higher for a maximised objective (``rows[0].sense``), lower for a minimised one."""
    if rows[0].baselines:
        by = f"vs_{rows[0].baselines[0].name}"
        return float(np.mean([row.ratio(row.policy.objective, row.baselines[0].objective) for row in rows])), by
    return float(np.mean([row.policy.objective for row in rows])), "objective"


def best_so_far(run: Path) -> float | None:
    """The score of the model already in the run folder's ``best/`` (a resumed run must not replace it by a worse one)."""
    try:
        return float(json.loads((run / BEST / "config.json").read_text())["evaluation"]["score"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


class SaveCheckpoints(Periodic):
    """Saves a resumable checkpoint (weights, Adam's state, the training record) to
    ``checkpoints/step-<N>/``; ``train --resume`` continues from it, ``transfer`` and ``predict`` load it."""

    def __init__(self, config: RunConfig, folder: Path, info: Callable[[int], dict[str, Any]], aside: Callable[[], Any]):
        super().__init__(config.log.checkpoint_every, aside)
        self.config, self.folder, self.info = config, folder, info

    def act(self) -> None:
        policy = self.model.policy
        steps = self.model.num_timesteps
        target = self.folder / CHECKPOINTS / f"step-{steps}"
        save_checkpoint(target, policy, self.config, self.info(steps), optimizer=policy.optimizer)

    def at_end(self) -> None:
        """The final model is the run folder itself; no extra checkpoint is needed."""


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


_interrupt_pending = False


def defer_interrupts() -> None:
    """Make SIGINT in this process a request, never an exception raised wherever the process
    happens to be (inside a database write, say): a training run in progress or started later stops
    at its next env step (:class:`StopOnInterrupt`), and :func:`interrupt_pending` tells the
    caller's own safe points. For a process that another one stops (a ``tune --n-jobs`` worker)."""

    def request(signum, frame) -> None:
        global _interrupt_pending
        _interrupt_pending = True

    signal.signal(signal.SIGINT, request)


@contextmanager
def remembered_interrupts() -> Iterator[None]:
    """Inside, Ctrl-C (SIGINT) raises KeyboardInterrupt at once, as Python's own handler does, and is
    also remembered (:func:`interrupt_pending`), so that one Python drops still stops the work: an
    exception raised while a weakref callback or a ``__del__`` runs is printed as "Exception ignored"
    and lost, and the process would go on (a ``tune`` that trained on). A training run started later
    then stops at its first step (:class:`StopOnInterrupt`), and the caller's safe points see it;
    Python's report of the dropped exception (a traceback) is not printed, other such reports are.
    Also where the process started with SIGINT ignored (a background job of a shell without job
    control). Forgotten on the way out; outside the main thread (which alone may set handlers) nothing changes."""
    global _interrupt_pending
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def request(signum, frame) -> None:
        global _interrupt_pending
        _interrupt_pending = True
        raise KeyboardInterrupt

    def unraisable(report) -> None:
        if not (_interrupt_pending and report.exc_type is KeyboardInterrupt):
            reporting(report)

    previous, reporting = signal.signal(signal.SIGINT, request), sys.unraisablehook
    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = reporting
        _interrupt_pending = False


def interrupt_pending() -> bool:
    """Whether a SIGINT came to a process that :func:`defer_interrupts` (a request not yet acted on)."""
    return _interrupt_pending


class StopOnInterrupt(BaseCallback):
    """Ctrl-C asks PPO to stop at its next env step, or, inside an update, after the minibatch in
    progress (:attr:`NodeBudgetUpdate.update_deadline`), so a save never lands inside an optimizer
    step and a long update does not hold the stop back.

    A rollout in progress is dropped, so :attr:`completed_steps` (the env steps of every rollout
    that went into an update) is the model's real progress; an update cut short counts, as one
    stopped by ``target_kl`` does.
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
        self.requested = self.requested or _interrupt_pending  # asked for before the run began (a deferred SIGINT)

        def request(signum, frame) -> None:
            self.requested = True
            model = getattr(self, "model", None)  # set once training has begun
            if isinstance(model, NodeBudgetUpdate):
                model.update_deadline = -math.inf  # the update in progress takes no further minibatch
            signal.signal(signal.SIGINT, signal.default_int_handler)

        signal.signal(signal.SIGINT, request)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
            model = getattr(self, "model", None)
            if isinstance(model, NodeBudgetUpdate) and model.update_deadline == -math.inf:
                model.update_deadline = None  # the model's next learn is not stopped by this one's Ctrl-C


def whole_rollouts(steps: int, model: BaseAlgorithm) -> int:
    """``steps`` rounded up to what SB3 will run: on-policy algorithms collect whole rollouts of
    ``n_steps`` per env, every algorithm steps all its envs at once."""
    chunk = model.n_steps * model.n_envs if isinstance(model, OnPolicyAlgorithm) else model.n_envs
    return -(-steps // chunk) * chunk


class ProgressLines(BaseCallback):
    """A progress line for logs that are not a terminal (a batch job's log): at least every
    ``every_seconds`` or every ``every_fraction`` of the run, whichever comes first, checked at
    every env step and after every update."""

    def __init__(self, log: Callable[[str], None], budget: int, every_seconds: float = 30.0, every_fraction: float = 0.05):
        super().__init__()
        self.log, self.budget = log, budget
        self.every_seconds, self.every_steps = every_seconds, max(1, int(budget * every_fraction))

    def _on_training_start(self) -> None:
        self.started = self.last_time = time.perf_counter()
        self.budget = whole_rollouts(self.budget, self.model)
        self.first_steps = self.model.num_timesteps
        self.next_steps = self.first_steps + self.every_steps

    def _on_step(self) -> bool:
        self._maybe_report()
        return True

    def _on_rollout_start(self) -> None:
        self._maybe_report()

    def _maybe_report(self) -> None:
        steps, now = self.model.num_timesteps, time.perf_counter()
        if steps < self.next_steps and now - self.last_time < self.every_seconds:
            return
        self.last_time, self.next_steps = now, steps + self.every_steps
        elapsed = now - self.started
        rate = (steps - self.first_steps) / max(elapsed, 1e-9)
        self.log(f"step {steps} of {self.budget} ({100 * steps / self.budget:.0f}%), {rate:.1f} env steps/s, {elapsed:.0f} s elapsed")


class StopAtDeadline(BaseCallback):
    """Ends training once ``seconds`` of wall-clock time have passed since ``started`` (a
    ``time.perf_counter()`` reading), so that a run with a time budget stops on time.

    SB3 stops only between env steps. At every env step the callback projects when the rollout in
    progress would end, at its pace so far, and stops at once if that is past the deadline (a
    rollout that could not be used is not collected); PPO's update takes no minibatch after the
    deadline (:attr:`NodeBudgetUpdate.update_deadline`). So a run ends within about one env step or
    one minibatch of its budget. The rollout in progress is dropped, as with Ctrl-C
    (:class:`StopOnInterrupt`), and :attr:`completed_steps` counts the env steps of every rollout
    that went into an update.
    """

    def __init__(self, started: float, seconds: float):
        super().__init__()
        self.deadline = started + seconds
        self.stopped = False
        self.completed_steps = 0
        self._rollout_began = started

    def _on_training_start(self) -> None:
        if isinstance(self.model, NodeBudgetUpdate):
            self.model.update_deadline = self.deadline

    def _on_rollout_start(self) -> None:
        self.completed_steps = self.model.num_timesteps
        self._rollout_began = time.perf_counter()

    def _on_step(self) -> bool:
        now = time.perf_counter()
        steps_per_rollout = getattr(self.model, "n_steps", 1) * self.model.n_envs  # DQN: a step, then its gradient steps
        done = self.model.num_timesteps - self.completed_steps
        if done <= self.model.n_envs:  # one step is too few to tell the pace (the first one pays for warming up)
            self.stopped = now >= self.deadline
        else:
            self.stopped = self._rollout_began + (now - self._rollout_began) * steps_per_rollout / done >= self.deadline
        return not self.stopped
