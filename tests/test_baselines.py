import itertools

import numpy as np
import pytest

from graphtransfer.baselines import greedy_min_degree
from graphtransfer.envs import is_independent_set
from graphtransfer.graphs import barabasi_albert, erdos_renyi


def is_maximal(graph, chosen):
    covered = chosen.copy()
    covered[graph.edge_index[1][chosen[graph.edge_index[0]]]] = True
    return covered.all()


def brute_force_mis_size(graph):
    for size in range(graph.num_nodes, 0, -1):
        for nodes in itertools.combinations(range(graph.num_nodes), size):
            chosen = np.zeros(graph.num_nodes, dtype=bool)
            chosen[list(nodes)] = True
            if is_independent_set(graph, chosen):
                return size
    return 0


def test_star_and_path(star5, path5):
    assert greedy_min_degree(star5).tolist() == [False, True, True, True, True]
    assert greedy_min_degree(path5).tolist() == [True, False, True, False, True]


@pytest.mark.parametrize("seed", range(10))
def test_greedy_is_a_maximal_independent_set_near_optimal_on_tiny_graphs(seed):
    graph = erdos_renyi(9, 3.0, seed)
    chosen = greedy_min_degree(graph)
    assert is_independent_set(graph, chosen)
    assert is_maximal(graph, chosen)
    assert chosen.sum() >= brute_force_mis_size(graph) - 1


def test_greedy_valid_on_a_larger_graph():
    graph = barabasi_albert(20_000, 4, seed=0)
    chosen = greedy_min_degree(graph)
    assert is_independent_set(graph, chosen) and is_maximal(graph, chosen)
