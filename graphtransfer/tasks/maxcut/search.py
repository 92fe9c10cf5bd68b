"""Max-cut's classical searches: the one-flip descent, and the tabu search that is maxcut's anchor
baseline (``tabu``). The search ``--polish`` runs is :mod:`graphtransfer.tasks.maxcut.local_search`."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph

DEFAULT_TABU_SECONDS = 10.0
"""seconds the tabu search runs by default, as MIS's local search"""

_CLOCK_EVERY = 256  # moves between two reads of the clock


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


@dataclass(frozen=True)
class TabuResult:
    """The best cut a tabu search found: ``side`` ``(num_nodes,)`` int8, its ``cut`` edges, and
    the ``moves`` (single flips) it made."""

    side: np.ndarray
    cut: int
    moves: int


def tabu_search(
    graph: Graph,
    side: np.ndarray,
    seconds: float = DEFAULT_TABU_SECONDS,
    seed: int = 0,
    patience: int | None = None,
    max_moves: int | None = None,
) -> TabuResult:
    """Tabu search for max-cut from ``side``, never worse than it.

    Every move flips the node whose flip gains most (``gain = same-side - other-side
    neighbours``), even when that loses edges, among the nodes not flipped in the last
    ``tenure`` moves (a random tenure of a few to ``N / 100`` moves); a tabu node may still flip
    when that beats the best cut so far. After ``max(1000, N)`` moves without a new best, the
    search restarts from the best cut with ``N / 50`` random nodes flipped (the breakout
    perturbation of Benlic and Hao's breakout local search). One flip updates the gains of the
    node's neighbours only; choosing the move is one masked argmax over the nodes, so a move
    costs ``O(N)`` numpy work (about 25k moves/s at 10^4 nodes on one core).

    Args:
        seconds: the time budget; the whole of it unless ``patience`` or ``max_moves`` ends first.
        patience: stop after this many moves without a new best (None: never).
        max_moves: stop after this many moves (None: never); with it the search is reproducible.
    """
    if not (isinstance(seconds, (int, float)) and np.isfinite(seconds) and seconds > 0):
        raise UsageError(f"seconds={seconds!r} must be a positive number, e.g. {DEFAULT_TABU_SECONDS}")
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    num_nodes = graph.num_nodes
    indptr, indices = graph.csr()
    side = side.astype(np.int8).copy()
    gain = _flip_gains(graph, side)
    cut = _cut(graph, side)
    best_side, best_cut = side.copy(), cut
    tabu_until = np.zeros(num_nodes, dtype=np.int64)
    tenure_low, tenure_span = 3 + min(10, num_nodes // 10), max(num_nodes // 100, 1) + 1
    stall_limit, kick = max(1000, num_nodes), max(num_nodes // 50, 2)
    move = last_best = 0
    if num_nodes == 0 or not indices.size:
        return TabuResult(side, cut, 0)
    while True:
        if max_moves is not None and move >= max_moves:
            break
        if patience is not None and move - last_best >= patience:
            break
        if move % _CLOCK_EVERY == 0 and time.perf_counter() - started >= seconds:
            break
        allowed = (tabu_until <= move) | (cut + gain > best_cut)  # aspiration: a tabu flip that sets a new best
        scores = np.where(allowed, gain, np.iinfo(np.int64).min)
        v = int(scores.argmax())
        if not allowed[v]:
            break  # every node is tabu: a tenure longer than the graph
        cut += int(gain[v])
        _flip(side, gain, indptr, indices, v)
        tabu_until[v] = move + tenure_low + int(rng.integers(tenure_span))
        move += 1
        if cut > best_cut:
            best_side, best_cut, last_best = side.copy(), cut, move
        elif move - last_best >= stall_limit and (move - last_best) % stall_limit == 0:
            side = best_side.copy()
            side[rng.choice(num_nodes, size=min(kick, num_nodes), replace=False)] ^= 1
            gain, cut = _flip_gains(graph, side), _cut(graph, side)
            tabu_until[:] = 0
    return TabuResult(best_side, best_cut, move)


def tabu_cut(graph: Graph, seconds: float = DEFAULT_TABU_SECONDS, seed: int = 0) -> np.ndarray:
    """The anchor baseline: :func:`tabu_search` from a seeded random cut for ``seconds``, or until
    ``10 N + 1000`` moves find no new best (tiny graphs stop in a fraction of a second):
    ``(num_nodes,)`` int8 sides."""
    start = np.random.default_rng(seed).integers(0, 2, graph.num_nodes, dtype=np.int8)
    return tabu_search(graph, start, seconds, seed, patience=10 * graph.num_nodes + 1000).side


def _flip_gains(graph: Graph, side: np.ndarray) -> np.ndarray:
    """``(num_nodes,)`` int64: the cut's change if each node alone flipped."""
    src, dst = graph.edge_index
    degree = np.bincount(src, minlength=graph.num_nodes)
    same = np.bincount(src[side[src] == side[dst]], minlength=graph.num_nodes)
    return (2 * same - degree).astype(np.int64)


def _cut(graph: Graph, side: np.ndarray) -> int:
    src, dst = graph.edge_index
    return int((side[src] != side[dst]).sum()) // 2


def _flip(side: np.ndarray, gain: np.ndarray, indptr: np.ndarray, indices: np.ndarray, v: int) -> None:
    """Flip ``v`` and update the gains in place: each neighbour that was on ``v``'s side is now
    across (its gain falls by 2), each that was across is now on its side (rises by 2)."""
    neighbours = indices[indptr[v] : indptr[v + 1]]
    was_same = side[neighbours] == side[v]
    gain[neighbours] += np.where(was_same, -2, 2)
    gain[v] = -gain[v]
    side[v] ^= 1
