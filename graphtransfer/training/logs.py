"""A training run's logs inside its run folder: SB3's logger writing progress.csv (continued by a
resumed run), optionally SB3's stdout table and TensorBoard, and rows of our own (evaluations).

A run writes its logs, its best model and its checkpoints into a hidden staging folder inside the
run folder (:func:`staging_folder`) and moves them in only once its own save has committed
(:func:`move_in`): a run that fails or is killed leaves the folder's earlier logs as they were,
beside the model its config.json describes."""

from __future__ import annotations

import csv
import os
import shutil
import sys
import tempfile
from collections.abc import Set as AbstractSet
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from stable_baselines3.common.logger import CSVOutputFormat, HumanOutputFormat, KVWriter, Logger, TensorBoardOutputFormat

from graphtransfer.config import LogConfig
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, load_graphs
from graphtransfer.io import STAGING_PREFIX

PROGRESS = "progress.csv"
TENSORBOARD = "tensorboard"
BEST, CHECKPOINTS = "best", "checkpoints"
RUN_OUTPUTS = (PROGRESS, TENSORBOARD, BEST, CHECKPOINTS)
"""what a training run writes into its folder besides the model (the logs, the best model, the checkpoints)"""


def check_log_settings(log: LogConfig) -> list[Graph]:
    """Refuse, before training starts, what would fail later; returns the held-out graphs."""
    if log.tensorboard and find_spec("tensorboard") is None:
        raise UsageError("TensorBoard logging needs the tensorboard package: pip install 'graphtransfer[tensorboard]'")
    if log.eval_every and not log.eval_graphs:
        raise UsageError(f"log.eval_every={log.eval_every} needs held-out graphs to evaluate on: add --eval-graphs SET")
    return load_graphs(log.eval_graphs) if log.eval_graphs else []


def make_logger(folder: Path, log: LogConfig, earlier: Path | None = None) -> Logger:
    """SB3's logger writing ``folder/progress.csv`` (continuing ``earlier``'s rows, for a resumed run),
    plus SB3's table on stdout and TensorBoard event files when ``log`` asks for them."""
    folder.mkdir(parents=True, exist_ok=True)
    outputs: list[KVWriter] = [_csv_output(folder / PROGRESS, earlier)]
    if log.stdout:
        outputs.append(HumanOutputFormat(sys.stdout))
    if log.tensorboard:
        outputs.append(TensorBoardOutputFormat(str(folder / TENSORBOARD)))
    return Logger(str(folder), outputs)


def _csv_output(path: Path, earlier: Path | None) -> CSVOutputFormat:
    """SB3's CSV writer, which truncates its file; for a resumed run the rows of ``earlier`` are
    written first, so progress.csv holds the whole run."""
    rows = []
    if earlier is not None and earlier.is_file():
        with open(earlier, newline="") as handle:
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


def write_row(logger: Logger, values: dict[str, Any], steps: int) -> None:
    """Write ``values`` as a row of their own at ``steps`` to every output of ``logger``, through
    the outputs' public ``write``: what SB3 recorded for its next row stays recorded for it."""
    row = {**values, "time/total_timesteps": steps}
    excluded: dict[str, tuple[str, ...]] = {key: () for key in values} | {"time/total_timesteps": ("tensorboard",)}
    for output in logger.output_formats:
        output.write(row, excluded, steps)


def staging_folder(folder: Path) -> Path:
    """A new hidden folder inside the run folder ``folder`` for a run's logs, best model and
    checkpoints until its save commits (on the same filesystem, so moving them in is a rename)."""
    folder.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=folder))


def move_in(staging: Path, folder: Path, resumed: bool) -> None:
    """Move what a run staged into ``folder`` once its save has committed, and remove ``staging``.

    Each file or folder replaces the one of its name; a resumed run adds to the earlier run's
    TensorBoard events and checkpoints instead (its progress.csv already repeats the earlier rows).
    A new run also removes what an earlier run wrote and it did not (its best/, say:
    :func:`discard_earlier_outputs`)."""
    staged = sorted(staging.iterdir())
    for entry in staged:
        target = folder / entry.name
        if resumed and entry.is_dir() and target.is_dir() and not (entry / "config.json").exists():
            move_in(entry, target, resumed)
        else:
            _replace(entry, target, staging)
    if not resumed:
        discard_earlier_outputs(folder, {entry.name for entry in staged})
    shutil.rmtree(staging, ignore_errors=True)


def discard_earlier_outputs(folder: Path, written: AbstractSet[str] = frozenset()) -> None:
    """Remove what an earlier training run wrote into ``folder`` besides its model (:data:`RUN_OUTPUTS`)
    and the new model's maker did not write (``written``), once the new model has committed: it
    would stay beside the new model looking like its own."""
    earlier = [folder / name for name in RUN_OUTPUTS if name not in written and os.path.lexists(folder / name)]
    if earlier:
        aside = Path(tempfile.mkdtemp(prefix=".replaced-", dir=folder))
        for path in earlier:
            os.replace(path, aside / path.name)  # one rename each: nothing is left half deleted in the folder
        shutil.rmtree(aside, ignore_errors=True)


def _replace(entry: Path, target: Path, staging: Path) -> None:
    """Rename ``entry`` over ``target``; a folder in the way is first moved aside into ``staging``
    (a rename cannot replace a folder that is not empty), and removed with it."""
    if target.is_dir() and not target.is_symlink():
        _move_aside(target, staging)
    os.replace(entry, target)


def _move_aside(path: Path, staging: Path) -> None:
    """Move ``path`` into ``staging``, which is removed once the run's files are in."""
    os.replace(path, Path(tempfile.mkdtemp(prefix=".replaced-", dir=staging)) / path.name)
