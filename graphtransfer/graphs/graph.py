"""The undirected graph type every other module works with."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphtransfer.errors import GraphInputError

# Edges are deduplicated through the keys ``lo * num_nodes + hi``, which must stay inside int64.
MAX_NODES = 2**31 - 1


@dataclass(frozen=True)
class Graph:
    """An undirected simple graph.

    Attributes:
        edge_index: ``(2, 2|E|)`` int64, both directions of every edge, no self-loops or
            duplicates, node ids in ``0..num_nodes-1``.
        num_nodes: number of nodes, isolated ones included.
        name: where the graph came from (file name or generator spec), for reports.
    """

    edge_index: np.ndarray
    num_nodes: int
    name: str = ""

    @property
    def num_edges(self) -> int:
        """Number of undirected edges."""
        return self.edge_index.shape[1] // 2

    def degrees(self) -> np.ndarray:
        """Node degrees, ``(num_nodes,)`` int64."""
        return np.bincount(self.edge_index[0], minlength=self.num_nodes)

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """Adjacency as ``(indptr (N+1,), indices (2|E|,))``, neighbours of ``v`` in
        ``indices[indptr[v]:indptr[v+1]]``."""
        order = np.argsort(self.edge_index[0], kind="stable")
        indptr = np.zeros(self.num_nodes + 1, dtype=np.int64)
        np.cumsum(self.degrees(), out=indptr[1:])
        return indptr, self.edge_index[1, order]


def from_edges(src: np.ndarray, dst: np.ndarray, num_nodes: int, name: str = "") -> tuple[Graph, int, int]:
    """Build a :class:`Graph` from undirected edge endpoints, in any order and with repeats.

    Returns:
        The graph, the number of self-loops dropped and the number of duplicate edges dropped.
    """
    if not 0 <= num_nodes <= MAX_NODES:
        raise GraphInputError(f"{name or 'graph'}: {num_nodes} nodes; graphtransfer handles 0..{MAX_NODES:,} nodes")
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= num_nodes):
        raise GraphInputError(f"{name or 'graph'}: edge endpoint outside 0..{num_nodes - 1}")
    loops = src == dst
    lo = np.minimum(src[~loops], dst[~loops])
    hi = np.maximum(src[~loops], dst[~loops])
    keys = sorted_unique(lo * num_nodes + hi)
    duplicates = lo.size - keys.size
    lo, hi = keys // num_nodes, keys % num_nodes
    edge_index = np.stack([np.concatenate([lo, hi]), np.concatenate([hi, lo])])
    return Graph(edge_index, int(num_nodes), name), int(loops.sum()), int(duplicates)


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """Distinct values in increasing order; a sort is several times faster here than
    ``np.unique``, which hashes large integer arrays in numpy 2."""
    values = np.sort(values)
    keep = np.empty(values.size, dtype=bool)
    keep[:1] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]
