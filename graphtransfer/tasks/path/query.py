"""The path task's own query on a graph, shared by its env and the Dijkstra baseline."""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import shortest_path

from graphtransfer.graphs import Graph

QUERY_SEED = 0


def route_query(graph: Graph) -> tuple[int, int]:
    """The graph's own query, a function of the graph alone: the source is the first node with
    edges in a permutation seeded by :data:`QUERY_SEED`; the target is the node farthest from it
    in hops (the lowest id among ties), so routes cross the graph."""
    degree = graph.degrees()
    order = np.random.default_rng(QUERY_SEED).permutation(graph.num_nodes)
    source = int(order[np.argmax(degree[order] > 0)])
    matrix = csr_array((np.ones(graph.edge_index.shape[1]), (graph.edge_index[0], graph.edge_index[1])), shape=(graph.num_nodes,) * 2)
    hops = shortest_path(matrix, unweighted=True, indices=source)
    hops[~np.isfinite(hops)] = -1
    return source, int(np.argmax(hops))
