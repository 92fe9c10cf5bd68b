"""Minimum-weight vertex cover's search: an iterated local search for a heavy independent set, whose
complement is a light cover (what ``eval --polish`` and ``predict --polish`` run for
``mvc-weighted``, and what a user's weighted-cover env may declare as its ``search``).

The moves are the weighted ones of Nogueira, Pinheiro and Subramanian's ILS-VND for maximum-weight
independent set (2018), on a set kept with each vertex's *tightness* (its neighbours in the set)
and the *weight of its set neighbours*:

- an *(ω,1)-swap* inserts an outside vertex ``v`` heavier than its set neighbours together, which
  leave (a free vertex, with none, always goes in);
- a *(1,k)-swap* removes a set vertex ``x`` and inserts the 1-tight neighbours of ``x`` (whose only
  set neighbour is ``x``) taken heaviest first while they stay independent, when they outweigh ``x``.

Local search applies swaps from a work list of the vertices a change touched until none gains; a
*perturbation* then forces a random outside vertex in (a few close together, now and then), the
set descends again with it held, and an acceptance rule keeps or undoes the result. Every
:data:`~graphtransfer.tasks.mis.local_search.MERGE_EVERY` perturbations the best set is merged with
the current one region by region, the heavier side of each (as MIS's search does by size). The
heaviest set seen is returned. Plain Python over lists, as MIS's search: an iteration costs the
neighbourhoods it changes, not the graph.
"""

from __future__ import annotations

import math
import random
import time

import numpy as np

from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph
from graphtransfer.graphs.weights import node_weights
from graphtransfer.tasks.mis.local_search import (
    MERGE_EVERY,
    MERGE_NODES,
    LoggedSet,
    adjacency_lists,
    as_bools,
    checked_cover,
    checked_seconds,
    merge_sets,
)
from graphtransfer.tasks.mvc.baselines import greedy_weight_degree

DEFAULT_SECONDS = 10.0
"""seconds eval's ``--polish`` gives the search at most (it also stops after :data:`STALL_PER_NODE`)"""

STALL_PER_NODE = 10
"""eval's ``--polish`` stops after ``STALL_PER_NODE * |V|`` perturbations without a lighter cover"""

_CLOCK_EVERY = 64  # iterations between looks at the clock
_GAIN_EPS = 1e-9  # a file's weights are floats: a move must gain more than rounding, relative to the mean weight


