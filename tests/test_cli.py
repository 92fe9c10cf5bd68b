"""The CLI driven through Typer's CliRunner: help, exit codes, error text, and one end-to-end run."""

import json
import tempfile

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.graphs import barabasi_albert, read_graph, write_edge_list
from graphtransfer.tasks import TASKS, is_independent_set, is_vertex_cover

runner = CliRunner()


@pytest.mark.parametrize("command", ["train", "tune", "transfer", "predict", "eval", "tasks", "plot", "export"])
def test_every_command_has_help_with_an_example(command):
    result = runner.invoke(app, [command, "--help"])
    assert result.exit_code == 0
    assert f"graphtransfer {command}" in result.output


def test_unknown_task_is_a_one_line_usage_error(tmp_path):
    result = runner.invoke(app, ["train", "--task", "tsp", "--graphs", "small", "--out", str(tmp_path / "m")])
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == "error: unknown task 'tsp'; choose one of ['epidemic', 'matching', 'maxcut', 'mis', 'mvc', 'mvc-weighted', 'path'] "
        "or pass --env module:Class"
    )
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


FEASIBLE = {"mis": is_independent_set, "mvc": is_vertex_cover}


@pytest.mark.slow
@pytest.mark.parametrize("task", ["mis", "mvc", "maxcut", "epidemic"])
def test_train_transfer_predict_end_to_end(tmp_path, monkeypatch, task):
    """Tiny training on <= 60-node graphs, transfer to a graph 50x larger, predict there."""
    monkeypatch.chdir(tmp_path)
    big = barabasi_albert(3000, 3, seed=5)
    write_edge_list(big, tmp_path / "big.txt")

    trained = runner.invoke(app, ["train", "--task", task, "--graphs", "small", "--steps", "256", "--n-envs", "4", "--no-progress"])
    assert trained.exit_code == 0, trained.output
    assert "env steps/s" in trained.output and "rollout" in trained.output
    assert (tmp_path / f"runs/{task}/small/config.json").is_file()

    moved = runner.invoke(app, ["transfer", "--task", task, "--src", "small", "--dst", str(tmp_path / "big.txt")])
    assert moved.exit_code == 0, moved.output
    assert "missing 0, unexpected 0, resized 0" in moved.output

    out = tmp_path / "solution.csv"
    predicted = runner.invoke(app, ["predict", "--model", f"runs/{task}/big", "--graph", str(tmp_path / "big.txt"), "--out", str(out)])
    assert predicted.exit_code == 0, predicted.output
    assert "valid solution: yes" in predicted.output and "peak memory" in predicted.output
    rows = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    if task in FEASIBLE:
        assert rows.shape == (3000, 2)
        assert FEASIBLE[task](read_graph(tmp_path / "big.txt"), rows[:, 1].astype(bool))
    elif task == "maxcut":
        assert set(np.unique(rows[:, 1])) <= {0, 1}
    else:
        assert rows.shape[1] == 3 and set(np.unique(rows[:, 1])) <= {0, 1, 2}
    if task in FEASIBLE:  # the patient decoding (MIS) and the commit fraction (MVC) give valid solutions too
        patient_args = ["--model", f"runs/{task}/big", "--graph", "big.txt", "--out", "p.csv", "--commit-fraction", "0.05"]
        patient = runner.invoke(app, ["predict", *patient_args])
        assert patient.exit_code == 0 and "valid solution: yes" in patient.output, patient.output
    if task in ("mis", "mvc"):  # the decoding before local-max stays selectable
        drawn = runner.invoke(app, ["predict", *patient_args, "--decoding", "drawn", "--force"])
        assert drawn.exit_code == 0 and "valid solution: yes" in drawn.output, drawn.output

    evaluated = runner.invoke(
        app,
        [
            "eval",
            "--model",
            f"runs/{task}/small",
            "--graphs",
            str(tmp_path / "big.txt"),
            "--rollouts",
            "2",
            *(["--polish"] if TASKS[task].improve is not None else []),  # refused where the task has no local search
            "--json",
            "e.json",
            "--plot",
            "e.png",
        ],
    )
    assert evaluated.exit_code == 0, evaluated.output
    decodings = {"local-max"} if task in ("mis", "mvc") else {"sampled", "deterministic"}
    assert all(decoding in evaluated.output for decoding in decodings)
    record = json.loads((tmp_path / "e.json").read_text())[0]
    assert record["nodes"] == 3000 and set(record["decodings"]) == decodings
    assert all(decoding["rollouts"] == 2 for decoding in record["decodings"].values())
    assert (tmp_path / "e.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tasks_lists_every_task_with_head_and_baselines():
    result = runner.invoke(app, ["tasks"])
    assert result.exit_code == 0
    for line in (
        "mis           node-wise",
        "mvc           node-choice",
        "mvc-weighted  node-choice",
        "maxcut        node-wise",
        "epidemic      graph-level",
    ):
        assert line in result.output
    assert "greedy-min-degree" in result.output and "graphtransfer/MVC-v0" in result.output


def test_a_rollout_buffer_that_cannot_fit_is_refused_with_an_n_steps_that_fits(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHTRANSFER_MEMORY_LIMIT_MB", "1")
    result = runner.invoke(app, ["train", "--graphs", "small", "--n-steps", "4096", "--out", str(tmp_path / "m")])
    assert result.exit_code == 2
    assert "the rollout buffer needs" in result.stderr and "use n_steps=" in result.stderr
    assert not (tmp_path / "m").exists()


@pytest.mark.slow
def test_transfer_can_fine_tune_on_the_destination(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # SB3 without a logger of ours litters the temp dir
    write_edge_list(barabasi_albert(1500, 3, seed=2), tmp_path / "big.txt")
    assert runner.invoke(app, ["train", "--graphs", "small", "--steps", "128", "--n-envs", "4", "--no-progress"]).exit_code == 0
    moved = runner.invoke(app, ["transfer", "--src", "small", "--dst", str(tmp_path / "big.txt"), "--finetune-steps", "8"])
    assert moved.exit_code == 0, moved.output
    assert "fine-tuned 8 steps" in moved.output
    meta = json.loads((tmp_path / "runs/mis/big/config.json").read_text())
    assert meta["transferred"]["finetune"]["steps"] == 8
    assert not list(temp.glob("SB3-*"))


@pytest.mark.parametrize("command", ["train", "transfer", "predict", "eval"])
def test_max_nodes_per_batch_has_help_with_an_example(command):
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    assert "same results, in less memory (e.g. --max-nodes-per-batch 50000)" in result.output
    examples = [line for line in result.output.splitlines() if f"graphtransfer {command} " in line]
    assert any("--max-nodes-per-batch" in line for line in examples)


@pytest.mark.parametrize("value", ["0", "-3", "lots", "2.5"])
@pytest.mark.parametrize(
    "command",
    [
        ["train", "--graphs", "small"],
        ["transfer", "--src", "small", "--dst", "large"],
        ["predict", "--model", "m", "--graph", "small", "--out", "o.csv"],
        ["eval", "--model", "m", "--graphs", "small"],
    ],
)
def test_a_bad_max_nodes_per_batch_is_a_one_line_error(command, value, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*command, "--max-nodes-per-batch", value])
    assert result.exit_code == 2
    key = "runtime" if command[0] == "train" else "Runtime"  # a run setting, or the parameter object of a solve
    problem = f"{value} must be at least 1" if value.lstrip("-").isdigit() else f"expected an integer, got {value!r}"
    assert result.stderr == f"error: {key}.max_nodes_per_batch (--max-nodes-per-batch): {problem}\n"
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_a_node_budget_changes_no_prediction_and_bounds_fine_tuning(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_edge_list(barabasi_albert(3000, 3, seed=5), tmp_path / "big.txt")
    trained = runner.invoke(
        app, ["train", "--graphs", "small", "--steps", "128", "--n-envs", "2", "--width", "16", "--max-nodes-per-batch", "100"]
    )
    assert trained.exit_code == 0, trained.output
    assert json.loads((tmp_path / "runs/mis/small/config.json").read_text())["config"]["runtime"]["max_nodes_per_batch"] == 100
    solutions = []
    for budget in ([], ["--max-nodes-per-batch", "700"]):
        out = tmp_path / f"s{len(solutions)}.csv"
        predicted = runner.invoke(app, ["predict", "--model", "runs/mis/small", "--graph", "big.txt", "--out", str(out), *budget])
        assert predicted.exit_code == 0, predicted.output
        solutions.append(out.read_text())
    assert solutions[0] == solutions[1]
    moved = runner.invoke(app, ["transfer", "--src", "small", "--dst", "big.txt", "--finetune-steps", "4", "--max-nodes-per-batch", "1000"])
    assert moved.exit_code == 0, moved.output
    assert "fine-tuned 4 steps" in moved.output


def _commands(group):
    """(path, click command) for every command of the Typer app, subcommands included."""
    import typer
    import typer.main

    root = typer.main.get_command(group)
    stack = [((), root)]
    while stack:
        path, command = stack.pop()
        if hasattr(command, "list_commands"):  # a group; graphs makes its commands on first use
            ctx = typer.Context(command)
            stack += [((*path, name), command.get_command(ctx, name)) for name in command.list_commands(ctx)]
        else:
            yield path, command


@pytest.mark.parametrize("path,command", list(_commands(app)), ids=lambda p: " ".join(p) if isinstance(p, tuple) else "")
def test_every_option_help_is_shown_whole(path, command):
    """Rich reads [brackets] in help text as markup and drops them (write \\[ for a bracket); every help must survive intact."""
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "2000"})
    assert result.exit_code == 0
    shown = " ".join(result.output.replace("│", " ").split())
    for param in command.params:
        if getattr(param, "help", None):
            assert " ".join(param.help.replace("\\[", "[").split()) in shown, f"{' '.join(path)} {param.name}"


@pytest.mark.parametrize("task", ["mis", "mvc"])
def test_predict_writes_the_same_solution_on_one_thread_and_on_every_core(task, tiny_model, tmp_path):
    """``--threads`` defaults to every core; the numbers must not depend on it."""
    write_edge_list(barabasi_albert(3000, 4, 2), tmp_path / "g.txt")
    solutions = []
    for threads in (["--threads", "1"], []):
        out = tmp_path / f"s{len(solutions)}.csv"
        command = ["predict", "--model", str(tiny_model(task)), "--graph", str(tmp_path / "g.txt"), "--out", str(out), *threads]
        result = runner.invoke(app, command)
        assert result.exit_code == 0, result.output
        solutions.append(out.read_text())
    assert solutions[0] == solutions[1]


def test_threads_default_to_one_below_10000_nodes_and_every_free_core_above(monkeypatch):
    import importlib

    import torch

    common = importlib.import_module("graphtransfer.cli.common")
    monkeypatch.setattr(common, "free_cores", lambda: 2)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: chosen.append(n))
    chosen = []
    common.use_threads(None, 9_999), common.use_threads(None, 10_000), common.use_threads(None), common.use_threads(3, 50)
    assert chosen == [1, 2, 2, 3]


