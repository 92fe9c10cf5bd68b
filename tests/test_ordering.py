"""Node orders: the locality renumbering (graphs.ordering) and solving in it with the solution put
back in the graph's own order (solve.ordering), through the library and the real CLI."""

import numpy as np
import pytest
from typer.testing import CliRunner

import graphtransfer.solve.ordering as solve_ordering
from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.cli import app
from graphtransfer.config import Decoding, RunConfig
from graphtransfer.graphs import delaunay, erdos_renyi, read_graph, write_graph
from graphtransfer.graphs.graph import from_edges, with_ids
from graphtransfer.graphs.ordering import better_order, grows_like_an_expander, locality_order, mean_span, renumbered
from graphtransfer.reporting.report import rows_to_json
from graphtransfer.solve.evaluate import EvalRow
from graphtransfer.solve.predict import predict_graph
from graphtransfer.tasks.mis.env import is_independent_set
from tests.brute_force import is_maximal_independent

runner = CliRunner()


def shuffled(graph, seed=0):
    """``graph`` with its nodes numbered at random, as a mesh's file may list them."""
    new_number = np.random.default_rng(seed).permutation(graph.num_nodes)
    edges = new_number[graph.edge_index]
    shuffled_graph, _, _ = from_edges(edges[0], edges[1], graph.num_nodes, graph.name)
    return shuffled_graph


def edges_by_id(graph):
    return {(graph.node_ids[a], graph.node_ids[b]) for a, b in graph.edge_index.T.tolist()}


def path_graph(n):
    graph, _, _ = from_edges(np.arange(n - 1), np.arange(1, n), n, "path")
    return graph


def test_locality_order_numbers_a_shuffled_path_consecutively():
    graph = shuffled(path_graph(50))
    order = locality_order(graph.edge_index, graph.num_nodes)
    assert sorted(order.tolist()) == list(range(50))  # a permutation
    assert mean_span(renumbered(graph, order).edge_index) == 1.0  # every edge joins consecutive numbers
    assert mean_span(graph.edge_index) > 5


def grid(side, seed=0):
    """A ``side`` x ``side`` grid with its nodes numbered at random."""
    ids = np.random.default_rng(seed).permutation(side * side).reshape(side, side)
    a = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    b = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    graph, _, _ = from_edges(a, b, side * side, "grid")
    return graph


def test_renumbered_keeps_every_edge_and_the_graphs_own_ids():
    graph = with_ids(shuffled(path_graph(6)), np.array([10, 20, 30, 40, 50, 60]))
    order = np.array([3, 0, 5, 1, 4, 2])
    new = renumbered(graph, order)
    assert new.node_ids.tolist() == [40, 10, 60, 20, 50, 30]  # new node k is old node order[k], with its id
    assert edges_by_id(new) == edges_by_id(graph)
    keys = new.edge_index[1] * 6 + new.edge_index[0]
    assert (np.diff(keys) > 0).all()  # listed by destination, then source


def test_expanders_are_told_from_graphs_with_locality():
    assert grows_like_an_expander(erdos_renyi(20000, 8.0, 0))  # balls grow about 7x a step
    assert not grows_like_an_expander(grid(150))  # balls grow by a ring
    assert not grows_like_an_expander(shuffled(delaunay(20000, 0)))


def test_better_order_renumbers_a_shuffled_mesh_and_keeps_random_and_local_graphs():
    mesh = shuffled(delaunay(3000, 0))
    order = better_order(mesh)
    assert order is not None
    assert mean_span(renumbered(mesh, order).edge_index) * 4 <= mean_span(mesh.edge_index)
    assert better_order(erdos_renyi(3000, 8.0, 0)) is None  # no locality to recover
    assert better_order(grid(60)) is not None
    assert better_order(renumbered(mesh, order)) is None  # local as numbered already


