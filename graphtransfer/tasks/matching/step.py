"""The matching rules of one step, which an env (:class:`~graphtransfer.tasks.matching.env.MatchingEnv`)
and a batch of episodes (:class:`~graphtransfer.tasks.matching.batched.MatchingBatch`) share: the
live edges' prices, the node and edge features, and the step."""

from __future__ import annotations

import numpy as np

from graphtransfer.tasks.matching.rules import gains_over, locally_heaviest_over

SKIP, TAKE, WAIT = 0, 1, 2
"""a directed edge's actions"""


def live_prices(
    edge_index: np.ndarray, num_nodes: int, weights: np.ndarray, twin: np.ndarray, live: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The heaviest live weight at every node ``(num_nodes,)`` float32, every ``live`` edge's gain
    ``(L,)`` (:func:`~graphtransfer.tasks.matching.rules.gains_over`), and the best live gain at
    every node ``(num_nodes,)`` (-inf without live edges): all read a node's own edges only."""
    heaviest = np.zeros(num_nodes, dtype=np.float32)
    np.maximum.at(heaviest, edge_index[0, live], weights[live])
    gain = gains_over(edge_index, num_nodes, weights, twin, live)
    best_gain = np.full(num_nodes, -np.inf)
    np.maximum.at(best_gain, edge_index[0, live], gain)
    return heaviest, gain, best_gain


def matching_features(edges: np.ndarray, mate: np.ndarray, heaviest: np.ndarray, scale: float | np.ndarray) -> np.ndarray:
    """:class:`~graphtransfer.tasks.matching.env.MatchingEnv`'s node features ``(N, 3)`` float32 over the live ``edges`` ``(2, L)``;
    ``scale``: the graph's mean edge weight, or each node's graph's ``(N,)``."""
    degree = np.bincount(edges[0], minlength=mate.size)
    return np.stack([mate >= 0, np.log1p(degree), heaviest / weight_scale(scale, heaviest)], axis=1).astype(np.float32)


def matching_edge_features(
    edges: np.ndarray,
    weight: np.ndarray,
    gain: np.ndarray,
    heaviest: np.ndarray,
    best_gain: np.ndarray,
    scale: float | np.ndarray,
    divisor: float | np.ndarray,
) -> np.ndarray:
    """:class:`~graphtransfer.tasks.matching.env.MatchingEnv`'s edge features ``(L, 6)`` float32 of
    the live ``edges`` ``(2, L)`` of ``weight`` and ``gain`` ``(L,)``, given the nodes' heaviest
    weight and best gain (:func:`live_prices`). ``scale``: the graph's mean edge weight, and
    ``divisor``: that scale in the weights' dtype (:func:`weight_scale`); one value, or each edge's graph's ``(L,)``."""
    at_ends = weight == heaviest[edges[0]], weight == heaviest[edges[1]]
    best = gain == best_gain[edges[0]], gain == best_gain[edges[1]]
    return np.stack([weight / divisor, *at_ends, gain / scale, *best], axis=1).astype(np.float32)


def weight_scale(scale: float | np.ndarray, values: np.ndarray) -> np.ndarray:
    """``scale`` in ``values``' dtype, as numpy divides an array by a Python float: hashed float32
    weights divide in float32 (a batch, which holds every graph's weights in float64, divides by
    this divisor in float64 and rounds to float32: the same quotient), a file's float64 weights in float64."""
    return np.asarray(scale, dtype=values.dtype)


def match_step(
    edge_index: np.ndarray, priority: np.ndarray, twin: np.ndarray, live: np.ndarray, picked: np.ndarray, mate: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Rules 1-3 of :mod:`graphtransfer.tasks.matching.env` for every edge's ``picked`` action: the edges that join
    (both directions), and the live edges left. ``mate`` ``(num_nodes,)`` is updated in place.

    Shapes:
        edge_index: ``(2, E)``; priority, twin, picked: ``(E,)``; live: ``(L,)`` edge ids."""
    taken = (picked == TAKE) | (picked[twin] == TAKE)
    skipped = (picked == SKIP) & (picked[twin] == SKIP)
    joining = locally_heaviest_over(edge_index, mate.size, priority, twin, live[taken[live]])
    src, dst = edge_index[:, joining]
    mate[src], mate[dst] = dst, src
    src, dst = edge_index[:, live]
    return joining, live[~skipped[live] & (mate[src] < 0) & (mate[dst] < 0)]