def test_zero_threads_is_refused_not_read_as_the_default(tiny_model, tmp_path):
    command = ["predict", "--model", str(tiny_model("mis")), "--graph", "small", "--out", str(tmp_path / "o.csv"), "--threads", "0"]
    result = runner.invoke(app, command)
    assert result.exit_code == 2 and result.stderr.strip() == "error: Runtime.threads (--threads): 0 must be at least 1"


def test_help_in_a_pipe_keeps_the_examples_on_one_line():
    import os
    import subprocess
    import sys
    from pathlib import Path

    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH")}
    script = Path(sys.executable).parent / "graphtransfer"
    result = subprocess.run([str(script), "eval", "--help"], capture_output=True, text=True, env=environment, check=True)
    example = "graphtransfer eval --model runs/mis/small --graphs evalset/ --workers 2 --max-nodes-per-batch 50000"
    assert example in result.stdout


def test_predict_without_reductions_writes_a_maximal_independent_set(tiny_model, tmp_path):
    from .brute_force import is_maximal_independent

    graph = barabasi_albert(300, 2, 5)
    write_edge_list(graph, tmp_path / "g.txt")
    command = ["predict", "--model", str(tiny_model("mis")), "--graph", str(tmp_path / "g.txt"), "--out", str(tmp_path / "s.csv")]
    result = runner.invoke(app, [*command, "--no-reductions", "--rollouts", "1"])
    assert result.exit_code == 0, result.output
    chosen = np.loadtxt(tmp_path / "s.csv", delimiter=",", skiprows=1, dtype=np.int64)
    assert is_maximal_independent(graph, chosen[np.argsort(chosen[:, 0]), 1].astype(bool))


def test_the_gpu_running_out_of_memory_is_one_line_and_exit_code_1(capsys):
    """torch's CUDA out-of-memory error (a RuntimeError) becomes one line naming the fixes; any other
    RuntimeError is a bug and keeps its traceback."""
    import torch

    from graphtransfer.cli.common import friendly_errors

    @friendly_errors
    def solve_on_a_small_gpu():
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    @friendly_errors
    def broken():
        raise RuntimeError("a bug")

    with pytest.raises(typer.Exit) as exited:
        solve_on_a_small_gpu()
    err = capsys.readouterr().err
    assert exited.value.exit_code == 1 and err.count("\n") == 1
    assert err.startswith("error: the GPU ran out of memory") and "--device cpu" in err
    with pytest.raises(RuntimeError, match="a bug"):
        broken()
