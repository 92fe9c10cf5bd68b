"""Matching's rules shared by its env and its baselines: each edge's twin, the gain prices, the
locally heaviest edges."""

from __future__ import annotations

import numpy as np

from graphtransfer.graphs import Graph
from graphtransfer.graphs.graph import sorted_unique

PRICE_ROUNDS = 5
"""rounds of max-product message passing behind the gain features (see :func:`gains`): taking the
highest-gain edges gets closer to greedy-by-weight's matching with more rounds, level after 5
(``bench/path_matching_quality.py --task rounds``)"""


def twin_edges(graph: Graph) -> np.ndarray:
    """``(2|E|,)`` int64: the column of ``graph.edge_index`` holding each edge's other direction."""
    src, dst = graph.edge_index
    keys, reverse = src * graph.num_nodes + dst, dst * graph.num_nodes + src
    order = np.argsort(keys)
    return order[np.searchsorted(keys, reverse, sorter=order)]


def gains(graph: Graph, weights: np.ndarray, twin: np.ndarray, live: np.ndarray, rounds: int = PRICE_ROUNDS) -> np.ndarray:
    """:func:`gains_over` the edges of ``graph``."""
    return gains_over(graph.edge_index, graph.num_nodes, weights, twin, live, rounds)


def gains_over(
    edge_index: np.ndarray, num_nodes: int, weights: np.ndarray, twin: np.ndarray, live: np.ndarray, rounds: int = PRICE_ROUNDS
) -> np.ndarray:
    """Each live edge's weight less what its endpoints could get elsewhere, by ``rounds`` rounds
    of max-product message passing (belief propagation for maximum-weight matching).

    The price of ``u`` without ``v``, ``p(u, v)``, starts at 0; each round it becomes the best
    ``w(u, x) - p(x, u)`` over ``u``'s other live edges (0 if none is positive). The gain of
    ``(u, v)`` is ``w(u, v) - p(u, v) - p(v, u)``: positive where the edge beats both endpoints'
    alternatives. One round prices an endpoint by its next-heaviest edge; more rounds look
    further. Each round is one pass over the live edges, ``O(E)``.

    A node's prices read its own edges only, so the gains over a disjoint union of graphs (a
    training batch's) are each graph's.

    Shapes:
        edge_index, weights, twin: ``(2, 2|E|)``, ``(2|E|,)``, over nodes ``0..num_nodes-1``; live:
        ``(L,)`` directed edge ids, both directions of each live edge; returns ``(L,)`` float64,
        the same for both directions of an edge.
    """
    src = edge_index[0, live]
    position = np.full(weights.size, -1, dtype=np.int64)
    position[live] = np.arange(live.size)
    reverse = position[twin[live]]  # (L,): where each live edge's other direction sits
    weight = weights[live].astype(np.float64)
    price = np.zeros(live.size)  # price[e] for e = (u, v): p(u, v)
    for _ in range(rounds):
        value = weight - price[reverse]  # what u gets from e = (u, x): w(u, x) - p(x, u)
        price = np.maximum(0.0, best_but_this(num_nodes, src, value))
    return weight - price - price[reverse]


def best_but_this(num_nodes: int, src: np.ndarray, value: np.ndarray) -> np.ndarray:
    """For every edge ``e`` out of ``src[e]``, the best ``value`` among the other edges out of
    ``src[e]`` (``-inf`` when it has none). ``(L,)``."""
    first = np.full(num_nodes, -np.inf)
    np.maximum.at(first, src, value)
    top = value == first[src]
    ties = np.bincount(src[top], minlength=num_nodes)
    second = np.full(num_nodes, -np.inf)
    np.maximum.at(second, src[~top], value[~top])
    second = np.where(ties > 1, first, second)
    return np.where(top, second[src], first[src])


def locally_heaviest(graph: Graph, weights: np.ndarray, twin: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """:func:`locally_heaviest_over` the edges of ``graph``."""
    return locally_heaviest_over(graph.edge_index, graph.num_nodes, weights, twin, candidates)


def locally_heaviest_over(
    edge_index: np.ndarray, num_nodes: int, weights: np.ndarray, twin: np.ndarray, candidates: np.ndarray
) -> np.ndarray:
    """The candidate edges that are the heaviest candidate at both endpoints (ties: the lower
    edge id), both directions of each: never two at one node, and the heaviest candidate always.
    ``weights`` may be any priority (the env passes gains).

    Edges compare at shared nodes only, ranked by weight then id, so over a disjoint union of
    graphs whose edge ids keep each graph's order the answer is each graph's.

    Shapes:
        edge_index, weights, twin: ``(2, 2|E|)``, ``(2|E|,)``, over nodes ``0..num_nodes-1``;
        candidates: ``(C,)`` directed edge ids, one or both directions of an edge; returns
        ``(2K,)`` directed edge ids.
    """
    edges = sorted_unique(np.minimum(candidates, twin[candidates]))  # one id per undirected edge
    if edges.size == 0:
        return edges
    src, dst = edge_index[:, edges]
    rank = np.empty(edges.size, dtype=np.int64)
    rank[np.lexsort((edges, -weights[edges].astype(np.float64)))] = np.arange(edges.size)  # heaviest first
    best = np.full(num_nodes, edges.size, dtype=np.int64)
    np.minimum.at(best, src, rank)
    np.minimum.at(best, dst, rank)
    joined = edges[(best[src] == rank) & (best[dst] == rank)]
    return np.concatenate([joined, twin[joined]])


def is_matching(graph: Graph, mate: np.ndarray) -> bool:
    """``mate`` ``(num_nodes,)`` pairs nodes symmetrically along edges of ``graph``; -1 is unmatched."""
    mate = np.asarray(mate)
    if mate.shape != (graph.num_nodes,) or ((mate < -1) | (mate >= graph.num_nodes)).any():
        return False
    matched = np.flatnonzero(mate >= 0)
    if not (mate[mate[matched]] == matched).all() or (mate[matched] == matched).any():
        return False
    src, dst = graph.edge_index
    keys = np.sort(src * graph.num_nodes + dst)
    wanted = matched * graph.num_nodes + mate[matched]
    found = np.minimum(np.searchsorted(keys, wanted), keys.size - 1) if keys.size else np.zeros(0, dtype=np.int64)
    return bool(matched.size == 0 or (keys.size and (keys[found] == wanted).all()))
