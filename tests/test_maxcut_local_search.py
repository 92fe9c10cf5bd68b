"""Max-cut's iterated local search (``eval --polish``, ``predict --polish``, the ``local-search``
baseline): the tiny optimum, never below its start, reproducible, the region-by-region merge,
refusals; and it cuts more than the tabu anchor on a graph of 2,000 nodes."""

import numpy as np
import pytest

from graphtransfer.errors import UsageError
from graphtransfer.graphs import erdos_renyi, random_geometric
from graphtransfer.tasks import TASKS
from graphtransfer.tasks.maxcut.baselines import greedy_one_flip
from graphtransfer.tasks.maxcut.local_search import iterated_cut_search, local_search_cut, merge_cuts, polish_cut, search_cut
from graphtransfer.tasks.maxcut.search import tabu_cut

from .brute_force import TINY_GRAPHS, cut_size, max_cut_size
from .conftest import graph_from_pairs


@pytest.mark.parametrize("graph", list(TINY_GRAPHS), ids=lambda g: g.name)
def test_the_search_finds_the_tiny_optimum_from_a_random_cut(graph):
    assert cut_size(graph, local_search_cut(graph, seconds=5)) == max_cut_size(graph)


def test_the_search_never_ends_below_its_start_and_counts_its_cut():
    graph = erdos_renyi(400, 6.0, 2)
    start = greedy_one_flip(graph)  # a local optimum of single flips
    result = iterated_cut_search(graph, start, seconds=60, max_iterations=3000, seed=1)
    assert result.perturbations == 3000 and result.side.dtype == np.int8
    assert result.cut == cut_size(graph, result.side) > cut_size(graph, start)
    again = iterated_cut_search(graph, start, seconds=60, max_iterations=3000, seed=1)
    assert again.side.tolist() == result.side.tolist()  # seeded and bounded by perturbations: reproducible


def test_the_merge_takes_the_side_that_cuts_more_of_each_region():
    # two triangles joined by the edge 2-3; node 6 alone, fixed on side 0 in both cuts
    graph = graph_from_pairs([(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3), (2, 3), (5, 6)], 7)
    indptr, indices = graph.csr()
    first = np.array([0, 0, 1, 0, 1, 0, 0], dtype=np.int8)  # first triangle 2 of 3 cut, 2-3 cut
    second = np.array([1, 1, 1, 0, 1, 1, 0], dtype=np.int8)  # first triangle none cut; (5, 6) cut
    merged = merge_cuts(indptr, indices, first, second)
    assert cut_size(graph, merged) >= max(cut_size(graph, first), cut_size(graph, second))
    assert merged.tolist() == [0, 0, 1, 0, 1, 1, 0]  # node 5 takes second's side, the rest first's


def test_the_search_cuts_more_than_the_tabu_anchor_in_the_same_seconds():
    graph = random_geometric(2000, 6.0, 3)
    start = np.random.default_rng(0).integers(0, 2, graph.num_nodes, dtype=np.int8)
    searched, perturbations = search_cut(graph, start, 1.0)
    assert perturbations > 1000
    assert cut_size(graph, searched) > cut_size(graph, tabu_cut(graph, 1.0))


@pytest.mark.parametrize("seconds", [0, -1.0, float("nan"), float("inf"), True, "5", None])
def test_a_bad_budget_is_refused(seconds):
    graph = erdos_renyi(30, 4.0, 0)
    with pytest.raises(UsageError, match="seconds=.*must be a positive number"):
        polish_cut(graph, np.zeros(30, dtype=np.int8), seconds)


@pytest.mark.parametrize("side", [np.zeros(29), np.full(30, 2), np.full(30, np.nan)], ids=["short", "two", "nan"])
def test_sides_that_are_not_one_zero_or_one_per_node_are_refused(side):
    with pytest.raises(UsageError, match=r"side must be \(30,\) zeros and ones"):
        search_cut(erdos_renyi(30, 4.0, 0), side, 1.0)


def test_maxcut_declares_it_and_keeps_the_tabu_anchor():
    task = TASKS["maxcut"]
    assert task.search is search_cut and task.improve is polish_cut
    assert task.baselines["tabu"] is tabu_cut and task.baselines["local-search"] is local_search_cut
