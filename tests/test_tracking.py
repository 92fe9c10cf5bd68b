"""``train --track mlflow``: the run's settings, SB3's scalars at every update and the model folder
in a local MLflow database; a missing extra, a bad store and a foreign file are one line each and
leave nothing behind. The tests that need MLflow itself run where it is installed (it is an
optional extra, not part of the test install: see CHANGELOG.md)."""

import csv
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app

runner = CliRunner()
TINY = ["--task", "mis", "--graphs", "small", "--steps", "64", "--n-envs", "2", "--n-steps", "16", "--batch-size", "32", "--no-progress"]


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.output
    return lines[0]


def test_without_mlflow_the_extra_is_named_and_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "mlflow", None)  # what import finds on an install without the extra
    line = one_error_line(runner.invoke(app, ["train", *TINY, "--out", "run", "--track", "mlflow"]))
    assert line == "error: --track mlflow needs the mlflow package: pip install 'graphtransfer[track]' (or pip install mlflow-skinny)"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--track", "neptune"], "error: --track 'neptune' must be one of mlflow, wandb, e.g. --track mlflow"),
        (["--track-uri", "x.db"], "error: --track-uri names where --track records the run: add --track mlflow or --track wandb"),
        (["--track", "mlflow", "--track-uri", "/proc/sys/mlflow.db"], "the folder /proc/sys is not writable"),
        (["--track", "mlflow", "--track-uri", "notes.txt/mlflow.db"], "notes.txt is a file, not a folder"),
        (["--track", "mlflow", "--track-uri", "folder"], "error: --track-uri folder: is a folder; name the database file"),
        (["--track", "mlflow", "--track-uri", "sqlite:///notes.txt"], "exists and is not an SQLite database"),
    ],
)
def test_a_bad_store_is_one_line_before_training(options, expected, tmp_path, monkeypatch):
    if options[-1] == "/proc/sys/mlflow.db" and sys.platform != "linux":
        pytest.skip("/proc/sys is Linux's")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("mine\n")
    (tmp_path / "folder").mkdir()
    assert expected in one_error_line(runner.invoke(app, ["train", *TINY, "--out", "run", *options]))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "notes.txt"] and (tmp_path / "notes.txt").read_text() == "mine\n"


def test_track_is_refused_beside_resume(tmp_path):
    result = runner.invoke(app, ["train", "--resume", str(tmp_path), "--track", "mlflow"])
    assert one_error_line(result) == "error: --resume takes every setting from the folder's config.json; drop --track"


def runs_in(database):
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{database}")
    experiment = client.get_experiment_by_name("mis")
    return client, client.search_runs([experiment.experiment_id], order_by=["attributes.start_time ASC"])


def test_a_tracked_run_holds_its_settings_its_scalars_and_its_model(tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    monkeypatch.chdir(tmp_path)
    for out in ("run", "run"):  # the same folder again: a second run in the store beside the first, which stays as it was
        result = runner.invoke(app, ["train", *TINY, "--out", out, "--track", "mlflow"])
        assert result.exit_code == 0, result.output
        assert f"tracked in MLflow: sqlite:///{tmp_path / 'mlflow.db'}, experiment 'mis'" in result.stdout
    client, runs = runs_in(tmp_path / "mlflow.db")
    assert len(runs) == 2 and {run.info.status for run in runs} == {"FINISHED"}
    first = runs[0]
    assert first.data.params["ppo.n_steps"] == "16" and first.data.params["task"] == "mis"
    assert not [key for key in first.data.params if key.startswith("dqn.")]  # a PPO run: the algorithm's own settings only
    rows = list(csv.DictReader(open(tmp_path / "run" / "progress.csv")))  # the second run's, the same settings and seed
    for key in ("rollout/ep_rew_mean", "train/value_loss"):  # every row SB3 wrote, at its env step, as TensorBoard gets it
        history = [(m.step, pytest.approx(m.value)) for m in client.get_metric_history(runs[1].info.run_id, key)]
        assert history == [(int(row["time/total_timesteps"]), float(row[key])) for row in rows if row[key]]
    assert len(client.get_metric_history(first.info.run_id, "rollout/ep_rew_mean")) == 2  # 64 steps, 32 per rollout
    stored = {f.path for f in client.list_artifacts(first.info.run_id, "model")}
    assert {"model/config.json", "model/progress.csv"} <= stored
    assert any(path.endswith(".safetensors") for path in stored)


def test_two_processes_track_into_one_database_at_once(tmp_path):
    pytest.importorskip("mlflow")
    cli = [sys.executable, "-c", "from graphtransfer.cli import main; main()"]
    command = [*cli, "train", *TINY, "--track", "mlflow", "--track-uri", str(tmp_path / "m.db")]
    processes = [subprocess.Popen([*command, "--out", str(tmp_path / f"run{i}")], stderr=subprocess.PIPE, text=True) for i in (0, 1)]
    for process in processes:
        assert process.wait(timeout=600) == 0, process.stderr.read()
    _, runs = runs_in(tmp_path / "m.db")
    assert sorted(run.info.run_name for run in runs) == ["run0", "run1"] and {run.info.status for run in runs} == {"FINISHED"}


@pytest.mark.parametrize(("algo", "sections"), [("ppo", {"ppo"}), ("a2c", {"ppo"}), ("dqn", {"ppo", "dqn"})])
def test_a_run_records_the_settings_of_its_own_algorithm_only(algo, sections):
    """ppo holds what every algorithm shares (steps, envs, learning rate), so every run records it; dqn only a DQN run."""
    from graphtransfer.config import RunConfig
    from graphtransfer.training.tracking import flat_settings, tracked_settings

    recorded = flat_settings(tracked_settings(RunConfig(algo=algo)))
    assert {key.partition(".")[0] for key in recorded} & {"ppo", "dqn"} == sections
    assert recorded["algo"] == algo and "model.width" in recorded and "runtime.device" in recorded
