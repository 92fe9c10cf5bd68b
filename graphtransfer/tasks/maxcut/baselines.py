"""Classical maximum-cut solvers to measure policies against. Solutions are ``(num_nodes,)``
int8, each node's side (0 or 1); the objective is the number of edges between the sides."""

from __future__ import annotations

import numpy as np

from graphtransfer.baselines.exact import ExactSolution, check_size
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph

BRUTE_FORCE_MAX_NODES = 20
"""Largest graph :func:`exact` accepts by default: 2^19 assignments, under a second."""

_CHUNK = 1 << 16  # assignments scored at once by :func:`exact`; bounds its memory


def random_cut(graph: Graph, seed: int = 0) -> np.ndarray:
    """Each node's side by a fair coin, seeded: half the edges cut in expectation."""
    return np.random.default_rng(seed).integers(0, 2, graph.num_nodes, dtype=np.int8)


def greedy_one_flip(graph: Graph, seed: int = 0, max_rounds: int = 1000) -> np.ndarray:
    """Local search from :func:`random_cut`: flip nodes whose flip cuts more edges than it
    uncuts, until no such node is left (a local optimum: no single flip helps) or
    ``max_rounds`` rounds have passed.

    A round flips, at once, every improving node that beats each improving neighbour by gain,
    then by a seeded random priority. No two of them are adjacent, so each flip gains exactly
    what was computed and the cut grows every round.
    """
    if max_rounds < 1:
        raise UsageError(f"max_rounds={max_rounds} must be at least 1; try the default, 1000")
    rng = np.random.default_rng(seed)
    side = rng.integers(0, 2, graph.num_nodes, dtype=np.int8)  # the first draw: random_cut(graph, seed)
    priority = rng.permutation(graph.num_nodes)
    src, dst = graph.edge_index
    degree = graph.degrees()
    for _ in range(max_rounds):
        cut_degree = np.bincount(src[side[src] != side[dst]], minlength=graph.num_nodes)
        gain = degree - 2 * cut_degree  # (num_nodes,), uncut edges that a flip would cut minus cut ones it would uncut
        improving = gain > 0
        if not improving.any():
            break
        key = gain * graph.num_nodes + priority  # distinct, so one of two improving neighbours always loses
        contest = improving[src] & improving[dst] & (key[src] < key[dst])
        loses = np.zeros(graph.num_nodes, dtype=bool)
        loses[src[contest]] = True
        side[improving & ~loses] ^= 1
    return side


def exact(graph: Graph, max_nodes: int = BRUTE_FORCE_MAX_NODES) -> ExactSolution:
    """Maximum cut by brute force over all ``2^(n-1)`` assignments, the last node held on side
    0 since swapping the sides gives the same cut. Ties go to the lowest assignment code, bit
    ``v`` being node ``v``'s side. Always ``optimal=True``.

    Raises:
        GraphTooLargeError: the graph has more than ``max_nodes`` nodes.
    """
    check_size(graph, max_nodes, "maxcut exact", "'one-flip'")
    num_nodes = graph.num_nodes
    src, dst = graph.edge_index
    edges = graph.edge_index[:, src < dst].T.tolist()  # [[u, v], ...], each undirected edge once
    shifts = np.arange(num_nodes, dtype=np.int64)[:, None]
    num_codes = 1 << max(num_nodes - 1, 0)
    best_cut, best_code = -1, 0
    for start in range(0, num_codes, _CHUNK):
        codes = np.arange(start, min(start + _CHUNK, num_codes), dtype=np.int64)
        sides = ((codes >> shifts) & 1).astype(np.int8)  # (num_nodes, chunk)
        cut = np.zeros(codes.size, dtype=np.int32)
        for u, v in edges:
            cut += sides[u] ^ sides[v]
        i = int(cut.argmax())
        if cut[i] > best_cut:
            best_cut, best_code = int(cut[i]), int(codes[i])
    return ExactSolution(((best_code >> np.arange(num_nodes)) & 1).astype(np.int8), True)
