"""One option vocabulary: ``export --model`` and ``plot --model``, and ``--device`` for predict, eval
and transfer as for train."""

import pytest
import torch
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.graphs import barabasi_albert, write_edge_list
from graphtransfer.nn.devices import resolve_device

runner = CliRunner()
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without a CUDA GPU")


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.output
    return lines[0]


def test_export_and_plot_take_the_model_folder_as_model_only(tiny_model, tmp_path):
    model = str(tiny_model("mis"))
    exported = runner.invoke(app, ["export", model, "--sb3", str(tmp_path / "old.zip")])
    assert exported.exit_code == 2 and not (tmp_path / "old.zip").exists()
    plotted = runner.invoke(app, ["plot", "--out", str(tmp_path / "old.png")])
    assert one_error_line(plotted) == "error: plot: name the model folder with --model, e.g. graphtransfer plot --model runs/mis/small"
    new = runner.invoke(app, ["plot", "--model", model, "--out", str(tmp_path / "new.png")])
    assert new.exit_code == 0 and new.stderr == "" and (tmp_path / "new.png").is_file()


@pytest.mark.parametrize("command", [["export", "--sb3", "m.zip"], ["plot", "--out", "m.png"]])
def test_the_model_folder_named_twice_or_not_at_all_is_refused(command, tiny_model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = str(tiny_model("mis"))
    twice = runner.invoke(app, [*command, "--model", model, model])
    assert twice.exit_code == 2 and "unexpected extra argument" in twice.output
    missing = one_error_line(runner.invoke(app, command))
    assert missing == f"error: {command[0]}: name the model folder with --model, e.g. graphtransfer {command[0]} --model runs/mis/small"
    assert list(tmp_path.iterdir()) == []  # nothing written, nothing created


def predict(model, graph, out, *extra):
    return runner.invoke(app, ["predict", "--model", str(model), "--graph", str(graph), "--out", str(out), "--rollouts", "1", *extra])


def test_predict_and_eval_run_on_the_device_named(tiny_model, tmp_path):
    write_edge_list(barabasi_albert(300, 3, 1), tmp_path / "g.txt")
    model = tiny_model("mis")
    solutions = []
    for device in ([], ["--device", "cpu"], ["--device", "auto"]):  # auto: cpu on a machine without a GPU
        out = tmp_path / f"s{len(solutions)}.csv"
        result = predict(model, tmp_path / "g.txt", out, *device)
        assert result.exit_code == 0, result.output
        solutions.append(out.read_text())
    assert solutions[0] == solutions[1] == solutions[2]
    evaluated = runner.invoke(
        app, ["eval", "--model", str(model), "--graphs", str(tmp_path / "g.txt"), "--rollouts", "1", "--device", "cpu"]
    )
    assert evaluated.exit_code == 0, evaluated.output
    assert "g.txt" in evaluated.stdout


@no_cuda
def test_auto_is_the_cpu_without_a_gpu():
    assert resolve_device("auto") == "cpu" and resolve_device("cpu") == "cpu"


@no_cuda
def test_cuda_without_a_gpu_is_refused_before_anything_is_written(tiny_model, tmp_path):
    write_edge_list(barabasi_albert(50, 2, 1), tmp_path / "g.txt")
    expected = f"error: device cuda: torch {torch.__version__} sees no CUDA GPU on this machine; use --device cpu or auto"
    assert one_error_line(predict(tiny_model("mis"), tmp_path / "g.txt", tmp_path / "s.csv", "--device", "cuda")) == expected
    command = ["eval", "--model", str(tiny_model("mis")), "--graphs", str(tmp_path / "g.txt"), "--json", str(tmp_path / "e.json")]
    assert one_error_line(runner.invoke(app, [*command, "--device", "cuda"])) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.txt"]


@pytest.mark.parametrize("device", ["gpu", "CUDA", "1", ""])
def test_a_device_that_is_none_of_the_three_is_one_line(device, tiny_model, tmp_path):
    """predict, eval and transfer (below) check --device as train does, from the schema."""
    expected = f"error: Runtime.device (--device): {device!r} is not one of auto, cpu, cuda"
    assert one_error_line(predict(tiny_model("mis"), "small", tmp_path / "s.csv", "--device", device)) == expected
    assert not (tmp_path / "s.csv").exists()
    evaluated = runner.invoke(app, ["eval", "--model", str(tiny_model("mis")), "--graphs", "small", "--device", device])
    assert one_error_line(evaluated) == expected


def transfer(model, graph, out, *extra):
    command = ["transfer", "--src", str(model), "--dst", str(graph), "--out", str(out), "--threads", "1", "--seed", "3", *extra]
    return runner.invoke(app, command)


def test_transfer_evaluates_and_fine_tunes_on_the_device_named(tiny_model, tmp_path):
    """auto: cuda on a machine with a GPU (the zero-shot rows, the fine-tuning and the rows after it), else cpu."""
    write_edge_list(barabasi_albert(40, 2, 1), tmp_path / "g.txt")
    options = ["--device", "auto", "--finetune-steps", "4", "--max-passes", "2"]
    result = transfer(tiny_model("mis"), tmp_path / "g.txt", tmp_path / "m", *options)
    assert result.exit_code == 0, result.output
    assert "fine-tuned 4 steps" in result.stdout and result.stdout.count("g.txt") == 2
    assert next((tmp_path / "m").glob("model-*.safetensors")).stat().st_size > 0


def test_fine_tuning_takes_the_device_given_not_the_source_runs():
    from graphtransfer.config import RunConfig, Runtime
    from graphtransfer.graphs import load_graphs
    from graphtransfer.training.loop import finetune_config

    trained_on_cuda = RunConfig(runtime=Runtime(device="cuda"))
    tuned = finetune_config(trained_on_cuda, load_graphs("small"), 8, Runtime(device="cpu"))
    assert tuned.runtime.device == "cpu"


@no_cuda
def test_transfer_on_cuda_without_a_gpu_is_refused_before_anything_is_read_or_written(tiny_model, tmp_path):
    import graphtransfer

    write_edge_list(barabasi_albert(50, 2, 1), tmp_path / "g.txt")
    expected = f"error: device cuda: torch {torch.__version__} sees no CUDA GPU on this machine; use --device cpu or auto"
    for extra in ([], ["--finetune-steps", "8"], ["--adapt", "5"]):
        assert one_error_line(transfer(tiny_model("mis"), tmp_path / "g.txt", tmp_path / "m", "--device", "cuda", *extra)) == expected
    with pytest.raises(graphtransfer.errors.UsageError, match="sees no CUDA GPU"):
        graphtransfer.transfer(tiny_model("mis"), tmp_path / "no-such-graph.txt", folder=tmp_path / "m", device="cuda")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.txt"]


@pytest.mark.parametrize("device", ["gpu", "CUDA", ""])
def test_transfer_on_a_device_that_is_none_of_the_three_is_one_line(device, tiny_model, tmp_path):
    line = one_error_line(transfer(tiny_model("mis"), "small", tmp_path / "m", "--device", device))
    assert line == f"error: Runtime.device (--device): {device!r} is not one of auto, cpu, cuda"
    assert not (tmp_path / "m").exists()
