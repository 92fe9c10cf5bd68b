"""Local-search polish applied equally to a policy's solution and to the baselines', so that a
polished policy is only ever compared with an equally polished baseline."""

from __future__ import annotations

import numpy as np

from graphtransfer.graphs import Graph


def complete_independent_set(graph: Graph, chosen: np.ndarray) -> np.ndarray:
    """Add nodes with no chosen neighbour, lowest degree first, until the set is maximal."""
    indptr, indices = graph.csr()
    chosen = chosen.copy()
    blocked = np.zeros(graph.num_nodes, dtype=bool)
    blocked[indices[np.repeat(chosen, np.diff(indptr))]] = True  # neighbours of chosen nodes
    for v in np.argsort(np.diff(indptr), kind="stable").tolist():
        if not chosen[v] and not blocked[v]:
            chosen[v] = True
            blocked[indices[indptr[v] : indptr[v + 1]]] = True
    return chosen


def prune_vertex_cover(graph: Graph, cover: np.ndarray) -> np.ndarray:
    """Drop cover nodes whose neighbours are all in the cover, lowest degree first, until the
    cover is minimal (every remaining node covers some edge alone)."""
    indptr, indices = graph.csr()
    cover = cover.copy()
    for v in np.argsort(np.diff(indptr), kind="stable").tolist():
        if cover[v] and cover[indices[indptr[v] : indptr[v + 1]]].all():
            cover[v] = False
    return cover


def one_flip_local_search(graph: Graph, side: np.ndarray, max_sweeps: int = 50) -> np.ndarray:
    """Flip any node with more neighbours on its own side than across, sweep after sweep,
    until no single flip improves the cut (a local optimum) or ``max_sweeps``."""
    indptr, indices = graph.csr()
    side = side.astype(np.int8).copy()
    src = np.repeat(np.arange(graph.num_nodes), np.diff(indptr))
    for _ in range(max_sweeps):
        same = np.bincount(src[side[src] == side[indices]], minlength=graph.num_nodes)
        gain = 2 * same - np.diff(indptr)
        candidates = np.flatnonzero(gain > 0)
        if not candidates.size:
            break
        for v in candidates[np.argsort(-gain[candidates], kind="stable")].tolist():
            neighbours = indices[indptr[v] : indptr[v + 1]]
            if 2 * int((side[neighbours] == side[v]).sum()) > neighbours.size:  # still improving now
                side[v] ^= 1
    return side


POLISH = {"mis": complete_independent_set, "mvc": prune_vertex_cover, "maxcut": one_flip_local_search}
