"""`graphtransfer transfer --seed`: one seed for the evaluations' rollouts and the fine-tuning,
recorded in the saved config; a bad seed is one line before anything is read or written."""

import json

import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.graphs import erdos_renyi, write_graph

runner = CliRunner()


def transfer(model, graph, out, *options):
    result = runner.invoke(app, ["transfer", "--src", str(model), "--dst", str(graph), "--out", str(out), "--threads", "1", *options])
    assert result.exit_code == 0, result.output
    return json.loads((out / "config.json").read_text()), result.stdout


def objectives(printed: str) -> list[str]:
    """Each printed row's graph, decoding and objective (not its seconds)."""
    return [" ".join(line.split()[:6]) for line in printed.splitlines() if "g.npz" in line]


def test_a_seed_repeats_and_is_recorded_with_the_fine_tuning(tiny_model, tmp_path):
    write_graph(erdos_renyi(120, 6.0, seed=2), tmp_path / "g.npz")
    model, graph = tiny_model("mis"), tmp_path / "g.npz"
    first, printed = transfer(model, graph, tmp_path / "a", "--seed", "7", "--finetune-steps", "32")
    again, printed_again = transfer(model, graph, tmp_path / "b", "--seed", "7", "--finetune-steps", "32")
    assert first["config"]["ppo"]["seed"] == again["config"]["ppo"]["seed"] == 7
    assert objectives(printed) == objectives(printed_again)  # zero-shot and fine-tuned rows alike
    weights = [next(folder.glob("model-*.safetensors")).read_bytes() for folder in (tmp_path / "a", tmp_path / "b")]
    assert weights[0] == weights[1]  # the same fine-tuning
    default, _ = transfer(model, graph, tmp_path / "c")
    source = json.loads((model / "config.json").read_text())
    assert default["config"]["ppo"]["seed"] == source["config"]["ppo"]["seed"]  # no --seed: the source's seed stays


@pytest.mark.parametrize(
    ("seed", "message"),
    [
        ("-1", "ppo.seed (--seed): -1 must be 0 or more"),
        ("4294967296", "ppo.seed (--seed): 4294967296 must be at most 4,294,967,295"),
        ("nan", "error: transfer: invalid value for '--seed'"),
        ("seven", "error: transfer: invalid value for '--seed'"),
    ],
)
def test_a_bad_seed_is_one_line_and_writes_nothing(tiny_model, tmp_path, seed, message):
    write_graph(erdos_renyi(60, 4.0, seed=1), tmp_path / "g.npz")
    result = runner.invoke(
        app, ["transfer", "--src", str(tiny_model("mis")), "--dst", str(tmp_path / "g.npz"), "--out", str(tmp_path / "o"), "--seed", seed]
    )
    assert result.exit_code == 2 and "Traceback" not in result.output and len(result.stderr.splitlines()) == 1
    assert message in " ".join(result.output.split())
    assert not (tmp_path / "o").exists()