def test_solving_order_renumbers_only_large_graphs_of_tasks_that_allow_it(monkeypatch):
    mesh = shuffled(delaunay(3000, 0))
    monkeypatch.setattr(solve_ordering, "RENUMBER_FROM_NODES", 1000)
    assert solve_ordering.solving_order(RunConfig(task="mis"), mesh).order is not None
    assert solve_ordering.solving_order(RunConfig(task="mvc"), mesh).order is not None
    assert solve_ordering.solving_order(RunConfig(task="mis"), mesh, "given").order is None
    assert solve_ordering.solving_order(RunConfig(task="mvc-weighted"), mesh).order is None  # weights follow numbers
    assert solve_ordering.solving_order(RunConfig(task="maxcut"), mesh).order is None
    assert solve_ordering.solving_order(RunConfig(env="examples.coverage:CoverageEnv"), mesh).order is None  # user envs never
    monkeypatch.setattr(solve_ordering, "RENUMBER_FROM_NODES", 5000)
    assert solve_ordering.solving_order(RunConfig(task="mis"), mesh).order is None  # too small to gain


def test_a_renumbered_solve_is_a_maximal_independent_set_in_the_graphs_own_order(tiny_model, monkeypatch):
    mesh = shuffled(delaunay(3000, 1))
    checkpoint = read_checkpoint(tiny_model("mis"))
    given, _ = predict_graph(checkpoint, mesh, Decoding(node_order="given", rollouts=1))
    monkeypatch.setattr(solve_ordering, "RENUMBER_FROM_NODES", 1000)
    renumbered_run, _ = predict_graph(checkpoint, mesh, Decoding(rollouts=1))
    assert renumbered_run.renumbered and not given.renumbered
    chosen = renumbered_run.solution
    assert chosen.shape == (mesh.num_nodes,)
    assert is_independent_set(mesh, chosen) and is_maximal_independent(mesh, chosen)
    assert is_maximal_independent(mesh, renumbered_run.finished.solution)
    assert abs(renumbered_run.objective - given.objective) <= 0.05 * given.objective  # as good as another seed
    unchanged, _ = predict_graph(checkpoint, mesh, Decoding(node_order="given", rollouts=1))
    assert np.array_equal(unchanged.solution, given.solution)  # --node-order given: the decoding of before
    rows = rows_to_json([EvalRow(mesh, {"local-max": renumbered_run, "given": given}, [])])
    assert [d["renumbered"] for d in rows[0]["decodings"].values()] == [True, False]  # eval's JSON says which order ran


def test_predict_cli_writes_a_renumbered_solution_in_the_files_ids(tiny_model, tmp_path, monkeypatch):
    mesh = with_ids(shuffled(delaunay(6000, 2)), np.arange(6000) * 7 + 3)
    graph_file = tmp_path / "mesh.txt"
    write_graph(mesh, graph_file)
    monkeypatch.setattr(solve_ordering, "RENUMBER_FROM_NODES", 1000)
    out = tmp_path / "s.csv"
    result = runner.invoke(app, ["predict", "--model", str(tiny_model("mis")), "--graph", str(graph_file), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "solved with the nodes renumbered for locality (--node-order auto)" in result.output
    rows = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.int64)
    read = read_graph(graph_file)
    assert rows[:, 0].tolist() == read.ids().tolist()  # rows in the file's order, named by its ids
    assert is_maximal_independent(read, rows[:, 1].astype(bool))


def test_an_unknown_node_order_is_a_usage_error(tiny_model, tmp_path):
    result = runner.invoke(
        app, ["predict", "--model", str(tiny_model("mis")), "--graph", "small", "--out", str(tmp_path / "s"), "--node-order", "rcm"]
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: Decoding.node_order (--node-order): 'rcm' is not one of auto, given"
    with pytest.raises(Exception, match="node order 'rcm'; choose one of auto, given"):
        solve_ordering.solving_order(RunConfig(task="mis"), path_graph(5), "rcm")


def test_eval_takes_a_node_order_and_refuses_an_unknown_one(tiny_model):
    model = str(tiny_model("mis"))
    result = runner.invoke(app, ["eval", "--model", model, "--graphs", "small", "--rollouts", "1", "--node-order", "given"])
    assert result.exit_code == 0, result.output
    assert "er-20.txt" in result.output
    result = runner.invoke(app, ["eval", "--model", model, "--graphs", "small", "--node-order", "sorted"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: Decoding.node_order (--node-order): 'sorted' is not one of auto, given"
