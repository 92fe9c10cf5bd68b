"""Each task's anchor: the exact matching (HiGHS), maxcut's tabu search, CHILS's weighted cover;
checked against brute force on hand-built and tiny graphs, and against a tiny trained policy."""

import numpy as np
import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.graphs import erdos_renyi
from graphtransfer.graphs.weights import node_weights
from graphtransfer.solve.evaluate import EvalExtras, evaluate_policy
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.tasks import TASKS, MatchingEnv, is_matching, is_vertex_cover
from graphtransfer.tasks.matching.baselines import exact_milp, optimum
from graphtransfer.tasks.maxcut.baselines import greedy_one_flip
from graphtransfer.tasks.maxcut.search import tabu_cut, tabu_search

from .brute_force import TINY_GRAPHS, cut_size, max_cut_size, min_weight_vertex_cover
from .conftest import graph_from_pairs
from .test_edges import brute_force_matching

HAND_BUILT = [
    graph_from_pairs([(0, 1), (1, 2), (2, 3)], 4, "path4"),
    graph_from_pairs([(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)], 5, "cycle5"),
    graph_from_pairs([(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)], 4, "k4"),
    graph_from_pairs([(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3), (2, 3)], 6, "two-triangles"),
]


@pytest.mark.parametrize("graph", HAND_BUILT + list(TINY_GRAPHS[:16]), ids=lambda g: g.name)
def test_the_exact_matching_is_the_brute_force_optimum(graph):
    result = exact_milp(graph)
    assert result.optimal and is_matching(graph, result.solution)
    assert MatchingEnv.objective(graph, result.solution) == pytest.approx(brute_force_matching(graph), rel=1e-9)
    assert optimum(graph).tolist() == result.solution.tolist()


@pytest.mark.parametrize("graph", HAND_BUILT + list(TINY_GRAPHS), ids=lambda g: g.name)
def test_tabu_cuts_at_least_one_flip_and_finds_the_tiny_optimum(graph):
    for seed in range(2):
        assert cut_size(graph, tabu_cut(graph, seed=seed)) >= cut_size(graph, greedy_one_flip(graph, seed))
    assert cut_size(graph, tabu_cut(graph)) == max_cut_size(graph)


def test_tabu_search_never_worsens_its_start_and_counts_its_cut():
    graph = erdos_renyi(300, 6.0, 1)
    start = greedy_one_flip(graph)  # a local optimum: only moves that lose edges lead away from it
    result = tabu_search(graph, start, seconds=60, max_moves=3000)
    assert result.moves == 3000 and result.side.dtype == np.int8
    assert result.cut == cut_size(graph, result.side) >= cut_size(graph, start)
    again = tabu_search(graph, start, seconds=60, max_moves=3000)
    assert again.side.tolist() == result.side.tolist()  # seeded and move-bounded: reproducible


@pytest.mark.parametrize("graph", HAND_BUILT + list(TINY_GRAPHS[:8]), ids=lambda g: g.name)
def test_chils_cover_is_the_lightest_cover_on_tiny_graphs(graph):
    pytest.importorskip("chils")
    from graphtransfer.tasks.mis.chils import chils_cover

    cover = chils_cover(graph, 0.2)
    weights = node_weights(graph)
    assert is_vertex_cover(graph, cover)
    assert weights[cover].sum() == min_weight_vertex_cover(graph, weights)


def test_tasks_says_where_each_policy_stands_against_its_anchor():
    result = CliRunner().invoke(app, ["tasks"])
    assert result.exit_code == 0
    for name in ("mvc-weighted", "maxcut", "matching", "path"):
        assert TASKS[name].standing
        assert f"against its anchor: {TASKS[name].standing}\n" in result.output


@pytest.mark.parametrize("task", ["maxcut", "matching", "mvc-weighted"])
def test_a_tiny_policy_with_its_search_meets_its_anchor_on_a_small_graph(tiny_model, task):
    graph = erdos_renyi(60, 4.0, 3)
    loaded = policy_for_graphs(str(tiny_model(task)), [graph])
    [row] = evaluate_policy(loaded.policy, loaded.checkpoint.config, [graph], extras=EvalExtras(polish=True))
    if task == "mvc-weighted":  # CHILS is optional; the exact cover is the stronger anchor on 60 nodes
        optimum = TASKS[task].env.objective(graph, TASKS[task].exact["milp"](graph).solution)
        assert row.policy.objective > optimum  # the tiny policy alone is not there
        assert row.polished == optimum
        return
    anchors = {"maxcut": "tabu", "matching": "optimum"}
    anchor = next(b for b in row.baselines if b.name == anchors[task]).objective
    if task == "maxcut":  # the tabu search from the policy's cut: as good as from a random one
        assert row.polished >= anchor
    else:  # the local search from the policy's matching: within 2% of the optimum, never above it
        assert 0.98 * anchor <= row.polished <= anchor + 1e-9
