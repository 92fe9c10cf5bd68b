import numpy as np
import pytest

from graphtransfer.graphs import erdos_renyi
from graphtransfer.tasks import TASKS, cut_size, is_independent_set, is_vertex_cover
from graphtransfer.tasks.maxcut.search import one_flip_local_search


@pytest.mark.parametrize("seed", range(6))
def test_polish_keeps_feasibility_and_never_worsens(seed):
    graph = erdos_renyi(80, 4.0, seed)
    rng = np.random.default_rng(seed)
    empty = np.zeros(graph.num_nodes, dtype=bool)
    independent = TASKS["mis"].improve(graph, empty)
    assert is_independent_set(graph, independent)
    neighbours_chosen = np.zeros(graph.num_nodes, dtype=bool)
    neighbours_chosen[graph.edge_index[1][independent[graph.edge_index[0]]]] = True
    assert (independent | neighbours_chosen).all()  # maximal

    everyone = np.ones(graph.num_nodes, dtype=bool)
    cover = TASKS["mvc"].improve(graph, everyone)
    assert is_vertex_cover(graph, cover) and cover.sum() < graph.num_nodes
    src, dst = graph.edge_index
    for v in np.flatnonzero(cover):  # minimal: every cover node covers an edge alone
        assert (~cover[dst[src == v]]).any()

    start = rng.integers(0, 2, graph.num_nodes).astype(np.int8)
    side = one_flip_local_search(graph, start)
    assert cut_size(graph, side) >= cut_size(graph, start)
    for v in range(graph.num_nodes):  # local optimum: no single flip improves
        flipped = side.copy()
        flipped[v] ^= 1
        assert cut_size(graph, flipped) <= cut_size(graph, side)


@pytest.mark.parametrize("seed", range(3))
def test_predicts_mis_search_restarts_from_greedy_once_the_given_set_stalls(seed, monkeypatch):
    from graphtransfer.tasks.mis import search
    from graphtransfer.tasks.mis.kernel import mis_kernel
    from graphtransfer.tasks.mis.local_search import local_search

    graph = erdos_renyi(150, 8.0, seed)
    kernel = mis_kernel(graph)
    assert kernel is not None and kernel.graph.num_nodes > 50  # the rules leave a search to do
    runs = []  # every search search_set runs, as it ran (the real search, recorded)

    def recorded(*args, **kwargs):
        result = real(*args, **kwargs)
        runs.append((args[2] is None, result))
        return result

    real = search.search_on_kernel
    monkeypatch.setattr(search, "search_on_kernel", recorded)
    trap = np.zeros(graph.num_nodes, dtype=bool)
    trap[np.argmax(graph.degrees())] = True  # the hub: a poor start, completed by the search
    found, perturbations = search.search_set(graph, trap, seconds=4.0, seed=seed)  # the kernel made as local_search makes it
    assert is_independent_set(graph, found)
    (from_start, first), (from_greedy, again) = runs  # the start's search stalled within 4 s, then greedy's ran
    assert not from_start and from_greedy
    assert first.iterations >= search.RESTART_STALL_PER_NODE * kernel.graph.num_nodes
    assert perturbations == first.iterations + again.iterations
    assert found.sum() == max(first.solution.sum(), again.solution.sum())
    # the restart is greedy's search with the same seed, run on past its stall: never below it
    assert found.sum() >= local_search(graph, time_budget=4.0, seed=seed).sum()
