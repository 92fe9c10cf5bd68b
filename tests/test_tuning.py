"""`graphtransfer tune`: a tiny real Optuna study, resumed from its SQLite file, whose best.yaml trains a model."""

import sys

import optuna
import pytest
import yaml
from typer.testing import CliRunner

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.cli import app
from graphtransfer.graphs import load_graphs, write_edge_list

runner = CliRunner()


def held_out(tmp_path):
    folder = tmp_path / "held-out"
    folder.mkdir()
    for graph in load_graphs("small")[:2]:
        write_edge_list(graph, folder / f"{graph.name}.txt")
    return str(folder)


@pytest.mark.slow
def test_a_tiny_study_resumes_and_its_best_yaml_trains_a_model(tmp_path):
    out = tmp_path / "study"
    tiny = ["--task", "mis", "--graphs", "small", "--steps", "64", "--n-envs", "2", "--eval-graphs", held_out(tmp_path), "--out", str(out)]
    first = runner.invoke(app, ["tune", *tiny, "--n-trials", "2", "--eval-every", "32"])
    assert first.exit_code == 0, first.output
    assert "trial 0: score" in first.output and "2 trials finished" in first.output
    # the same command with a larger --n-trials goes on from the SQLite file: one more trial, not three
    again = runner.invoke(app, ["tune", *tiny, "--n-trials", "3", "--eval-every", "32", "--plot"])
    assert again.exit_code == 0, again.output
    assert "2 trials done, running up to 1 more" in again.output and "trial 2:" in again.output
    study = optuna.load_study(study_name="graphtransfer", storage=f"sqlite:///{out / 'study.db'}")
    assert len(study.trials) == 3 and all(len(t.intermediate_values) >= 1 for t in study.trials)
    assert (out / "study.png").stat().st_size > 10_000
    best = yaml.safe_load((out / "best.yaml").read_text())
    assert best["ppo"]["learning_rate"] == pytest.approx(study.best_trial.params["ppo.learning_rate"])
    assert best["model"]["width"] == study.best_trial.params["model.width"]
    trained = runner.invoke(app, ["train", "--config", str(out / "best.yaml"), "--no-progress", "--out", str(tmp_path / "model")])
    assert trained.exit_code == 0, trained.output
    config = read_checkpoint(tmp_path / "model").config
    assert config.model.num_layers == study.best_trial.params["model.num_layers"]
    assert config.ppo.n_epochs == study.best_trial.params["ppo.n_epochs"]


def test_plot_without_a_study_is_a_one_line_error(tmp_path):
    folder = tmp_path / "none"
    result = runner.invoke(app, ["tune", "--out", str(folder), "--n-trials", "0", "--plot"])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {folder}: holds no study.db; run 'graphtransfer tune --out {folder}' first"


def test_without_optuna_tune_says_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)  # what `import optuna` meets where it is not installed
    result = runner.invoke(app, ["tune", "--n-trials", "1"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: tune needs Optuna, which is not installed; pip install 'graphtransfer[tune]'"
