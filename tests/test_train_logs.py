"""What a real (tiny) training run writes besides its model: progress.csv, evaluations with best/,
checkpoints, config.yaml that repeats the run, TensorBoard files, and the plot of it all."""

import csv
import shutil
import struct

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from graphtransfer.checkpoint import load_policy_into_env, read_checkpoint
from graphtransfer.cli import app
from graphtransfer.graphs import barabasi_albert, load_graphs, write_edge_list
from graphtransfer.solve.evaluate import evaluate_policy
from graphtransfer.solve.rollouts import ONE_ROLLOUT
from graphtransfer.tasks.factory import run_env

runner = CliRunner()
TINY = ["--graphs", "small", "--steps", "256", "--n-envs", "2", "--width", "16", "--layers", "2", "--seed", "3", "--no-progress"]
TINY += ["--set", "model.head_width=16", "--set", "ppo.learning_rate=lin_1e-3"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """256 steps in 4 PPO iterations of 64, evaluated at step 128 and at the end, checkpointed at 128."""
    folder = tmp_path_factory.mktemp("logs")
    (folder / "evalset").mkdir()
    for n in (80, 120):
        write_edge_list(barabasi_albert(n, 3, seed=n), folder / "evalset" / f"ba-{n}.txt")
    options = ["--eval-graphs", str(folder / "evalset"), "--eval-every", "128", "--checkpoint-every", "128"]
    result = runner.invoke(app, ["train", *TINY, *options, "--out", str(folder / "run")])
    assert result.exit_code == 0, result.output
    return folder / "run"


def progress_rows(folder):
    with open(folder / "progress.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def same_weights(a, b) -> bool:
    first, second = read_checkpoint(a).tensors, read_checkpoint(b).tensors
    return first.keys() == second.keys() and all(torch.equal(first[name], second[name]) for name in first)


def test_progress_csv_logs_rewards_phase_seconds_losses_and_evaluations(run):
    rows = progress_rows(run)
    for column in ("rollout/ep_rew_mean", "time/rollout_seconds", "time/update_seconds", "train/loss", "train/learning_rate"):
        assert column in rows[0], column
    training = [row for row in rows if row["time/iterations"]]
    assert [int(row["time/total_timesteps"]) for row in training] == [64, 128, 192, 256]
    rollout = [float(row["time/rollout_seconds"]) for row in training]
    assert rollout[0] > 0 and rollout == sorted(rollout)
    rates = [float(row["train/learning_rate"]) for row in training if row["train/learning_rate"]]
    assert len(rates) == 3 and rates == sorted(rates, reverse=True) and rates[0] < 1e-3  # lin_1e-3 reached SB3
    evaluations = [row for row in rows if row["eval/objective"]]
    assert [int(row["time/total_timesteps"]) for row in evaluations] == [128, 256]
    assert all(float(row["eval/vs_greedy-min-degree"]) > 0 for row in evaluations)


def test_best_holds_the_best_evaluated_policy_and_its_score_repeats(run):
    scores = {int(r["time/total_timesteps"]): float(r["eval/vs_greedy-min-degree"]) for r in progress_rows(run) if r["eval/objective"]}
    best = read_checkpoint(run / "best")
    record = best.meta["evaluation"]
    assert record["by"] == "vs_greedy-min-degree" and record["score"] == max(scores.values()) == scores[record["steps"]]
    graphs = load_graphs(record["graphs"])
    policy, report = load_policy_into_env(best, run_env(best.config, graphs))
    assert report.ok
    rows = evaluate_policy(policy, best.config, graphs, ONE_ROLLOUT)  # one rollout, as training's evaluations
    assert np.mean([row.ratio(row.policy.objective, row.baselines[0].objective) for row in rows]) == pytest.approx(record["score"])
    assert not list((run / "best").glob("*.zip")) and not list((run / "best").glob("*.pkl"))


def test_a_checkpoint_loads_and_resumes_to_the_budget(run, tmp_path):
    copy = tmp_path / "step-128"
    shutil.copytree(run / "checkpoints" / "step-128", copy)
    checkpoint = read_checkpoint(copy)
    assert checkpoint.meta["training"]["steps"] == 128 and checkpoint.meta["training"]["complete"] is False
    assert checkpoint.optimizer is not None and checkpoint.config == read_checkpoint(run).config
    resumed = runner.invoke(app, ["train", "--resume", str(copy), "--no-progress"])
    assert resumed.exit_code == 0, resumed.output
    assert read_checkpoint(copy).meta["training"]["steps"] == 256


def test_the_saved_config_yaml_repeats_the_run_bit_for_bit(run, tmp_path):
    again = runner.invoke(app, ["train", "--config", str(run / "config.yaml"), "--out", str(tmp_path / "again"), "--no-progress"])
    assert again.exit_code == 0, again.output
    assert same_weights(run, tmp_path / "again")
    assert (tmp_path / "again" / "config.yaml").read_text() == (run / "config.yaml").read_text()


def test_subprocess_envs_train_and_evaluations_do_not_change_the_weights(run, tmp_path):
    """The same run in one process per env and without evaluations or checkpoints: same weights,
    since evaluation puts back every RNG it touched and each env is seeded the same either way."""
    plain = ["--set", "log.eval_graphs=null", "--set", "log.eval_every=0", "--set", "log.checkpoint_every=0"]
    result = runner.invoke(
        app,
        ["train", "--config", str(run / "config.yaml"), *plain, "--vec-env", "subproc", "--out", str(tmp_path / "sub"), "--no-progress"],
    )
    assert result.exit_code == 0, result.output
    assert read_checkpoint(tmp_path / "sub").config.runtime.vec_env == "subproc"
    assert same_weights(run, tmp_path / "sub")
    assert not (tmp_path / "sub" / "best").exists() and not (tmp_path / "sub" / "checkpoints").exists()


def test_plot_draws_a_png_of_the_run(run, tmp_path):
    result = runner.invoke(app, ["plot", "--model", str(run), "--out", str(tmp_path / "curve.png")])
    assert result.exit_code == 0, result.output
    data = (tmp_path / "curve.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (880, 770) and len(data) > 20_000  # 8 x 7 inches at 110 dpi, with curves on it
    assert runner.invoke(app, ["plot", "--model", str(run)]).exit_code == 0 and (run / "progress.png").is_file()


def test_plot_of_a_folder_without_progress_is_one_line(tmp_path):
    result = runner.invoke(app, ["plot", "--model", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {tmp_path}: has no progress.csv; "
        "pass a run folder written by 'graphtransfer train' (runs write progress.csv as they train)\n"
    )


def test_tensorboard_writes_event_files(tmp_path):
    pytest.importorskip("tensorboard")
    result = runner.invoke(app, ["train", *TINY, "--steps", "128", "--tensorboard", "--out", str(tmp_path / "tb")])
    assert result.exit_code == 0, result.output
    events = list((tmp_path / "tb" / "tensorboard").glob("events.out.tfevents.*"))
    assert events and events[0].stat().st_size > 0