class _HeavySet(LoggedSet):
    """An independent set with, for every vertex, its set neighbours' count and weight."""

    def __init__(self, graph: Graph, chosen: np.ndarray, weights: np.ndarray):
        self.csr = graph.csr()
        self.adjacency = adjacency_lists(graph)
        self.w = weights.tolist()
        self.eps = _GAIN_EPS * max(float(weights.mean()) if weights.size else 1.0, 1e-12)
        self.in_set = bytearray(chosen.astype(np.uint8).tobytes())
        src, dst = graph.edge_index
        inside = chosen[src]
        self.tight = np.bincount(dst[inside], minlength=graph.num_nodes).tolist()
        self.around = np.bincount(dst[inside], weights=weights[src[inside]], minlength=graph.num_nodes).tolist()
        self.weight = float(weights[chosen].sum())
        self.size = int(chosen.sum())
        self.log = []
        self.forced = set()

    def insert(self, v: int) -> None:
        self.in_set[v] = 1
        wv = self.w[v]
        self.weight += wv
        self.size += 1
        self.log.append(v)
        tight, around = self.tight, self.around
        for u in self.adjacency[v]:
            tight[u] += 1
            around[u] += wv

    def remove(self, v: int) -> None:
        self.in_set[v] = 0
        wv = self.w[v]
        self.weight -= wv
        self.size -= 1
        self.log.append(~v)
        tight, around = self.tight, self.around
        for u in self.adjacency[v]:
            tight[u] -= 1
            around[u] -= wv

    def swap_in(self, v: int) -> list[int] | None:
        """The (ω,1)-swap at outside ``v``, made where it gains: the vertices that left (None: no gain)."""
        if self.w[v] <= self.around[v] + self.eps:
            return None
        in_set, forced = self.in_set, self.forced
        leaving = [u for u in self.neighbours(v) if in_set[u]]
        if forced and not forced.isdisjoint(leaving):
            return None
        for u in leaving:
            self.remove(u)
        self.insert(v)
        return leaving

    def swap_out(self, x: int) -> list[int] | None:
        """The (1,k)-swap at set vertex ``x``, made where it gains: the vertices that joined (None: no gain)."""
        if x in self.forced:
            return None
        tight, in_set, w = self.tight, self.in_set, self.w
        free = [u for u in self.adjacency[x] if tight[u] == 1 and not in_set[u]]
        if len(free) < 2 or sum(w[u] for u in free) <= w[x] + self.eps:
            return None  # a single heavier 1-tight neighbour is that neighbour's (ω,1)-swap
        free.sort(key=w.__getitem__, reverse=True)
        taken: list[int] = []
        blocked: set[int] = set()
        total = 0.0
        for u in free:
            if u not in blocked:
                taken.append(u)
                total += w[u]
                blocked.update(self.neighbours(u))
        if total <= w[x] + self.eps:
            return None
        self.remove(x)
        for u in taken:
            self.insert(u)
        return taken

    def touched(self, removed: list[int], inserted: list[int], queue: list[int]) -> None:
        """Queue where a change may have opened a swap: the outside neighbours of vertices that
        left (lighter set neighbours: an (ω,1)-swap), the one set neighbour of each of them now
        1-tight (a (1,k)-swap), and the vertices that joined (their 1-tight neighbours)."""
        in_set, tight, adjacency = self.in_set, self.tight, self.adjacency
        for z in removed:
            for y in adjacency[z]:
                if in_set[y]:
                    continue
                queue.append(y)
                if tight[y] == 1:
                    queue.append(next(t for t in adjacency[y] if in_set[t]))
        queue.extend(inserted)

    def descend(self, queue: list[int], deadline: float = math.inf) -> None:
        """Apply swaps from the queue, and where each swap may open more, until none gains (or the
        ``deadline``, on the performance counter, passes; the set stays independent)."""
        in_set = self.in_set
        popped = 0
        while queue:
            popped += 1
            if popped % _CLOCK_EVERY == 0 and time.perf_counter() >= deadline:
                return
            z = queue.pop()
            if in_set[z]:
                joined = self.swap_out(z)
                if joined is not None:
                    self.touched([z], joined, queue)
            else:
                left = self.swap_in(z)
                if left is not None:
                    self.touched(left, [z], queue)

    def perturb(self, rng: random.Random, num_nodes: int) -> list[int]:
        """Force a random outside vertex in (and, once in ``2|S|`` iterations on average, a few more
        two steps away, their number geometric), their set neighbours out; the vertices to search from."""
        v = rng.randrange(num_nodes)
        while self.in_set[v]:
            v = rng.randrange(num_nodes)
        forced, removed = self.force_in(v, rng)
        queue: list[int] = []
        self.touched(removed, forced, queue)
        return queue

    def become(self, target: np.ndarray, deadline: float) -> None:
        """Make the independent set ``target`` the current one, fill it to a maximal set and descend
        from where it changed: never lighter than ``target``."""
        removed, inserted = self.switch_to(target)
        queue: list[int] = []
        self.touched(removed, inserted, queue)
        self.descend(queue, deadline)
        self.log = []


