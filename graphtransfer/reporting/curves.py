"""A training run's curves from its progress.csv: episode reward and held-out evaluation against env
steps, and where the time went (rollout vs update seconds per PPO iteration)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from graphtransfer.errors import UsageError
from graphtransfer.io import FIGURE_SUFFIXES, check_output_file, save_figure
from graphtransfer.training.logs import PROGRESS


def read_progress(run: str | Path) -> dict[str, np.ndarray]:
    """The columns of ``run/progress.csv`` as float arrays, NaN where a row has no value."""
    path = Path(run) / PROGRESS
    if not path.is_file():
        what = "is not a folder" if not Path(run).is_dir() else f"has no {PROGRESS}"
        raise UsageError(f"{run}: {what}; pass a run folder written by 'graphtransfer train' (runs write {PROGRESS} as they train)")
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows or "time/total_timesteps" not in rows[0]:
        raise UsageError(f"{path}: holds no training rows yet; plot it once the first PPO rollout has finished")
    return {key: np.array([_number(row.get(key)) for row in rows]) for key in rows[0]}


def _number(text: str | None) -> float:
    try:
        return float(text) if text else float("nan")
    except ValueError:
        return float("nan")


def plot_run(run: str | Path, out: str | Path | None = None, force: bool = False) -> Path:
    """Draw the run's curves to ``out`` (default ``run/progress.png``, replaced on every call) and
    return its path. A named ``out`` never replaces the run's own files, and an existing file only with ``force``."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    columns = read_progress(run)
    path = Path(out) if out else Path(run) / "progress.png"
    check_output_file(path, [Path(run) / PROGRESS], force or out is None, "--out", FIGURE_SUFFIXES)
    steps = columns["time/total_timesteps"]
    figure, (reward_axis, time_axis) = plt.subplots(2, 1, figsize=(8, 7), sharex=True, height_ratios=(3, 2))
    figure.suptitle(_title(Path(run)))
    _draw_rewards(reward_axis, columns, steps)
    _draw_seconds(time_axis, columns, steps)
    time_axis.set_xlabel("env steps (summed over parallel envs)")
    figure.tight_layout()
    save_figure(figure, path, dpi=110)
    plt.close(figure)
    return path


def _draw_rewards(axis, columns: dict[str, np.ndarray], steps: np.ndarray) -> None:
    """Episode reward (left axis) and, when the run evaluated, the held-out score (right axis)."""
    reward = columns.get("rollout/ep_rew_mean")
    lines = []
    if reward is not None and np.isfinite(reward).any():
        kept = np.isfinite(reward)
        lines += axis.plot(steps[kept], reward[kept], color="tab:blue", label="episode reward (mean of the last 100 episodes)")
    axis.set_ylabel("episode reward (return)", color="tab:blue")
    axis.grid(alpha=0.3)
    score = _eval_column(columns)
    if score is not None:
        name, values = score
        kept = np.isfinite(values)
        twin = axis.twinx()
        label = "held-out eval: " + (f"policy / {name.removeprefix('eval/vs_')}" if name.startswith("eval/vs_") else "objective")
        lines += twin.plot(steps[kept], values[kept], "o-", color="tab:orange", label=label)
        unit = "policy / baseline (mean over graphs)" if name.startswith("eval/vs_") else "objective (mean over graphs)"
        twin.set_ylabel(unit, color="tab:orange")
    if lines:
        axis.legend(lines, [line.get_label() for line in lines], loc="lower left", bbox_to_anchor=(0, 1), frameon=False)
    else:
        axis.text(0.5, 0.5, "no finished episode logged yet", transform=axis.transAxes, ha="center")


def _eval_column(columns: dict[str, np.ndarray]) -> tuple[str, np.ndarray] | None:
    """The evaluation's score: the ratio to the first baseline, else the mean objective."""
    names = [name for name in columns if name.startswith("eval/vs_")] + ["eval/objective"]
    for name in names:
        if name in columns and np.isfinite(columns[name]).any():
            return name, columns[name]
    return None


def _draw_seconds(axis, columns: dict[str, np.ndarray], steps: np.ndarray) -> None:
    """Seconds spent per PPO iteration collecting the rollout and updating, from the running totals.

    A row's totals are logged when its rollout ends, so the growth of the update total between two
    rows is the update that followed the first row's rollout, and is drawn there.
    """
    for name, colour in (("rollout", "tab:green"), ("update", "tab:red")):
        total = columns.get(f"time/{name}_seconds")
        if total is None or not np.isfinite(total).any():
            continue
        kept = np.isfinite(total)
        at, per_iteration = steps[kept], np.diff(total[kept], prepend=0.0)
        if name == "update":
            at, per_iteration = at[:-1], per_iteration[1:]
        axis.plot(at, per_iteration, ".-", color=colour, label=f"{name} ({total[kept][-1]:.1f} s logged in all)")
    axis.set_ylabel("seconds per PPO iteration")
    axis.set_ylim(bottom=0)
    axis.grid(alpha=0.3)
    if axis.get_legend_handles_labels()[0]:
        axis.legend(loc="lower left", bbox_to_anchor=(0, 1), ncol=2, frameon=False)


def _title(run: Path) -> str:
    """'mis on small: runs/mis/small', from the run's config.json when it has one yet."""
    try:
        config = json.loads((run / "config.json").read_text())["config"]
        what = config["task"] if config.get("env") is None else config["env"]
        return f"{what} on {Path(config['graphs']).name}: {run}"
    except (OSError, ValueError, KeyError, TypeError):
        return str(run)
