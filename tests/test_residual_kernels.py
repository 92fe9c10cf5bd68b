"""The kernel of the residual graph between passes (graphtransfer.solve.residual_kernels): the
lift through a chain of kernels is exact, a decoding in kernels gives an independent, maximal set
and leaves the env as it found it, and the setting is checked where it comes in."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.config import Decoding
from graphtransfer.envs.base import GraphEnv
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph
from graphtransfer.graphs.generators import barabasi_albert, delaunay, erdos_renyi
from graphtransfer.graphs.graph import induced_subgraph
from graphtransfer.solve.evaluate import finish_rule
from graphtransfer.solve.inference import solve
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.solve.predict import predict_graph
from graphtransfer.solve.residual_kernels import EARLY_KERNEL_SHARE, Level, kernel_due, lifted, residual_graph, solve_in_kernels
from graphtransfer.tasks.mis.env import is_independent_set
from graphtransfer.tasks.mis.kernel import mis_kernel
from graphtransfer.tasks.mis.step import _BY_DESTINATION, BY_DESTINATION_KEPT, by_destination


def largest_set(graph: Graph) -> np.ndarray:
    """A largest independent set, exactly, by branching on a node of most degree (graphs of a few dozen nodes)."""
    neighbours: list[set[int]] = [set() for _ in range(graph.num_nodes)]
    for a, b in graph.edge_index.T.tolist():
        neighbours[a].add(b)

    def best(left: frozenset[int]) -> frozenset[int]:
        v = max(left, key=lambda x: len(neighbours[x] & left), default=None)
        if v is None or not neighbours[v] & left:
            return left  # no edge left: every node joins
        with_v = best(left - neighbours[v] - {v}) | {v}
        without = best(left - {v})
        return with_v if len(with_v) >= len(without) else without

    chosen = np.zeros(graph.num_nodes, dtype=bool)
    chosen[list(best(frozenset(range(graph.num_nodes))))] = True
    return chosen


def alpha(graph: Graph) -> int:
    return int(largest_set(graph).sum())


def maximal(graph: Graph, chosen: np.ndarray) -> bool:
    src, dst = graph.edge_index
    near = np.zeros(graph.num_nodes, dtype=bool)
    near[src[chosen[dst]]] = True
    return bool((chosen | near).all())


@pytest.mark.parametrize("seed", range(12))
def test_a_set_lifted_through_two_levels_of_kernels_is_as_large_as_the_exact_answer_allows(seed):
    """Level 0 takes some independent nodes of a graph; the residual graph (nodes neither taken nor
    beside a taken one) is shrunk to its kernel, whose largest set (found exactly) is lifted: the
    lifted set is independent, maximal, and exactly the taken nodes plus the residual's independence
    number, folds and crowns included."""
    rng = np.random.default_rng(seed)
    graph = erdos_renyi(40, 4.5, seed)  # kernels of 10-30 nodes with folds, or decided whole
    taken = np.zeros(graph.num_nodes, dtype=bool)
    for v in rng.permutation(graph.num_nodes)[:3]:  # three nodes, kept independent
        src, dst = graph.edge_index
        if not taken[src[dst == v]].any():
            taken[v] = True
    near = np.zeros(graph.num_nodes, dtype=bool)
    near[graph.edge_index[0][taken[graph.edge_index[1]]]] = True
    residual, undecided = induced_subgraph(graph, ~taken & ~near)
    kernel = mis_kernel(residual)
    last = residual if kernel is None else kernel.graph
    assert last.num_nodes <= 40  # small enough to solve exactly
    levels = [Level(None, taken, undecided), Level(kernel, largest_set(last), np.array([], dtype=np.int64))]
    chosen = lifted(levels)
    assert is_independent_set(graph, chosen) and maximal(graph, chosen)
    assert chosen.sum() == taken.sum() + alpha(residual)


def decoded(graph: Graph, **decoding) -> tuple:
    loaded = policy_for_graphs(read_checkpoint("mis"), [graph], max_passes=decoding.get("max_passes"))
    env = loaded.env
    one = Decoding(rollouts=1, **decoding)
    run = solve_in_kernels(loaded.policy, env, one, mis_kernel, finish_rule(loaded.checkpoint.config))
    return run, env


def test_a_decoding_in_kernels_gives_an_independent_maximal_set_and_leaves_the_env_on_its_graph():
    graph = erdos_renyi(2_000, 6.0, 1)
    run, env = decoded(graph, kernel_every=2)
    assert run.feasible and run.finished is not None and run.finished.by_rule == run.finished.for_maximality == 0
    assert is_independent_set(graph, run.solution) and maximal(graph, run.solution)
    assert run.objective == run.solution.sum()
    assert env.unwrapped.graph is graph and env.unwrapped.graphs == [graph] and env.unwrapped.horizon == 256
    again, _ = decoded(graph, kernel_every=2)
    assert np.array_equal(again.solution, run.solution)  # seeded: the same set every time


def test_a_solve_reads_unpadded_observations_the_same_set_and_the_env_padded_again(monkeypatch):
    """A node-wise local-max solve turns the env's padding off while it runs: its observations are
    the padded ones' real rows and columns, the set is the one padded observations give, and the
    env pads again afterwards (SB3 needs the spaces' shapes)."""
    graph = erdos_renyi(1_500, 5.0, 3)
    run, env = decoded(graph, kernel_every=3)
    task = env.unwrapped
    assert task.padded
    padded = task.reset(seed=0)[0]
    task.padded = False
    unpadded = task.reset(seed=0)[0]
    task.padded = True
    nodes, edges = int(padded["num_nodes"][0]), int(padded["num_edges"][0])
    assert unpadded["x"].shape == (nodes, task.num_features) and unpadded["edge_index"].shape == (2, edges)
    assert np.array_equal(unpadded["x"], padded["x"][:nodes]) and np.array_equal(unpadded["edge_index"], padded["edge_index"][:, :edges])
    assert padded["edge_index"].shape[1] == task.max_edges and padded["x"].shape[0] == task.max_nodes
    monkeypatch.setattr(GraphEnv, "_unpadded_observation", padded_observation)
    again, _ = decoded(graph, kernel_every=3)
    assert np.array_equal(again.solution, run.solution) and again.passes == run.passes


@pytest.mark.parametrize("task", ["mis", "mvc"])
def test_the_residual_graph_is_the_undecided_part_read_from_the_observed_edges(task):
    """Between stretches of passes the graph left is read from the edges the env last showed: the
    active nodes' induced graph, the same edges as cut from the whole graph; MIS's come ordered by
    destination, so its adjacency is read without a sort, the same as with one."""
    graph = erdos_renyi(3_000, 6.0, 5)
    loaded = policy_for_graphs(read_checkpoint(task), [graph])
    env, one = loaded.env, Decoding(rollouts=1)
    env.unwrapped.horizon = 2
    solve(loaded.policy, env, one.deterministic, one.seed, one.commit_fraction, None, one.method, 1.0, one.reductions)
    residual, nodes = residual_graph(env.unwrapped)
    expected, expected_nodes = induced_subgraph(graph, env.unwrapped.active_nodes())
    assert 0 < nodes.size < graph.num_nodes and np.array_equal(nodes, expected_nodes)
    assert edge_set(residual) == edge_set(expected) and residual.edge_index.shape == expected.edge_index.shape
    if task == "mis":
        assert (np.diff(residual.edge_index[1]) >= 0).all()
        indptr, indices = residual.csr()
        shuffled = residual.edge_index[:, np.random.default_rng(0).permutation(residual.edge_index.shape[1])]
        sorted_indptr, sorted_indices = Graph(shuffled, residual.num_nodes).csr()
        assert np.array_equal(indptr, sorted_indptr)
        assert all(set(indices[a:b].tolist()) == set(sorted_indices[a:b].tolist()) for a, b in zip(indptr[:-1], indptr[1:], strict=True))


def test_a_weighted_graphs_residual_is_cut_from_the_graph_with_its_weights():
    graph = erdos_renyi(2_000, 6.0, 6)
    weighted = Graph(graph.edge_index, graph.num_nodes, node_weight=np.arange(graph.num_nodes, dtype=np.float64))
    loaded = policy_for_graphs(read_checkpoint("mis"), [weighted])
    env, one = loaded.env, Decoding(rollouts=1)
    env.unwrapped.horizon = 2
    solve(loaded.policy, env, one.deterministic, one.seed, one.commit_fraction, None, one.method, 1.0, one.reductions)
    residual, nodes = residual_graph(env.unwrapped)
    assert 0 < nodes.size < graph.num_nodes and np.array_equal(residual.node_weight, nodes.astype(np.float64))
    assert edge_set(residual) == edge_set(induced_subgraph(weighted, env.unwrapped.active_nodes())[0])


def edge_set(graph: Graph) -> set[tuple[int, int]]:
    return set(map(tuple, graph.edge_index.T.tolist()))


def padded_observation(task, edges):
    """In place of :meth:`GraphEnv._unpadded_observation`: the observation as it is with padding on."""
    task.padded = True
    try:
        return task._observation()
    finally:
        task.padded = False


def star_beside_clique(leaves: int, clique: int) -> Graph:
    """A star of ``leaves`` leaves (degree 1) beside a clique of ``clique`` nodes (degree ``clique - 1``)."""
    edges = [(0, leaf) for leaf in range(1, leaves + 1)]
    first = leaves + 1
    edges += [(first + a, first + b) for a in range(clique) for b in range(a + 1, clique)]
    pairs = np.array(edges).T
    return Graph(np.concatenate([pairs, pairs[::-1]], axis=1), first + clique)


@pytest.mark.parametrize("task", ["mis", "mvc"])
@pytest.mark.parametrize(("leaves", "due"), [(1, False), (3, True)])
def test_the_kernel_is_due_once_enough_of_the_residual_graph_has_at_most_two_neighbours(task, leaves, due):
    """A star beside a clique: 3 leaves and their hub (degree 3) make 3 of 10 nodes of degree <= 2
    beside a clique of 7 (over the share); 1 leaf and its hub, an edge, make 2 of 14 beside a clique
    of 12 (under it)."""
    clique = 7 if due else 12
    graph = star_beside_clique(leaves, clique)
    assert bool(np.count_nonzero(graph.degrees() <= 2) >= EARLY_KERNEL_SHARE * graph.num_nodes) is due
    env = policy_for_graphs(read_checkpoint(task), [graph]).env.unwrapped
    env.reset(seed=0)
    assert np.array_equal(env.residual_degree(), graph.degrees())
    assert kernel_due(env.active_nodes(), env.residual_degree()) is due
    assert kernel_due(torch.from_numpy(env.active_nodes()), torch.from_numpy(env.residual_degree())) is due  # the device's passes ask it so


def test_a_stretch_of_passes_ends_early_where_the_kernel_has_work():
    """Barabasi-Albert with m = 3: a pass or two leave a residual graph mostly of degree <= 2. With
    kernel_every far above the passes the decoding needs, the kernel is still taken, every residual
    graph handed to it had the share of low-degree nodes that made it due, and the set is
    independent and maximal."""
    graph = barabasi_albert(1_000, 3, 1)
    handed: list[Graph] = []

    def recording(residual: Graph, lp: bool = True):
        handed.append(residual)
        assert not lp  # the LP's rule runs before the first pass only
        return mis_kernel(residual, lp)

    loaded = policy_for_graphs(read_checkpoint("mis"), [graph])
    run = solve_in_kernels(
        loaded.policy, loaded.env, Decoding(rollouts=1, kernel_every=100), recording, finish_rule(loaded.checkpoint.config)
    )
    assert handed and run.kernels >= 1 and run.passes < 100
    for residual in handed:
        assert np.count_nonzero(residual.degrees() <= 2) >= EARLY_KERNEL_SHARE * residual.num_nodes
    assert run.feasible and is_independent_set(graph, run.solution) and maximal(graph, run.solution)


def test_the_pass_limit_counts_the_passes_of_every_kernel_and_the_finishing_rule_completes_the_set():
    graph = delaunay(3_000, 2)
    run, env = decoded(graph, kernel_every=2, max_passes=5)
    assert run.passes == 5
    assert run.finished is not None and run.finished.by_rule > 0
    assert run.feasible and maximal(graph, run.solution)
    assert env.unwrapped.horizon == 5


def test_predict_decodes_in_kernels_by_default_and_finds_more_on_a_sparse_graph():
    """The built-in model on a sparse random graph: the kernel every 4 passes (the default) finds a
    larger set than the kernel before the first pass alone (3,534 against 3,519 when measured)."""
    graph = erdos_renyi(10_000, 8.0, 0)
    once, _ = predict_graph("mis", graph, Decoding(rollouts=1, kernel_every=0))
    again, _ = predict_graph("mis", graph, Decoding(rollouts=1))
    assert again.feasible and again.objective > once.objective
    assert is_independent_set(graph, again.solution.astype(bool))


def test_reductions_off_or_kernel_every_0_decodes_as_one_stretch_of_passes():
    graph = erdos_renyi(1_500, 6.0, 2)
    loaded = policy_for_graphs(read_checkpoint("mis"), [graph])
    from graphtransfer.solve.inference import solve

    plain = solve(loaded.policy, loaded.env, seed=0, finish=finish_rule(loaded.checkpoint.config), reductions=False)
    off, _ = predict_graph("mis", graph, Decoding(rollouts=1, reductions=False))
    assert (off.passes, off.objective) == (plain.passes, plain.objective)


def test_an_env_refuses_a_graph_larger_than_its_spaces_and_mis_keeps_its_domination_gate():
    small, large = erdos_renyi(50, 4.0, 0), erdos_renyi(80, 4.0, 0)
    env = policy_for_graphs(read_checkpoint("mis"), [small]).env.unwrapped
    with pytest.raises(ValueError, match="has 80 nodes .* this env fits 50"):
        env.use_graph(large)
    gate = env.has_triangles(small.edge_index, small.num_nodes)
    part, _ = induced_subgraph(small, np.arange(small.num_nodes) < 30)
    env.use_graph(part)
    assert env.graph is part and env._triangles == {id(part): gate}


def test_edges_by_destination_are_kept_for_the_last_few_graphs_only_and_go_with_their_graph():
    graphs = [erdos_renyi(30, 3.0, seed) for seed in range(BY_DESTINATION_KEPT + 3)]
    for graph in graphs:
        by_destination(graph)
    assert len(_BY_DESTINATION) <= BY_DESTINATION_KEPT
    last = graphs[-1]
    assert np.array_equal(_BY_DESTINATION[id(last)], by_destination(last))
    src, dst = by_destination(last)
    assert (np.diff(dst) >= 0).all() and sorted(zip(src, dst, strict=True)) == sorted(zip(*last.edge_index, strict=True))
    key = id(last)
    del graphs, graph, last
    assert key not in _BY_DESTINATION  # a graph gone takes its entry: no kernel of a finished solve stays in memory


@pytest.mark.parametrize("bad", [-1, 2.5, "often", True, 10**7])
def test_a_bad_kernel_every_is_one_usage_error_naming_its_option(bad):
    with pytest.raises(UsageError, match=r"^Decoding.kernel_every \(--kernel-every\): "):
        Decoding(kernel_every=bad)


def test_predict_says_how_often_it_took_the_kernel_again_and_eval_reports_it(tmp_path):
    from typer.testing import CliRunner

    from graphtransfer.cli import app
    from graphtransfer.graphs import write_npz

    write_npz(erdos_renyi(2_000, 6.0, 3), tmp_path / "g.npz")
    runner = CliRunner()
    common = ["--model", "mis", "--graph", str(tmp_path / "g.npz"), "--threads", "1", "--rollouts", "1"]
    shown = runner.invoke(app, ["predict", *common, "--out", str(tmp_path / "a.csv")])
    assert shown.exit_code == 0, shown.output
    times = int(re.search(r"shrunk to its kernel again (\d+) times, every 4 passes or sooner", shown.output).group(1))
    assert times >= 1
    off = runner.invoke(app, ["predict", *common, "--out", str(tmp_path / "b.csv"), "--kernel-every", "0"])
    assert off.exit_code == 0 and "kernel again" not in off.output
    report = tmp_path / "report.json"
    evaluated = runner.invoke(
        app, ["eval", "--model", "mis", "--graphs", str(tmp_path / "g.npz"), "--rollouts", "1", "--threads", "1", "--json", str(report)]
    )
    assert evaluated.exit_code == 0, evaluated.output
    decodings = json.loads(report.read_text())[0]["decodings"]
    assert next(iter(decodings.values()))["kernels"] == times


@pytest.mark.parametrize("task", ["mvc-weighted", "maxcut", "epidemic", "matching", "path"])
def test_tasks_without_a_kernel_have_no_rule_and_decode_in_one_stretch(task):
    """Only MIS and MVC declare a kernel: every other task, the weighted cover included, gets no
    rule, so solve_one never cuts its decoding into levels."""
    from graphtransfer.config import RunConfig
    from graphtransfer.tasks.factory import graph_kernel

    assert graph_kernel(RunConfig(task=task)) is None
    assert graph_kernel(RunConfig(task="mis")) is mis_kernel and graph_kernel(RunConfig(task="mvc")) is not None
