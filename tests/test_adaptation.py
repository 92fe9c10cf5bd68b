"""transfer --adapt: training on subgraphs of the destination within a wall-clock budget."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.errors import UsageError
from graphtransfer.graphs import erdos_renyi, write_edge_list
from graphtransfer.transferring.adaptation import adaptation_graphs, check_adapt_seconds
from graphtransfer.transferring.transfer import transfer

runner = CliRunner()

BUDGET = 5.0
MARGIN = 3.0
"""what the budget may be overrun by: one env step or one minibatch, on a machine other jobs keep
busy (the check is that adaptation stops, not how fast it runs)"""


@pytest.fixture
def destination(tmp_path):
    path = tmp_path / "dest.txt"
    write_edge_list(erdos_renyi(2000, 8.0, 3), path)
    return path


@pytest.mark.slow
def test_adaptation_stops_within_its_budget_and_saves_the_better_model(tiny_model, destination, tmp_path):
    out = tmp_path / "adapted"
    command = ["transfer", "--src", str(tiny_model("mis")), "--dst", str(destination), "--adapt", str(BUDGET), "--out", str(out)]
    result = runner.invoke(app, command)
    assert result.exit_code == 0, result.output
    assert "zero-shot on the destination graphs" in result.output
    assert f"(budget {BUDGET:g} s) on 8 subgraphs, then:" in result.output
    record = json.loads((out / "config.json").read_text())["transferred"]["adapt"]
    assert record["seconds"] <= BUDGET + MARGIN
    assert record["subgraphs"] == [1000] * 8
    if record["steps"]:
        kept = "adapted" if record["adapted_score"] >= record["zero_shot_score"] else "zero-shot"
    else:  # a busy machine can take the whole budget for one rollout of 1,000-node balls: nothing trained, nothing changed
        kept = "zero-shot"
        assert "the budget ended before the first update; raise --adapt" in result.output
    assert record["kept"] == kept
    assert f"kept the {kept} model" in result.output
    saved = transfer(out, destination, folder=tmp_path / "again", log=lambda _: None)
    meta = json.loads((out / "config.json").read_text())["transferred"]
    expected = record["after"] if kept == "adapted" else meta["zero_shot"]  # the zero-shot weights are put back
    assert [r.policy.objective for r in saved.rows] == [row["policy"] for row in expected]


@pytest.mark.slow
def test_adaptation_on_small_balls_trains_within_its_budget(tiny_model, destination, tmp_path):
    result = transfer(tiny_model("mis"), destination, folder=tmp_path / "m", adapt_seconds=BUDGET, adapt_nodes=150, log=lambda _: None)
    assert result.adapted.seconds <= BUDGET + MARGIN
    assert result.adapted.steps > 0  # it trained, not only sampled
    assert [g.num_nodes for g in result.adapted.subgraphs] == [150] * 8


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "1e12", "lots", "", "1,5"])
def test_a_bad_adapt_budget_is_a_one_line_error_before_anything_runs(value, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["transfer", "--src", "small", "--dst", "large", "--adapt", value])
    assert result.exit_code == 2
    assert result.stderr == (f"error: --adapt {value!r} must be a number of seconds above 0 and at most 604800 (a week), e.g. --adapt 60\n")
    assert not (tmp_path / "runs").exists()


def test_adapt_and_finetune_steps_together_are_refused(tiny_model, destination, tmp_path):
    result = runner.invoke(
        app,
        [
            "transfer",
            "--src",
            str(tiny_model("mis")),
            "--dst",
            str(destination),
            "--adapt",
            "2",
            "--finetune-steps",
            "4",
            "--out",
            str(tmp_path / "m"),
        ],
    )
    assert result.exit_code == 2
    assert result.stderr == "error: adapting and fine-tuning both train on the destination; pick one (--adapt or --finetune-steps)\n"
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), 10**9, "10", None, True])
def test_the_library_refuses_a_bad_budget_by_value(value):
    with pytest.raises(UsageError, match="adapt seconds"):
        check_adapt_seconds(value)


def test_adaptation_graphs_are_shared_out_over_the_destination_graphs():
    graphs = [erdos_renyi(3000, 4.0, 0), erdos_renyi(500, 4.0, 1), erdos_renyi(1500, 4.0, 2)]
    sampled = adaptation_graphs(graphs, seed=0)
    assert [g.num_nodes for g in sampled] == [1000] * 3 + [500] * 3 + [1000] * 2
    assert np.array_equal(adaptation_graphs(graphs, seed=0)[0].edge_index, sampled[0].edge_index)
