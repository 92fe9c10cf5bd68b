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
