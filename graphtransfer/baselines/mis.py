"""Classical maximum-independent-set heuristics to measure policies against."""

from __future__ import annotations

import heapq

import numpy as np

from graphtransfer.graphs import Graph


def greedy_min_degree(graph: Graph) -> np.ndarray:
    """Repeatedly take a node of least degree in the remaining graph, then drop it and its
    neighbours. Ties go to the lowest node id. ``(num_nodes,)`` bool.

    A heap with lazy deletion keeps this at O(|E| log |V|): about 3 s for 250k nodes and 1M edges.
    """
    indptr, indices = graph.csr()
    indptr, indices = indptr.tolist(), indices.tolist()  # Python ints: much faster to index in a loop
    degree = [indptr[v + 1] - indptr[v] for v in range(graph.num_nodes)]
    alive = [True] * graph.num_nodes
    chosen = np.zeros(graph.num_nodes, dtype=bool)
    heap = [(d, v) for v, d in enumerate(degree)]
    heapq.heapify(heap)
    while heap:
        d, v = heapq.heappop(heap)
        if not alive[v] or d != degree[v]:
            continue  # stale entry
        chosen[v] = True
        alive[v] = False
        for u in indices[indptr[v] : indptr[v + 1]]:
            if not alive[u]:
                continue
            alive[u] = False
            for w in indices[indptr[u] : indptr[u + 1]]:
                if alive[w]:
                    degree[w] -= 1
                    heapq.heappush(heap, (degree[w], w))
    return chosen
