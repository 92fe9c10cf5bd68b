"""What a training run writes besides its model, inside the run folder: SB3's logger (progress.csv,
optionally stdout and TensorBoard), evaluations on held-out graphs with the best model in best/,
and resumable checkpoints in checkpoints/step-<N>/. Every model folder is our safetensors format.
"""

from __future__ import annotations

import csv
import json
import random
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import CSVOutputFormat, HumanOutputFormat, KVWriter, Logger, TensorBoardOutputFormat

from graphtransfer.checkpoint import save_checkpoint
from graphtransfer.config import LogConfig, RunConfig
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, load_graphs

PROGRESS = "progress.csv"
BEST, CHECKPOINTS, TENSORBOARD = "best", "checkpoints", "tensorboard"


def check_log_settings(log: LogConfig) -> list[Graph]:
    """Refuse, before training starts, what would fail later; returns the held-out graphs."""
    if log.tensorboard and find_spec("tensorboard") is None:
        raise UsageError("TensorBoard logging needs the tensorboard package: pip install 'graphtransfer[tensorboard]'")
    if log.eval_every and not log.eval_graphs:
        raise UsageError(f"log.eval_every={log.eval_every} needs held-out graphs to evaluate on: add --eval-graphs SET")
    return load_graphs(log.eval_graphs) if log.eval_graphs else []


def make_logger(folder: Path, log: LogConfig, keep_rows: bool) -> Logger:
    """SB3's logger writing ``progress.csv`` (continued when ``keep_rows``, for a resumed run),
    plus SB3's table on stdout and TensorBoard event files when ``log`` asks for them."""
    folder.mkdir(parents=True, exist_ok=True)
    outputs: list[KVWriter] = [_csv_output(folder / PROGRESS, keep_rows)]
    if log.stdout:
        outputs.append(HumanOutputFormat(sys.stdout))
    if log.tensorboard:
        outputs.append(TensorBoardOutputFormat(str(folder / TENSORBOARD)))
    return Logger(str(folder), outputs)


def _csv_output(path: Path, keep_rows: bool) -> CSVOutputFormat:
    """SB3's CSV writer, which truncates its file; for a resumed run the earlier rows are written
    back first, so progress.csv holds the whole run."""
    rows = []
    if keep_rows and path.is_file():
        with open(path, newline="") as handle:
            rows = list(csv.DictReader(handle))
    output = CSVOutputFormat(str(path))
    for row in rows:
        output.write({key: _cell(value) for key, value in row.items()}, {})
    return output


def _cell(text: str) -> int | float | str | None:
    """A CSV cell back as the number it was written from, so it is not quoted as a string."""
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


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
    """Evaluates the policy on held-out graphs with :func:`graphtransfer.evaluate.evaluate` (one
    seeded sampled rollout per graph, as ``predict`` does), logs ``eval/objective`` and, where the
    task has baselines, ``eval/vs_<baseline>`` (mean policy/baseline ratio), and saves the best
    policy so far to ``best/``: best by that ratio, or by the objective without baselines."""

    def __init__(self, config: RunConfig, graphs: list[Graph], folder: Path, aside: Callable[[], Any]):
        super().__init__(config.log.eval_every, aside)
        self.config, self.graphs, self.folder = config, graphs, folder
        self.best = _best_so_far(folder / BEST)

    def act(self) -> None:
        from graphtransfer.evaluate import evaluate  # evaluate imports train, which imports this module

        started = time.perf_counter()
        with rng_kept():
            rows = evaluate(self.model.policy, self.config, self.graphs)
        sense = rows[0].sense
        values = {"eval/objective": float(np.mean([row.policy.objective for row in rows]))}
        score, by = values["eval/objective"], "objective"
        if rows[0].baselines:
            by = f"vs_{rows[0].baselines[0].name}"
            score = float(np.mean([row.ratio(row.policy.objective, row.baselines[0].objective) for row in rows]))
            values[f"eval/{by}"] = score
        values["eval/seconds"] = time.perf_counter() - started
        dump_alone(self.logger, values, self.model.num_timesteps)
        better = self.best is None or (score > self.best if sense == "max" else score < self.best)
        if better and np.isfinite(score):
            self.best = score
            record = {"evaluation": {"steps": self.model.num_timesteps, "graphs": self.config.log.eval_graphs, "by": by, "score": score}}
            save_checkpoint(self.folder / BEST, self.model.policy, self.config, record)


def dump_alone(logger: Logger, values: dict[str, Any], steps: int) -> None:
    """Write ``values`` as a row of their own at ``steps``; what SB3 recorded for its next row
    (the last update's losses) stays recorded for that row."""
    pending = dict(logger.name_to_value), dict(logger.name_to_count), dict(logger.name_to_excluded)
    logger.name_to_value.clear()
    logger.name_to_count.clear()
    logger.name_to_excluded.clear()
    for key, value in values.items():
        logger.record(key, value)
    logger.record("time/total_timesteps", steps, exclude="tensorboard")
    logger.dump(steps)
    for kept, saved in zip((logger.name_to_value, logger.name_to_count, logger.name_to_excluded), pending, strict=True):
        kept.update(saved)


def _best_so_far(folder: Path) -> float | None:
    """The score of the model already in ``best/`` (a resumed run must not replace it by a worse one)."""
    try:
        return float(json.loads((folder / "config.json").read_text())["evaluation"]["score"])
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
