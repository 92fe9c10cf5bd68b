"""A training run's logs inside its run folder: SB3's logger writing progress.csv (continued by a
resumed run), optionally SB3's stdout table and TensorBoard, and rows of our own (evaluations)."""

from __future__ import annotations

import csv
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from stable_baselines3.common.logger import CSVOutputFormat, HumanOutputFormat, KVWriter, Logger, TensorBoardOutputFormat

from graphtransfer.config import LogConfig
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, load_graphs

PROGRESS = "progress.csv"
TENSORBOARD = "tensorboard"


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


def write_row(logger: Logger, values: dict[str, Any], steps: int) -> None:
    """Write ``values`` as a row of their own at ``steps`` to every output of ``logger``, through
    the outputs' public ``write``: what SB3 recorded for its next row stays recorded for it."""
    row = {**values, "time/total_timesteps": steps}
    excluded: dict[str, tuple[str, ...] | None] = {key: None for key in values} | {"time/total_timesteps": ("tensorboard",)}
    for output in logger.output_formats:
        output.write(row, excluded, steps)
