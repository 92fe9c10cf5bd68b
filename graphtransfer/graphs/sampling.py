"""Small pieces of a large graph: breadth-first balls around random nodes, as induced subgraphs,
for training on the graph a policy will be used on (``transfer --adapt``)."""

from __future__ import annotations

import numpy as np

from graphtransfer.errors import UsageError
from graphtransfer.graphs.graph import Graph, induced_subgraph, sorted_unique, with_ids


def sample_subgraphs(graph: Graph, count: int, size: int, seed: int) -> list[Graph]:
    """``count`` induced subgraphs of ``graph`` of ``min(size, num_nodes)`` nodes each, every one a
    breadth-first ball around a random node, renumbered ``0..k-1`` (in the graph's order).

    A ball grows layer by layer from its centre; the layer that would overflow ``size`` is cut to a
    random part of it, so the ball is connected. Where the centre's component is smaller than
    ``size``, the ball goes on from a random node outside it (the subgraph is then connected per
    component). Every edge of ``graph`` between two kept nodes is kept, and each node keeps the
    id it has in ``graph`` (:meth:`Graph.ids`) as its own. Seeded: the same arguments give the
    same subgraphs.

    Args:
        count: how many subgraphs, at least 1.
        size: nodes per subgraph, at least 2; ``size >= num_nodes`` gives copies of the whole graph.
        seed: seeds the centres and the cut layers.

    Raises:
        UsageError: ``count`` or ``size`` out of range, or a graph of fewer than two nodes.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise UsageError(f"count={count!r} must be a whole number of subgraphs, at least 1")
    if isinstance(size, bool) or not isinstance(size, int) or size < 2:
        raise UsageError(f"size={size!r} must be a whole number of nodes, at least 2")
    if graph.num_nodes < 2:
        raise UsageError(f"{graph.name or 'graph'} has {graph.num_nodes} node(s); sampling subgraphs needs at least 2")
    rng = np.random.default_rng(seed)
    indptr, indices = graph.csr()
    take = min(size, graph.num_nodes)
    subgraphs = []
    for i in range(count):
        keep = _ball(indptr, indices, graph.num_nodes, take, rng)
        sub, nodes = induced_subgraph(graph, keep)
        subgraphs.append(with_ids(Graph(sub.edge_index, sub.num_nodes, f"{graph.name}-ball{i}-n{take}"), graph.ids()[nodes]))
    return subgraphs


def _ball(indptr: np.ndarray, indices: np.ndarray, num_nodes: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``(num_nodes,)`` bool: ``size`` nodes reached breadth-first from random centres."""
    keep = np.zeros(num_nodes, dtype=bool)
    taken = 0
    frontier = np.empty(0, dtype=np.int64)
    while taken < size:
        if frontier.size == 0:  # a new centre: the first, or the last component is used up
            outside = np.flatnonzero(~keep)
            frontier = outside[rng.integers(outside.size)].reshape(1)
        else:
            frontier = sorted_unique(_neighbours(indptr, indices, frontier))
            frontier = frontier[~keep[frontier]]
            if frontier.size == 0:
                continue
        if taken + frontier.size > size:
            frontier = rng.choice(frontier, size - taken, replace=False)
        keep[frontier] = True
        taken += frontier.size
    return keep


def _neighbours(indptr: np.ndarray, indices: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Every neighbour of every node in ``nodes``, with repeats, gathered without a Python loop.

    Shapes:
        nodes: ``(k,)`` int64; returns ``(sum of their degrees,)`` int64.
    """
    starts, counts = indptr[nodes], indptr[nodes + 1] - indptr[nodes]
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    return indices[offsets + np.arange(total)]
