"""Max-cut's iterated local search: what ``predict --polish`` runs from a policy's cut.

The tabu search (:mod:`graphtransfer.tasks.maxcut.search`) chooses each flip by an argmax over every
node, so a move costs ``O(N)``; on 10^4 nodes and more it makes a few dozen moves per node in ten
seconds. This search costs what it changes instead, as MIS's does: each node's *gain* (the cut's
change if it alone flipped) is kept up to date flip by flip; a *descent* flips nodes that gain from
a work list of the nodes a change touched until none gains; a *perturbation* flips a small ball of
the graph (a random node and nodes reached from it, so that on geometric graphs a whole region
changes side, moving the wall between two regions rather than scattering single flips), holds it
while the rest descends, then lets it descend too; an acceptance rule keeps or undoes the result.
Every :data:`MERGE_EVERY` perturbations the best cut is merged with the current one region by
region (where they differ, the side that cuts more of the region's edges): regions improved at
different times add up. The best cut seen is returned.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass

import numpy as np

from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph
from graphtransfer.tasks.mis.local_search import adjacency_lists, checked_seconds

DEFAULT_SECONDS = 10.0
"""seconds eval's ``--polish`` and the ``local-search`` baseline search at most"""

STALL_PER_NODE = 10
"""eval's ``--polish`` stops after ``STALL_PER_NODE * |V|`` perturbations without a larger cut"""

BALL_MEAN = 4.0
"""mean number of nodes a perturbation flips (geometric, at least 1)"""

MERGE_EVERY = 1000
"""perturbations between two merges of the best cut with the current one (at least one per
:data:`MERGE_NODES` nodes)"""

MERGE_NODES = 100

_CLOCK_EVERY = 64  # perturbations between looks at the clock


class _Cut:
    """Sides and flip gains as lists, with flips that log themselves for an exact undo."""

    def __init__(self, graph: Graph, side: np.ndarray):
        indptr, indices = self.csr = graph.csr()
        self.adjacency = adjacency_lists(graph)
        self.side = bytearray(side.astype(np.uint8).tobytes())
        src = np.repeat(np.arange(graph.num_nodes), np.diff(indptr))
        same = np.bincount(src[side[src] == side[indices]], minlength=graph.num_nodes)
        self.gain = (2 * same - np.diff(indptr)).tolist()
        self.cut = int((side[src] != side[indices]).sum()) // 2
        self.log: list[int] = []
        self.held: set[int] = set()

    def flip(self, v: int) -> None:
        side, gain = self.side, self.gain
        self.cut += gain[v]
        s = side[v]
        for u in self.adjacency[v]:
            gain[u] += 2 if side[u] != s else -2  # across before the flip: on v's side after it
        gain[v] = -gain[v]
        side[v] = 1 - s
        self.log.append(v)

    def undo(self) -> None:
        log, self.log = self.log, []
        for v in reversed(log):
            self.flip(v)
        self.log = []

    def descend(self, queue: list[int], deadline: float = math.inf) -> None:
        """Flip queued nodes that gain, queueing their neighbours, until none gains (or the
        ``deadline`` on the performance counter passes)."""
        gain, held, adjacency = self.gain, self.held, self.adjacency
        popped = 0
        while queue:
            popped += 1
            if popped % 4096 == 0 and time.perf_counter() >= deadline:
                return
            v = queue.pop()
            if gain[v] > 0 and v not in held:
                self.flip(v)
                queue.extend(adjacency[v])

    def perturb(self, rng: random.Random, num_nodes: int) -> list[int]:
        """Flip a ball of about :data:`BALL_MEAN` nodes around a random node and hold it; the
        nodes to descend from (the ball's neighbours)."""
        size = 1
        while rng.random() > 1 / BALL_MEAN:
            size += 1
        start = rng.randrange(num_nodes)
        ball, frontier = [start], [start]
        seen = {start}
        while frontier and len(ball) < size:
            v = frontier.pop(rng.randrange(len(frontier)))
            for u in self.adjacency[v]:
                if u not in seen and len(ball) < size:
                    seen.add(u)
                    ball.append(u)
                    frontier.append(u)
        for v in ball:
            self.flip(v)
        self.held = set(ball)
        return [u for v in ball for u in self.adjacency[v]]


@dataclass(frozen=True)
class CutSearch:
    """The best cut a search found: ``side`` ``(num_nodes,)`` int8, its ``cut`` edges and the
    ``perturbations`` tried."""

    side: np.ndarray
    cut: int
    perturbations: int


