"""The weights built-in tasks use: the graph file's own (``Graph.edge_weight``,
``Graph.node_weight``) where it has them, else weights derived from the graph and a seed alone, so
that generated graphs and weightless graph files (the sample graphs) get the same weights in every
process and on every machine; :func:`weights_source` says which.

An undirected edge ``{u, v}`` with ``u < v`` gets the weight ``(k + 1) / 2^24`` where ``k`` is
the top 24 bits of ``splitmix64((u << 32 | v) ^ seed * 0x9E3779B97F4A7C15)``: uniform in
``(0, 1]``, exact in float32, the same for both directions, and independent of the other edges,
the node count and the order edges are listed in. A node's weight (:func:`node_weights`, for
``mvc-weighted``) is an integer from 1 to 10 drawn the same way from its id.
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
    """``(2|E|,)``, the weight of every column of ``graph.edge_index`` (both directions alike):
    the file's own (float64) where it has them, else hashed from the node ids (float32)."""
    if graph.edge_weight is not None:
        return graph.edge_weight
    return pair_weights(graph.edge_index[0], graph.edge_index[1], seed)


def weights_source(graph: Graph, kind: str = "edge") -> str:
    """Where ``graph``'s ``kind`` ("edge" or "node") weights come from, for a run's output:
    ``"edge weights: from the file"`` or ``"edge weights: hashed from node ids (the file has none)"``."""
    own = graph.edge_weight if kind == "edge" else graph.node_weight
    return f"{kind} weights: " + ("from the file" if own is not None else "hashed from node ids (the file has none)")


MAX_WEIGHT = 10
"""node weights (``mvc-weighted``) are the integers 1 to this"""
NODE_WEIGHT_SEED = 20_251_124
"""the seed of every node weight; edge weights take their own"""


def node_weights(graph: Graph, seed: int = NODE_WEIGHT_SEED) -> np.ndarray:
    """``(num_nodes,)`` float64 weights for weighted node tasks (``mvc-weighted``): node ``v``
    weighs ``1 + splitmix64(v ^ seed * 0x9E3779B97F4A7C15) mod MAX_WEIGHT``, an integer 1 to
    :data:`MAX_WEIGHT`, uniform, the same for node ``v`` of any graph, in every process and on
    every machine, like the edge weights. Integers keep objectives exact (a cover's weight is a
    sum of small integers, compared exactly with brute force and the MILP). A graph file's own
    node weights (``Graph.node_weight``) take their place where it has them."""
    if graph.node_weight is not None:
        return graph.node_weight
    with np.errstate(over="ignore"):
        salt = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
    bits = splitmix64(np.arange(graph.num_nodes, dtype=np.uint64) ^ salt)
    return (1 + bits % np.uint64(MAX_WEIGHT)).astype(np.float64)
