"""Classical minimum-vertex-cover solvers to measure policies against, unweighted and weighted
(the weights of :func:`graphtransfer.graphs.weights.node_weights`). Solutions are ``(num_nodes,)``
bool, ``True`` for nodes in the cover."""

from __future__ import annotations

import heapq

import numpy as np

from graphtransfer.baselines.exact import ExactSolution, check_size, solve_edge_milp
from graphtransfer.graphs import Graph
from graphtransfer.graphs.weights import node_weights

MILP_MAX_NODES = 500
"""Largest graph :func:`exact_milp` accepts by default; sparse random graphs of 300 nodes already
take HiGHS more than 10 s to prove optimal."""


def maximal_matching_2approx(graph: Graph, seed: int = 0) -> np.ndarray:
    """Both endpoints of every edge of a maximal matching. Any cover holds at least one endpoint
    of each matched edge, so this cover is at most twice the minimum.

    The matching is the greedy one over the edges in a seeded random order, computed in
    vectorized rounds: an edge that comes first among the remaining edges at both of its
    endpoints is matched, exactly as a sequential scan would, then every edge touching a
    matched node leaves. A random order keeps the number of rounds logarithmic.
    """
    src, dst = graph.edge_index
    once = src < dst  # every undirected edge is stored in both directions
    u, v = src[once], dst[once]
    num_edges = u.size
    rank = np.random.default_rng(seed).permutation(num_edges)
    matched = np.zeros(graph.num_nodes, dtype=bool)
    while u.size:
        first = np.full(graph.num_nodes, num_edges)  # rank of each node's earliest remaining edge
        np.minimum.at(first, u, rank)
        np.minimum.at(first, v, rank)
        joins = (first[u] == rank) & (first[v] == rank)
        matched[u[joins]] = True
        matched[v[joins]] = True
        left = ~(matched[u] | matched[v])
        u, v, rank = u[left], v[left], rank[left]
    return matched


def greedy_max_degree(graph: Graph) -> np.ndarray:
    """Repeatedly take a node covering the most uncovered edges until every edge is covered.

    Degrees count uncovered edges and are updated exactly after every pick. They only fall, so
    nodes wait in one bucket per degree and the highest non-empty bucket only moves down: O(|V| +
    |E|). An entry whose node changed degree since it was queued is skipped when it comes up.
    Ties go to the node that reached that degree last (initially the highest id).
    """
    indptr, indices = graph.csr()
    indptr, indices = indptr.tolist(), indices.tolist()  # Python ints: much faster to index in a loop
    degree = [indptr[v + 1] - indptr[v] for v in range(graph.num_nodes)]
    top = max(degree, default=0)
    buckets: list[list[int]] = [[] for _ in range(top + 1)]
    for v, d in enumerate(degree):
        buckets[d].append(v)
    taken = []
    while top > 0:
        bucket = buckets[top]
        if not bucket:
            top -= 1
            continue
        v = bucket.pop()
        if degree[v] != top:
            continue  # stale entry
        taken.append(v)
        degree[v] = 0
        for u in indices[indptr[v] : indptr[v + 1]]:
            d = degree[u]
            # d == 0: u is in the cover already; otherwise edge (u, v) was uncovered until now.
            if d:
                degree[u] = d - 1
                buckets[d - 1].append(u)
    cover = np.zeros(graph.num_nodes, dtype=bool)
    cover[taken] = True
    return cover


def exact_milp(graph: Graph, time_limit: float = 10.0, max_nodes: int = MILP_MAX_NODES) -> ExactSolution:
    """Minimum vertex cover as a 0/1 integer program solved by HiGHS: minimise ``Σ x_v``
    subject to ``x_u + x_v ≥ 1`` for every edge.

    When ``time_limit`` seconds run out before optimality is proven, the result holds the
    smaller of HiGHS's best cover and :func:`greedy_max_degree`'s, with ``optimal=False``.

    Raises:
        GraphTooLargeError: the graph has more than ``max_nodes`` nodes.
    """
    check_size(graph, max_nodes, "mvc exact_milp", "'greedy-max-degree'")
    found, optimal = solve_edge_milp(graph, maximise=False, time_limit=time_limit)
    if optimal and found is not None:  # an optimum is a solution found
        return ExactSolution(found, True)
    greedy = greedy_max_degree(graph)
    if found is None or greedy.sum() < found.sum():
        return ExactSolution(greedy, False)
    return ExactSolution(found, False)


def greedy_weight_degree(graph: Graph, weights: np.ndarray | None = None) -> np.ndarray:
    """Repeatedly take the node that pays least per edge it covers -- least ``weight / uncovered
    degree`` -- until every edge is covered (Chvátal's greedy for weighted set cover, within a
    factor ``H(max degree)`` of the optimum). ``weights`` default to the graph's
    :func:`~graphtransfer.graphs.weights.node_weights`.

    Ratios only rise as degrees fall, so a heap of possibly outdated ratios is exact when an entry
    is checked as it comes up: one whose node's ratio has risen goes back in at its current ratio
    (lazy greedy). Far fewer heap operations than updating every neighbour's entry: 250,000 nodes
    in seconds. Ties go to the lower node id.
    """
    weights = (node_weights(graph) if weights is None else np.asarray(weights, dtype=np.float64)).tolist()
    indptr, indices = graph.csr()
    indptr, indices = indptr.tolist(), indices.tolist()  # Python ints: much faster to index in a loop
    degree = [indptr[v + 1] - indptr[v] for v in range(graph.num_nodes)]
    heap = [(weights[v] / d, v) for v, d in enumerate(degree) if d]
    heapq.heapify(heap)
    taken = []
    while heap:
        ratio, v = heapq.heappop(heap)
        if not degree[v]:
            continue  # every edge of v is covered
        current = weights[v] / degree[v]
        if ratio != current:
            heapq.heappush(heap, (current, v))
            continue
        taken.append(v)
        degree[v] = 0
        for u in indices[indptr[v] : indptr[v + 1]]:
            if degree[u]:  # edge (u, v) was uncovered until now
                degree[u] -= 1
    cover = np.zeros(graph.num_nodes, dtype=bool)
    cover[taken] = True
    return cover


def exact_milp_weighted(graph: Graph, time_limit: float = 10.0, max_nodes: int = MILP_MAX_NODES) -> ExactSolution:
    """Minimum-weight vertex cover as a 0/1 integer program solved by HiGHS: minimise ``Σ w_v x_v``
    subject to ``x_u + x_v ≥ 1`` for every edge, with the graph's
    :func:`~graphtransfer.graphs.weights.node_weights`.

    When ``time_limit`` seconds run out before optimality is proven, the result holds the lighter
    of HiGHS's best cover and :func:`greedy_weight_degree`'s, with ``optimal=False``.

    Raises:
        GraphTooLargeError: the graph has more than ``max_nodes`` nodes.
    """
    check_size(graph, max_nodes, "mvc-weighted exact_milp_weighted", "'greedy-weight-degree'")
    weights = node_weights(graph)
    found, optimal = solve_edge_milp(graph, maximise=False, time_limit=time_limit, weights=weights)
    if optimal and found is not None:  # an optimum is a solution found
        return ExactSolution(found, True)
    greedy = greedy_weight_degree(graph, weights)
    if found is None or weights[greedy].sum() < weights[found].sum():
        return ExactSolution(greedy, False)
    return ExactSolution(found, False)
