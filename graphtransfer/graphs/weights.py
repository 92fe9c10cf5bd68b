"""Edge weights derived from a graph and a seed alone, so that generated graphs and weightless
graph files (the sample graphs) get the same weights in every process and on every machine.

An undirected edge ``{u, v}`` with ``u < v`` gets the weight ``(k + 1) / 2^24`` where ``k`` is
the top 24 bits of ``splitmix64((u << 32 | v) ^ seed * 0x9E3779B97F4A7C15)``: uniform in
``(0, 1]``, exact in float32, the same for both directions, and independent of the other edges,
the node count and the order edges are listed in.
"""

from __future__ import annotations

import numpy as np

from graphtransfer.graphs.graph import Graph

WEIGHT_BITS = 24  # float32 holds every (k + 1) / 2^24 exactly


def splitmix64(keys: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, vectorized over uint64 keys (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = keys + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def pair_weights(src: np.ndarray, dst: np.ndarray, seed: int = 0) -> np.ndarray:
    """The weight of each edge ``(src[i], dst[i])`` as the module docstring defines it.

    Shapes:
        src, dst: ``(E,)`` node ids below 2^32; returns ``(E,)`` float32 in ``(0, 1]``.
    """
    lo = np.minimum(src, dst).astype(np.uint64)
    hi = np.maximum(src, dst).astype(np.uint64)
    with np.errstate(over="ignore"):
        salt = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
    bits = splitmix64(((lo << np.uint64(32)) | hi) ^ salt) >> np.uint64(64 - WEIGHT_BITS)
    return ((bits.astype(np.float64) + 1.0) / 2.0**WEIGHT_BITS).astype(np.float32)


def edge_weights(graph: Graph, seed: int = 0) -> np.ndarray:
    """``(2|E|,)`` float32, the weight of every column of ``graph.edge_index`` (both directions alike)."""
    return pair_weights(graph.edge_index[0], graph.edge_index[1], seed)
