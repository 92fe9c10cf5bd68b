"""The path task's queries and decoding from the command line: ``eval --source/--target`` routes
the policy and Dijkstra between the nodes a user names (refusing what cannot be routed, as
``predict`` does), and the default decoding takes the policy's most likely moves."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.graphs import random_geometric, write_graph

runner = CliRunner()
# file ids that are not positions, lengths of the file's own, and a component of its own (70-80)
WEIGHTED = "10 20 1\n20 30 1\n30 40 1\n10 50 5\n50 40 1\n70 80 1\n"


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_eval_routes_the_policy_and_dijkstra_between_the_nodes_named(tiny_model, tmp_path):
    (tmp_path / "g.txt").write_text(WEIGHTED)
    model = tiny_model("path")
    answers = {}
    for query in ((), ("--source", "20", "--target", "50")):
        out = tmp_path / f"e{len(query)}.json"
        result = run("eval", "--model", model, "--graphs", tmp_path / "g.txt", "--rollouts", "1", "--json", out, *query)
        assert result.exit_code == 0, result.output
        record = json.loads(out.read_text())[0]
        assert all(decoding["feasible"] for decoding in record["decodings"].values())  # routed to the query's own ends
        answers[query] = record["baselines"]["dijkstra"]["objective"]
    assert answers[("--source", "20", "--target", "50")] == 3.0  # 20-30-40-50 in the file's lengths, not 20-10-50 (6)
    assert answers[()] != 3.0  # the graph's own query is another one: the options changed what was routed


EVAL_REFUSALS = {
    ("--source", "99", "--target", "50"): "--source '99': graph g.txt has no node with that id; its ids are 10..80, not contiguous",
    ("--source", "20", "--target", "20"): "--source and --target are both node '20'; a route needs two different nodes",
    ("--source", "20", "--target", "NaN"): "--target 'NaN': graph g.txt has no node with that id",
    ("--source", "1" + "0" * 40, "--target", "50"): "--source '1" + "0" * 40 + "': graph g.txt has no node with that id",
    ("--source", "2.5e1", "--target", "50"): "--source '2.5e1': graph g.txt has no node with that id",
    ("--source", "20", "--target", "80"): "--target '80' cannot be reached from --source '20': they lie in different components",
    ("--target", "50"): "--source and --target go together: give both, or neither for the graph's own query",
}


@pytest.mark.parametrize("args", EVAL_REFUSALS, ids=lambda args: " ".join(args))
def test_eval_refuses_a_query_it_cannot_route(tiny_model, tmp_path, args):
    (tmp_path / "g.txt").write_text(WEIGHTED)
    result = run("eval", "--model", tiny_model("path"), "--graphs", tmp_path / "g.txt", "--json", tmp_path / "e.json", *args)
    assert result.exit_code == 2 and result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.output
    assert EVAL_REFUSALS[args] in result.stderr
    assert "Traceback" not in result.output and not (tmp_path / "e.json").exists()


def test_eval_refuses_a_query_for_another_task_or_several_graphs(tiny_model, tmp_path):
    (tmp_path / "g.txt").write_text(WEIGHTED)
    query = ("--source", "20", "--target", "50")
    result = run("eval", "--model", tiny_model("matching"), "--graphs", tmp_path / "g.txt", *query)
    refusal = "--source and --target: the task must declare takes_query (built-in: path); matching does not, drop --source and --target"
    assert result.exit_code == 2 and result.stderr == f"error: {refusal}\n"
    result = run("eval", "--model", tiny_model("path"), "--graphs", "small", *query)
    assert result.exit_code == 2 and "--source and --target name nodes of one graph; --graphs names 24 graphs" in result.stderr
    result = run("eval", "--model", tiny_model("path"), "--graphs", "small", "--workers", "2", *query)
    # checked before the workers split the graphs between them
    assert result.exit_code == 2 and "--source and --target name nodes of one graph" in result.stderr


def _route(model, graph, out, *options) -> list[str]:
    result = run("predict", "--model", model, "--graph", graph, "--out", out, "--force", *options)
    assert result.exit_code == 0, result.output
    return out.read_text().splitlines()[1:]


def test_the_default_route_is_the_policys_most_likely_moves_whatever_the_seed(tiny_model, tmp_path):
    """Without --deterministic, predict takes the most likely moves: the seed changes nothing, and
    the route is the one --deterministic gives; --no-deterministic samples, seeded, and the seeds
    then give other routes."""
    write_graph(random_geometric(400, 6.0, 3), tmp_path / "g.npz")
    model, graph, out = tiny_model("path"), tmp_path / "g.npz", tmp_path / "r.csv"
    default = _route(model, graph, out, "--rollouts", "1")
    assert len(default) > 5  # a route long enough for samples to stray
    assert _route(model, graph, out, "--rollouts", "1", "--seed", "7") == default
    assert _route(model, graph, out, "--rollouts", "1", "--deterministic") == default
    sampled = [_route(model, graph, out, "--rollouts", "1", "--no-deterministic", "--seed", str(seed)) for seed in range(4)]
    assert any(route != default for route in sampled)
    assert _route(model, graph, out, "--rollouts", "1", "--no-deterministic", "--seed", "2") == sampled[2]  # seeded: repeats


def test_eval_reports_path_deterministic_first_and_sampled_beside_it(tiny_model, tmp_path):
    write_graph(random_geometric(200, 6.0, 1), tmp_path / "g.npz")
    rows = {}
    for flag in ("--deterministic", "--no-deterministic"):
        out = tmp_path / f"{flag}.json"
        result = run("eval", "--model", tiny_model("path"), "--graphs", tmp_path / "g.npz", "--rollouts", "1", flag, "--json", out)
        assert result.exit_code == 0, result.output
        rows[flag] = json.loads(out.read_text())[0]["decodings"]
    assert list(rows["--deterministic"]) == ["deterministic", "sampled"]
    assert list(rows["--no-deterministic"]) == ["deterministic"]
    assert rows["--no-deterministic"]["deterministic"]["objective"] == rows["--deterministic"]["deterministic"]["objective"]
    assert np.isfinite(rows["--deterministic"]["sampled"]["objective"])


def test_more_rollouts_sample_beside_the_most_likely_route_and_never_lengthen_it(tiny_model):
    """Rollout 0 is the default route; the others sample (the most likely moves would repeat it),
    so the best of several is at most as long, and repeats for one seed."""
    from graphtransfer import predict

    model, graph = tiny_model("path"), random_geometric(400, 6.0, 3)
    _, one = predict(model, graph, rollouts=1)
    _, several = predict(model, graph, rollouts=8)
    assert several.feasible and several.objective <= one.objective
    assert predict(model, graph, rollouts=8)[1].objective == several.objective
