import heapq
from functools import partial

import numpy as np
import pytest

from graphtransfer.baselines import ExactSolution
from graphtransfer.errors import GraphTooLargeError, UsageError
from graphtransfer.graphs import barabasi_albert, erdos_renyi, random_geometric
from graphtransfer.tasks import TASKS
from graphtransfer.tasks.mis.baselines import exact_milp, greedy_in_order, greedy_min_degree, random_order_greedy

from .brute_force import TINY_GRAPHS, is_independent, is_maximal_independent, max_independent_set_size
from .conftest import graph_from_pairs


def heap_greedy_min_degree(graph):
    """The single-heap implementation that the bucket queue replaced, kept as the reference."""
    indptr, indices = graph.csr()
    indptr, indices = indptr.tolist(), indices.tolist()
    degree = [indptr[v + 1] - indptr[v] for v in range(graph.num_nodes)]
    alive = [True] * graph.num_nodes
    chosen = np.zeros(graph.num_nodes, dtype=bool)
    heap = [(d, v) for v, d in enumerate(degree)]
    heapq.heapify(heap)
    while heap:
        d, v = heapq.heappop(heap)
        if not alive[v] or d != degree[v]:
            continue
        chosen[v] = True
        alive[v] = False
        for u in indices[indptr[v] : indptr[v + 1]]:
            if alive[u]:
                alive[u] = False
                for w in indices[indptr[u] : indptr[u + 1]]:
                    if alive[w]:
                        degree[w] -= 1
                        heapq.heappush(heap, (degree[w], w))
    return chosen


def scan_in_order(graph, order):
    """Sequential greedy: take each node, in order, that has no neighbour taken yet."""
    indptr, indices = graph.csr()
    chosen = np.zeros(graph.num_nodes, dtype=bool)
    for v in order:
        if not chosen[indices[indptr[v] : indptr[v + 1]]].any():
            chosen[v] = True
    return chosen


def test_star_and_path(star5, path5):
    assert greedy_min_degree(star5).tolist() == [False, True, True, True, True]
    assert greedy_min_degree(path5).tolist() == [True, False, True, False, True]


@pytest.mark.parametrize("graph", TINY_GRAPHS, ids=lambda g: g.name)
def test_fast_baselines_give_maximal_independent_sets_on_tiny_graphs(graph):
    for name, baseline in TASKS["mis"].baselines.items():
        chosen = baseline(graph)
        assert chosen.dtype == bool and chosen.shape == (graph.num_nodes,), name
        assert is_maximal_independent(graph, chosen), name


@pytest.mark.parametrize("graph", TINY_GRAPHS, ids=lambda g: g.name)
def test_exact_milp_finds_the_brute_force_optimum(graph):
    result = exact_milp(graph)
    assert result.optimal
    assert is_independent(graph, result.solution)
    assert result.solution.sum() == max_independent_set_size(graph)


@pytest.mark.parametrize("seed", range(4))
def test_bucket_queue_greedy_matches_the_heap_greedy(seed):
    for graph in (erdos_renyi(400, 4.0, seed), barabasi_albert(400, 3, seed), random_geometric(400, 6.0, seed)):
        assert np.array_equal(greedy_min_degree(graph), heap_greedy_min_degree(graph)), graph.name


def test_bucket_queue_greedy_matches_the_heap_greedy_on_a_larger_graph():
    graph = barabasi_albert(5_000, 4, seed=1)
    assert np.array_equal(greedy_min_degree(graph), heap_greedy_min_degree(graph))


@pytest.mark.parametrize("seed", range(4))
def test_rounds_give_the_same_set_as_a_sequential_scan(seed):
    rng = np.random.default_rng(seed)
    for graph in (erdos_renyi(300, 5.0, seed), barabasi_albert(300, 3, seed)):
        order = rng.permutation(graph.num_nodes)
        assert np.array_equal(greedy_in_order(graph, order), scan_in_order(graph, order)), graph.name


def test_rounds_follow_an_adversarial_order(path5):
    # Scanning a path from one end decides one node per round.
    assert greedy_in_order(path5, np.arange(5)).tolist() == [True, False, True, False, True]
    assert greedy_in_order(path5, np.array([1, 3, 0, 2, 4])).tolist() == [False, True, False, True, False]


def test_order_must_be_a_permutation(path5):
    with pytest.raises(UsageError, match="exactly once"):
        greedy_in_order(path5, np.array([0, 1, 1, 2, 3]))


def test_random_order_greedy_depends_only_on_its_seed():
    graph = erdos_renyi(2_000, 5.0, 0)
    assert np.array_equal(random_order_greedy(graph, seed=3), random_order_greedy(graph, seed=3))
    assert not np.array_equal(random_order_greedy(graph, seed=3), random_order_greedy(graph, seed=4))


def test_fast_baselines_valid_on_a_larger_graph():
    graph = barabasi_albert(20_000, 4, seed=0)
    for name, baseline in TASKS["mis"].baselines.items():
        solve = partial(baseline, time_budget=0.5) if name == "local-search" else baseline  # its default budget is 10 s
        assert is_maximal_independent(graph, solve(graph)), name


def test_exact_milp_returns_a_good_unproven_set_when_time_runs_out():
    graph = erdos_renyi(300, 6.0, 1)  # HiGHS needs more than 10 s to prove this one
    result = exact_milp(graph, time_limit=0.3)
    assert isinstance(result, ExactSolution) and not result.optimal
    assert is_independent(graph, result.solution)
    assert result.solution.sum() >= greedy_min_degree(graph).sum()


def test_exact_milp_refuses_graphs_above_its_limit():
    with pytest.raises(GraphTooLargeError, match=r"1000 nodes.*max_nodes=500.*greedy-min-degree"):
        exact_milp(erdos_renyi(1_000, 3.0, 0))
    assert exact_milp(graph_from_pairs([(0, 1)], 2), max_nodes=2).solution.sum() == 1


def test_time_limit_must_be_positive(path5):
    with pytest.raises(UsageError, match="time_limit=0"):
        exact_milp(path5, time_limit=0)


def test_every_task_has_fast_and_exact_solvers_in_separate_registries():
    exact = {name for name, task in TASKS.items() if task.exact}
    assert exact == {"mis", "mvc", "mvc-weighted", "maxcut", "matching"} and all(task.baselines for task in TASKS.values())
    for name in exact:
        assert not set(TASKS[name].baselines.values()) & set(TASKS[name].exact.values()), name
