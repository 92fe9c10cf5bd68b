"""Classical maximum-weight-matching solvers to measure policies against. Solutions are
``(num_nodes,)`` int64, each node's mate (its position) and -1 where unmatched, weighted by
:func:`graphtransfer.graphs.edge_weights`, as :class:`~graphtransfer.tasks.matching.env.MatchingEnv` scores them."""

from __future__ import annotations

import numpy as np

from graphtransfer.baselines.exact import ExactSolution, check_size
from graphtransfer.graphs import Graph, edge_weights
from graphtransfer.tasks.matching.rules import PRICE_ROUNDS, gains, locally_heaviest, twin_edges

EXACT_MAX_NODES = 3000
"""Largest graph :func:`exact_blossom` accepts by default: networkx's blossom algorithm is pure
Python, cubic in the worst case; at 3,000 nodes it took 47 s (Erdős–Rényi, degree 4) and 69 s
(Barabási–Albert, m = 4) on 2 shared cores."""


def greedy_by_weight(graph: Graph) -> np.ndarray:
    """Heaviest edge first, skipping edges at matched nodes: a 1/2-approximation.

    Computed in vectorized rounds: every edge that is the heaviest remaining edge at both its
    endpoints joins (ties to the lower edge id), then the edges at matched nodes leave. Each
    round takes exactly the edges a sequential scan in that order takes, so the result is the
    sequential greedy's; rounds are few on random weights.
    """
    weights = edge_weights(graph)
    return _join_local_maxima(graph, np.flatnonzero(graph.edge_index[0] < graph.edge_index[1]), lambda live: weights)


def greedy_by_gain(graph: Graph, rounds: int = PRICE_ROUNDS) -> np.ndarray:
    """Greedy on gains instead of weights: in each round every live edge whose gain
    (:func:`~graphtransfer.tasks.matching.env.gains`, its weight less what its endpoints could get
    elsewhere) is the highest at both its endpoints joins (ties to the lower edge id), then the
    edges at matched nodes leave and the gains are recomputed on what is left. The rule the
    matching env's gain features point at, here without a policy, so that a policy's figure can
    be told apart from its features'.
    """
    weights, twin = edge_weights(graph), twin_edges(graph)

    def scores(live: np.ndarray) -> np.ndarray:
        score = np.full(weights.size, -np.inf)
        score[live] = gains(graph, weights, twin, live, rounds)
        return score

    return _join_local_maxima(graph, np.arange(graph.edge_index.shape[1]), scores, twin)


def _join_local_maxima(graph: Graph, live: np.ndarray, scores, twin: np.ndarray | None = None) -> np.ndarray:
    """Rounds in which every ``live`` edge whose score (``scores(live)``, one per directed edge)
    is the highest at both its endpoints joins, until no edge between unmatched nodes is left;
    the mate of each node, -1 where it has none."""
    twin = twin_edges(graph) if twin is None else twin
    mate = np.full(graph.num_nodes, -1, dtype=np.int64)
    while live.size:
        joined = locally_heaviest(graph, scores(live), twin, live)
        src, dst = graph.edge_index[:, joined]
        mate[src] = dst
        src, dst = graph.edge_index[:, live]
        live = live[(mate[src] < 0) & (mate[dst] < 0)]
    return mate


def path_growing(graph: Graph) -> np.ndarray:
    """Drake and Hougardy's path-growing 1/2-approximation, in linear time.

    From any node with edges left, walk along the heaviest remaining edge, deleting each node
    as it is left, and give the walk's edges alternately to two matchings; repeat until no
    edge is left and return the heavier matching. A Python loop over nodes (one walk step each):
    about a second per 100,000 nodes.
    """
    weights = edge_weights(graph)
    order = np.lexsort((-weights, graph.edge_index[0]))  # each node's edges, heaviest first
    starts = np.zeros(graph.num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(graph.edge_index[0], minlength=graph.num_nodes), out=starts[1:])
    neighbours, neighbour_weights = graph.edge_index[1, order].tolist(), weights[order].tolist()
    starts_list, deleted = starts.tolist(), [False] * graph.num_nodes
    mates = (np.full(graph.num_nodes, -1, dtype=np.int64), np.full(graph.num_nodes, -1, dtype=np.int64))
    totals = [0.0, 0.0]
    for start in range(graph.num_nodes):
        node, side = start, 0
        while not deleted[node]:
            deleted[node] = True
            nxt = next((k for k in range(starts_list[node], starts_list[node + 1]) if not deleted[neighbours[k]]), None)
            if nxt is None:
                break
            other = neighbours[nxt]
            if mates[side][node] < 0 and mates[side][other] < 0:
                mates[side][node], mates[side][other] = other, node
                totals[side] += neighbour_weights[nxt]
            node, side = other, 1 - side
    return mates[0] if totals[0] >= totals[1] else mates[1]


def exact_blossom(graph: Graph, max_nodes: int = EXACT_MAX_NODES) -> ExactSolution:
    """The maximum-weight matching by networkx's blossom algorithm (always optimal).

    Raises:
        GraphTooLargeError: the graph has more than ``max_nodes`` nodes.
    """
    check_size(graph, max_nodes, "matching exact_blossom", "'greedy-by-weight'")
    import networkx as nx  # here: networkx is slow to import and only this solver needs it

    src, dst = graph.edge_index
    once = src < dst
    nx_graph = nx.Graph()
    nx_graph.add_nodes_from(range(graph.num_nodes))
    nx_graph.add_weighted_edges_from(
        zip(src[once].tolist(), dst[once].tolist(), edge_weights(graph)[once].astype(float).tolist(), strict=True)
    )
    mate = np.full(graph.num_nodes, -1, dtype=np.int64)
    for u, v in nx.max_weight_matching(nx_graph):
        mate[u], mate[v] = v, u
    return ExactSolution(mate, True)
