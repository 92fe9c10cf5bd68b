import numpy as np
import pytest

from graphtransfer.errors import GraphTooLargeError, UsageError
from graphtransfer.graphs import barabasi_albert, erdos_renyi
from graphtransfer.tasks import TASKS
from graphtransfer.tasks.maxcut.baselines import exact, greedy_one_flip, random_cut

from .brute_force import TINY_GRAPHS, cut_size, flip_gains, max_cut_size
from .conftest import graph_from_pairs


@pytest.mark.parametrize("graph", TINY_GRAPHS, ids=lambda g: g.name)
def test_fast_baselines_give_sides_and_one_flip_a_local_optimum(graph):
    for name, baseline in TASKS["maxcut"].baselines.items():
        side = baseline(graph)
        assert side.dtype == np.int8 and side.shape == (graph.num_nodes,), name
        assert set(side.tolist()) <= {0, 1}, name
    for seed in range(3):
        side = greedy_one_flip(graph, seed)
        assert flip_gains(graph, side).max(initial=0) <= 0
        # At a local optimum every node has at least half its edges cut.
        assert 2 * cut_size(graph, side) >= graph.num_edges
        assert cut_size(graph, side) >= cut_size(graph, random_cut(graph, seed))


@pytest.mark.parametrize("graph", TINY_GRAPHS, ids=lambda g: g.name)
def test_exact_finds_the_brute_force_optimum(graph):
    result = exact(graph)
    assert result.optimal and result.solution.dtype == np.int8
    assert cut_size(graph, result.solution) == max_cut_size(graph)


def test_exact_cuts_every_edge_of_a_path_but_not_of_an_odd_cycle(path5):
    cycle5 = graph_from_pairs([(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)], 5)
    assert exact(path5).solution.tolist() == [0, 1, 0, 1, 0]
    assert cut_size(cycle5, exact(cycle5).solution) == 4


def test_one_flip_reaches_a_local_optimum_on_a_larger_graph():
    for graph in (barabasi_albert(3_000, 4, seed=0), erdos_renyi(3_000, 8.0, seed=0)):
        side = greedy_one_flip(graph)
        assert flip_gains(graph, side).max() <= 0, graph.name


def test_one_flip_stops_after_max_rounds():
    graph = erdos_renyi(3_000, 8.0, seed=0)
    start, one_round = cut_size(graph, random_cut(graph)), cut_size(graph, greedy_one_flip(graph, max_rounds=1))
    assert start < one_round < cut_size(graph, greedy_one_flip(graph))
    with pytest.raises(UsageError, match="max_rounds=0"):
        greedy_one_flip(graph, max_rounds=0)


def test_exact_refuses_graphs_above_its_limit():
    with pytest.raises(GraphTooLargeError, match=r"21 nodes.*max_nodes=20.*one-flip"):
        exact(erdos_renyi(21, 3.0, 0))
