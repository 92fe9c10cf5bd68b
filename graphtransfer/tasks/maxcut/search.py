"""Max-cut's local search, what eval's ``--polish`` applies equally to a policy's cut and to the
baselines', so that a polished policy is only ever compared with an equally polished baseline."""

from __future__ import annotations

import numpy as np

from graphtransfer.graphs import Graph


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
