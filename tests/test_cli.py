"""The CLI driven through Typer's CliRunner: help, exit codes, error text, and one end-to-end run."""

import numpy as np
import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.envs import is_independent_set
from graphtransfer.graphs import barabasi_albert, read_graph, write_edge_list

runner = CliRunner()


@pytest.mark.parametrize("command", ["train", "transfer", "predict"])
def test_every_command_has_help_with_an_example(command):
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert f"graphtransfer {command}" in result.output


def test_unknown_task_is_a_one_line_usage_error(tmp_path):
    result = runner.invoke(app, ["train", "--task", "tsp", "--graphs", "small", "--out", str(tmp_path / "m")])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: unknown task 'tsp'; choose one of ['mis']"
    assert "Traceback" not in result.output


def test_missing_graph_file_is_a_one_line_usage_error(tmp_path):
    result = runner.invoke(app, ["train", "--graphs", str(tmp_path / "nope.txt")])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "no such file, folder or sample set" in result.stderr


def test_missing_model_folder(tmp_path):
    result = runner.invoke(app, ["predict", "--model", str(tmp_path), "--graph", "small", "--out", str(tmp_path / "o.csv")])
    assert result.exit_code == 2
    assert "not a model folder" in result.stderr


def test_transfer_from_an_untrained_set_says_how_to_train(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["transfer", "--src", "small", "--dst", "large"])
    assert result.exit_code == 2
    assert "graphtransfer train --task mis --graphs small" in result.stderr


@pytest.mark.slow
def test_train_transfer_predict_end_to_end(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    big = barabasi_albert(3000, 3, seed=5)
    write_edge_list(big, tmp_path / "big.txt")

    trained = runner.invoke(app, ["train", "--graphs", "small", "--steps", "512", "--n-envs", "4", "--no-progress"])
    assert trained.exit_code == 0, trained.output
    assert "env steps/s" in trained.output and "rollout" in trained.output
    assert (tmp_path / "runs/mis/small/model.safetensors").is_file()

    moved = runner.invoke(app, ["transfer", "--src", "small", "--dst", str(tmp_path / "big.txt")])
    assert moved.exit_code == 0, moved.output
    assert "missing 0, unexpected 0, resized 0" in moved.output
    assert "greedy-min-degree" in moved.output

    out = tmp_path / "solution.csv"
    predicted = runner.invoke(app, ["predict", "--model", "runs/mis/big", "--graph", str(tmp_path / "big.txt"), "--out", str(out)])
    assert predicted.exit_code == 0, predicted.output
    assert "valid solution: yes" in predicted.output and "peak memory" in predicted.output
    rows = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.int64)
    assert rows.shape == (3000, 2)
    assert is_independent_set(read_graph(tmp_path / "big.txt"), rows[:, 1].astype(bool))
    assert rows[:, 1].sum() > 0
