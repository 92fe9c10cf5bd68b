from functools import partial

import numpy as np
import pytest

from graphtransfer.errors import GraphTooLargeError
from graphtransfer.graphs import barabasi_albert, erdos_renyi
from graphtransfer.tasks import TASKS
from graphtransfer.tasks.mvc.baselines import exact_milp, greedy_max_degree, maximal_matching_2approx

from .brute_force import TINY_GRAPHS, is_vertex_cover, min_vertex_cover_size


def harmonic(n):
    return sum(1 / k for k in range(1, n + 1))


def test_star_and_path(star5, path5):
    assert greedy_max_degree(star5).tolist() == [True, False, False, False, False]
    assert greedy_max_degree(path5).sum() == 2


@pytest.mark.parametrize("graph", TINY_GRAPHS, ids=lambda g: g.name)
def test_fast_baselines_cover_every_edge_within_their_guarantees(graph):
    optimum = min_vertex_cover_size(graph)
    for name, baseline in TASKS["mvc"].baselines.items():
        cover = baseline(graph)
        assert cover.dtype == bool and cover.shape == (graph.num_nodes,), name
        assert is_vertex_cover(graph, cover), name
    for seed in range(3):
        assert maximal_matching_2approx(graph, seed).sum() <= 2 * optimum
    # Greedy set cover is within H(max degree) of the optimum.
    assert greedy_max_degree(graph).sum() <= harmonic(int(graph.degrees().max(initial=0))) * optimum + 1e-9


@pytest.mark.parametrize("graph", TINY_GRAPHS, ids=lambda g: g.name)
def test_exact_milp_finds_the_brute_force_optimum(graph):
    result = exact_milp(graph)
    assert result.optimal
    assert is_vertex_cover(graph, result.solution)
    assert result.solution.sum() == min_vertex_cover_size(graph)


def test_matching_cover_holds_both_ends_of_each_matched_edge(star5, path5):
    # Every maximal matching of a star is one edge, and of a 5-node path two edges.
    for seed in range(10):
        star_cover = maximal_matching_2approx(star5, seed)
        assert star_cover[0] and star_cover.sum() == 2
        assert maximal_matching_2approx(path5, seed).sum() == 4


def test_matching_2approx_depends_only_on_its_seed():
    graph = erdos_renyi(2_000, 5.0, 0)
    assert np.array_equal(maximal_matching_2approx(graph, 1), maximal_matching_2approx(graph, 1))
    assert not np.array_equal(maximal_matching_2approx(graph, 1), maximal_matching_2approx(graph, 2))


def test_fast_baselines_valid_on_a_larger_graph():
    for graph in (barabasi_albert(5_000, 4, seed=0), erdos_renyi(5_000, 8.0, seed=0)):
        for name, baseline in TASKS["mvc"].baselines.items():
            solve = partial(baseline, time_budget=0.5) if name == "local-search" else baseline  # its default budget is 10 s
            assert is_vertex_cover(graph, solve(graph)), (name, graph.name)


def test_exact_milp_keeps_a_valid_cover_when_time_runs_out():
    graph = erdos_renyi(300, 6.0, 1)
    result = exact_milp(graph, time_limit=0.3)
    assert not result.optimal and is_vertex_cover(graph, result.solution)
    assert result.solution.sum() <= greedy_max_degree(graph).sum()


def test_exact_milp_refuses_graphs_above_its_limit():
    with pytest.raises(GraphTooLargeError, match=r"max_nodes=500.*greedy-max-degree"):
        exact_milp(erdos_renyi(501, 3.0, 0))