def heavy_set_search(
    graph: Graph,
    start: np.ndarray,
    seconds: float,
    seed: int = 0,
    max_stall: int | None = None,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """A heavy independent set by the iterated local search of this module, from ``start``
    (``(num_nodes,)`` bool, independent) for ``seconds`` or until ``max_stall`` perturbations find
    no heavier set. ``weights``: the nodes' (default :func:`~graphtransfer.graphs.weights.node_weights`).
    An iteration that loses ``d`` against the current set, ``d*`` against the best (both in mean
    weights), is kept with probability ``1 / (1 + d d*)``, else undone. Returns the heaviest set
    seen (never lighter than ``start``) and the perturbations tried."""
    deadline = time.perf_counter() + seconds
    weights = np.asarray(node_weights(graph) if weights is None else weights, dtype=np.float64)
    if weights.shape != (graph.num_nodes,) or not np.isfinite(weights).all():
        name = graph.name or "the graph"
        raise UsageError(f"the node weights of {name} must be {graph.num_nodes} finite numbers, one per node; fix the file's weights")
    search = _HeavySet(graph, start, weights)
    search.descend(list(range(graph.num_nodes)), deadline)
    best, best_weight = bytes(search.in_set), search.weight
    rng = random.Random(seed)
    unit = max(float(weights.mean()), 1e-12) if weights.size else 1.0
    merge_every = max(MERGE_EVERY, graph.num_nodes // MERGE_NODES)
    iteration = stall = 0
    everything = search.size == graph.num_nodes  # no edges: nothing to perturb
    while not everything and (max_stall is None or stall < max_stall):
        if iteration % _CLOCK_EVERY == 0 and time.perf_counter() >= deadline:
            break
        iteration += 1
        stall += 1
        before = search.weight
        search.log = []
        search.descend(search.perturb(rng, graph.num_nodes))
        forced, search.forced = list(search.forced), set()
        search.descend(forced)  # swaps at the forced vertices, now allowed
        if search.weight > best_weight + search.eps:
            best, best_weight, stall = bytes(search.in_set), search.weight, 0
        lost = (before - search.weight) / unit
        if lost > _GAIN_EPS and rng.random() * (1 + lost * (best_weight - search.weight) / unit) >= 1:
            search.undo()
        if iteration % merge_every == 0 and best != bytes(search.in_set):
            merged = merge_sets(*search.csr, as_bools(best), as_bools(search.in_set), weights)
            if float(weights[merged].sum()) > best_weight + search.eps:
                search.become(merged, deadline)
                best, best_weight, stall = bytes(search.in_set), search.weight, 0
    return as_bools(best), iteration


def search_weighted_cover(
    graph: Graph, solution: np.ndarray, seconds: float, seed: int = 0, kernel: object = None
) -> tuple[np.ndarray, int]:
    """Predict's ``--polish``: :func:`heavy_set_search` from the cover's complement for the whole
    of ``seconds``, never heavier than ``solution``; the complement of the set it finds. ``kernel``
    is MIS's (it keeps sizes, not weights) and is not read. Returns the cover and the perturbations tried."""
    found, iterations = heavy_set_search(graph, ~checked_cover(graph, solution), checked_seconds(seconds, DEFAULT_SECONDS), seed)
    return ~found, iterations


def improve_weighted_cover(graph: Graph, cover: np.ndarray, seconds: float = DEFAULT_SECONDS, seed: int = 0) -> np.ndarray:
    """Eval's ``--polish``: :func:`heavy_set_search` from the cover's complement for at most
    ``seconds``, stopping after :data:`STALL_PER_NODE` ``* |V|`` perturbations without a lighter
    cover (small graphs stop early); the lighter cover, never heavier than ``cover``."""
    stall = max(STALL_PER_NODE * graph.num_nodes, 1)
    found, _ = heavy_set_search(graph, ~checked_cover(graph, cover), checked_seconds(seconds, DEFAULT_SECONDS), seed, max_stall=stall)
    return ~found


def search_light_cover(graph: Graph, seconds: float = DEFAULT_SECONDS, seed: int = 0) -> np.ndarray:
    """A baseline: greedy weight/degree's cover improved by :func:`improve_weighted_cover`."""
    return improve_weighted_cover(graph, greedy_weight_degree(graph), seconds, seed)