def iterated_cut_search(
    graph: Graph, side: np.ndarray, seconds: float, seed: int = 0, max_iterations: int | None = None, max_stall: int | None = None
) -> CutSearch:
    """The best cut of the iterated local search of this module from ``side`` (``(num_nodes,)``
    0/1) for ``seconds``, ``max_iterations`` perturbations or ``max_stall`` perturbations without
    a larger cut (with a budget that does not run out first, the result depends only on the graph,
    ``side`` and ``seed``). An iteration that loses ``d`` edges against the current cut, ``d*``
    against the best, is kept with probability ``1 / (1 + d d*)``, else undone. The cut is never
    smaller than ``side``'s."""
    seconds = checked_seconds(seconds, DEFAULT_SECONDS)
    side = _checked_sides(graph, side)
    deadline = time.perf_counter() + seconds
    search = _Cut(graph, side)
    search.descend(list(range(graph.num_nodes)), deadline)
    best, best_cut = bytes(search.side), search.cut
    rng = random.Random(seed)
    merge_every = max(MERGE_EVERY, graph.num_nodes // MERGE_NODES)
    iteration = stall = 0
    while graph.num_edges and (max_iterations is None or iteration < max_iterations) and (max_stall is None or stall < max_stall):
        if iteration % _CLOCK_EVERY == 0 and time.perf_counter() >= deadline:
            break
        iteration += 1
        stall += 1
        before = search.cut
        search.log = []
        search.descend(search.perturb(rng, graph.num_nodes))
        held, search.held = list(search.held), set()
        search.descend(held)
        if search.cut > best_cut:
            best, best_cut, stall = bytes(search.side), search.cut, 0
        lost = before - search.cut
        if lost > 0 and rng.random() * (1 + lost * (best_cut - search.cut)) >= 1:
            search.undo()
        if iteration % merge_every == 0 and best != bytes(search.side):
            merged = merge_cuts(*search.csr, _sides(best), _sides(bytes(search.side)))
            gained = _cut_of(*search.csr, merged)
            if gained > best_cut:
                best, best_cut, stall = merged.astype(np.uint8).tobytes(), gained, 0
    return CutSearch(_sides(best), best_cut, iteration)


def search_cut(graph: Graph, side: np.ndarray, seconds: float, seed: int = 0, kernel: object = None) -> tuple[np.ndarray, int]:
    """Predict's ``--polish``: :func:`iterated_cut_search` from ``side`` for the whole of
    ``seconds``. ``kernel`` is MIS's and is not read (max-cut has none). Returns the sides and
    the perturbations tried."""
    result = iterated_cut_search(graph, side, seconds, seed)
    return result.side, result.perturbations


def polish_cut(graph: Graph, side: np.ndarray, seconds: float = DEFAULT_SECONDS, seed: int = 0) -> np.ndarray:
    """Eval's ``--polish``: :func:`iterated_cut_search` from ``side`` for at most ``seconds``,
    stopping after :data:`STALL_PER_NODE` ``* |V|`` perturbations without a larger cut."""
    return iterated_cut_search(graph, side, seconds, seed, max_stall=max(STALL_PER_NODE * graph.num_nodes, 1)).side


def local_search_cut(graph: Graph, seconds: float = DEFAULT_SECONDS, seed: int = 0) -> np.ndarray:
    """A baseline: :func:`polish_cut` from a seeded uniformly random cut."""
    return polish_cut(graph, np.random.default_rng(seed).integers(0, 2, graph.num_nodes, dtype=np.int8), seconds, seed)


def merge_cuts(indptr: np.ndarray, indices: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """``(num_nodes,)`` int8 sides cutting at least as many edges as each of ``first`` and
    ``second``: in every connected part of the graph the nodes where they differ span, the sides
    of the one that cuts more of the edges at the part (ties: ``first``'s). The parts share no
    edge, and the nodes outside them sit alike in both, so each part's choice counts alone."""
    from scipy.sparse import coo_array  # here, not at the top: scipy.sparse costs every command's start
    from scipy.sparse.csgraph import connected_components

    differ = np.flatnonzero(first != second)
    if differ.size == 0:
        return first.astype(np.int8)
    position = np.full(first.size, -1, dtype=np.int64)
    position[differ] = np.arange(differ.size)
    src = np.repeat(np.arange(first.size), np.diff(indptr))
    at_part = position[src] >= 0
    src, dst = src[at_part], indices[at_part]  # every edge at a differing node, from it
    inside = position[dst] >= 0
    pairs = coo_array((np.ones(int(inside.sum())), (position[src[inside]], position[dst[inside]])), shape=(differ.size,) * 2)
    count, part = connected_components(pairs.tocsr(), directed=False)
    of_edge = part[position[src]]
    once = np.where(inside, 0.5, 1.0)  # an edge inside a part is listed from both its ends
    cut_first = np.bincount(of_edge, weights=(first[src] != first[dst]) * once, minlength=count)
    cut_second = np.bincount(of_edge, weights=(second[src] != second[dst]) * once, minlength=count)
    merged = first.astype(np.int8)
    take = cut_second[part] > cut_first[part]
    merged[differ[take]] = second[differ[take]]
    return merged


def _cut_of(indptr: np.ndarray, indices: np.ndarray, side: np.ndarray) -> int:
    src = np.repeat(np.arange(side.size), np.diff(indptr))
    return int((side[src] != side[indices]).sum()) // 2


def _sides(values: bytes) -> np.ndarray:
    return np.frombuffer(values, dtype=np.uint8).astype(np.int8)


def _checked_sides(graph: Graph, side: np.ndarray) -> np.ndarray:
    side = np.asarray(side)
    if side.shape != (graph.num_nodes,) or not np.isin(side, (0, 1)).all():
        raise UsageError(f"side must be ({graph.num_nodes},) zeros and ones, one per node of {graph.name or 'the graph'}")
    return side.astype(np.int8)
