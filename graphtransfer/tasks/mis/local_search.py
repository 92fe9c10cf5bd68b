"""Iterated local search for maximum independent sets, after Andrade, Resende and Werneck, "Fast
local search for the maximum independent set problem" (Journal of Heuristics, 2012), and for
minimum vertex covers as its complement.

A *(1,2)-swap* removes one vertex ``x`` of the set and inserts two non-adjacent neighbours of
``x`` whose only neighbour in the set is ``x`` (they are *1-tight*): the set grows by one.
Local search applies swaps until none is left; a *perturbation* then forces a random outside
vertex in (its neighbours in the set leave), local search runs again, and an acceptance rule
keeps or undoes the result. Every :data:`MERGE_EVERY` perturbations the best set seen is merged
with the current one (in each connected region where they differ, the larger side:
:func:`merge_sets`), so that regions improved at different times add up; the best set is returned.

Plain Python over flat adjacency lists, with each outside vertex's *tightness* (its number of
neighbours in the set) kept up to date move by move: an iteration touches only the
neighbourhoods it changes, so it costs about the same on 10^3 and 10^6 nodes, and the time
budget decides how far the search gets. numpy would pay its call overhead on every handful of
neighbours; measured, the lists are several times faster here.
"""

from __future__ import annotations

import bisect
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph
from graphtransfer.tasks.mis.baselines import greedy_min_degree
from graphtransfer.tasks.mis.kernel import MISKernel, mis_kernel

DEFAULT_TIME_BUDGET = 10.0
"""Seconds :func:`iterated_local_search` searches by default."""

STALL_PER_NODE = 10
"""The baselines stop after ``STALL_PER_NODE * |V|`` perturbations without a new best set: on
small graphs long before the time budget, where more search finds nothing."""

GREEDY_BOTH_EDGES = 1_000_000
"""up to this many edges a search on a kernel given no start compares min-degree greedy's set on the
whole graph with greedy's on the kernel and starts from the larger (:func:`_greedy_start`); above
it greedy's Python loop would take seconds of the budget twice (0.5-0.7 s at 4 x 10^5-10^6 edges,
4.4 s for ER 10^5 of degree 64's 3.2 x 10^6, 10 s at 10^6 nodes of degree 8), and the kernel's
set is taken"""

_CLOCK_EVERY = 64  # iterations between looks at the clock; one look costs as much as a short iteration

GUIDED_SHARE = 0.75
"""with perturbation weights, the share of perturbations whose vertex is drawn by them; the rest
draw uniformly, so that every outside vertex stays reachable"""

_WEIGHTED_TRIES = 8  # weighted draws that land in the set before the draw falls back to uniform

MERGE_EVERY = 1000
"""perturbations between two merges of the best set with the current one (:func:`merge_sets`; at
least one per :data:`MERGE_NODES` nodes of the graph, so that the merge's pass over the nodes stays
a small share of the time on large graphs). The acceptance rule judges the whole set, so on a
large graph a region the search improved is lost when another region got worse meanwhile; the
merge keeps each region's better side. ``predict --polish 10`` from the built-in model's set, 33,000
nodes, 2 shared cores: Delaunay 10,342 without merging (nothing added), 10,372.5 with (CHILS, 10 s:
10,378); random geometric of degree 16, 4,820 and 4,862 (CHILS 4,855); every 500 / 2,000 / 5,000
perturbations on the Delaunay graph, 10,375.5 / 10,371 / 10,370 (``bench/geometric_search.py``)."""

MERGE_NODES = 100
"""nodes of the graph per perturbation between two merges, at least (see :data:`MERGE_EVERY`)"""


@dataclass(frozen=True)
class SearchResult:
    """What a local search found and how far it got.

    Attributes:
        solution: ``(num_nodes,)`` bool, a maximal independent set (or, for
            :func:`local_search_vertex_cover`, a minimal vertex cover).
        start_size: the size of the set it started from, after completing it to a maximal one.
        iterations: perturbations tried.
        seconds: time spent, the start's construction included.
    """

    solution: np.ndarray
    start_size: int
    iterations: int
    seconds: float


class LoggedSet:
    """An independent set over one adjacency list per vertex, whose moves (``insert``, ``remove``,
    defined by each search) log themselves so that a rejected iteration can be undone exactly: what
    MIS's search and weighted MVC's (:mod:`graphtransfer.tasks.mvc.weighted_search`) share."""

    adjacency: list[list[int]]
    in_set: bytearray
    size: int  # vertices in the set
    log: list[int]  # v for an insertion, ~v for a removal, since the last mark
    forced: set[int]  # vertices the last perturbation forced in; no swap may take them out

    def insert(self, v: int) -> None:
        raise NotImplementedError

    def remove(self, v: int) -> None:
        raise NotImplementedError

    def neighbours(self, v: int) -> list[int]:
        return self.adjacency[v]

    def undo(self) -> None:
        """Reverse every move since the log was last cleared, newest first."""
        log, self.log = self.log, []
        for move in reversed(log):
            if move >= 0:
                self.remove(move)
            else:
                self.insert(~move)
        self.log = []

    def force_in(self, v: int, rng: random.Random) -> tuple[list[int], list[int]]:
        """Force the outside vertex ``v`` into the set (with ``k - 1`` more close to it, ``k``
        geometric, once in ``2|S|`` calls on average), their set neighbours out, and hold them
        (:attr:`forced`). Returns the forced vertices and those that left."""
        forced = [v]
        if rng.random() * 2 * self.size < 1:
            extra = 1
            while rng.random() < 0.5:
                extra += 1
            forced += self.near(v, extra, rng)
        self.forced = set(forced)
        in_set, removed = self.in_set, []
        for f in forced:
            for z in self.adjacency[f]:
                if in_set[z]:
                    self.remove(z)
                    removed.append(z)
            self.insert(f)
        return forced, removed

    def switch_to(self, target: np.ndarray) -> tuple[list[int], list[int]]:
        """Make the independent set ``target`` (``(num_nodes,)`` bool) the current one, with a
        fresh log and nothing held; the vertices that left and those that joined."""
        current = np.frombuffer(bytes(self.in_set), dtype=np.uint8).astype(bool)
        self.forced, self.log = set(), []
        removed = np.flatnonzero(current & ~target).tolist()
        inserted = np.flatnonzero(target & ~current).tolist()
        for v in removed:
            self.remove(v)
        for v in inserted:
            self.insert(v)
        return removed, inserted

    def near(self, v: int, count: int, rng: random.Random) -> list[int]:
        """Up to ``count`` outside vertices two steps from ``v``, pairwise non-adjacent and not
        adjacent to ``v``: forcing them together moves a whole neighbourhood at once."""
        picked: list[int] = []
        blocked = set(self.adjacency[v]) | {v}
        first = self.adjacency[v]
        for _ in range(4 * count):
            if not first or len(picked) == count:
                break
            second = self.adjacency[first[rng.randrange(len(first))]]
            z = second[rng.randrange(len(second))]
            if not self.in_set[z] and z not in blocked:
                picked.append(z)
                blocked.update(self.adjacency[z])
                blocked.add(z)
        return picked


def adjacency_lists(graph: Graph) -> list[list[int]]:
    """One list of Python ints per vertex (its neighbours): a search's hot loops read them with no
    slice and no call per look."""
    indptr, indices = graph.csr()
    flat, bounds = indices.tolist(), indptr.tolist()
    return [flat[bounds[v] : bounds[v + 1]] for v in range(graph.num_nodes)]


class _Search(LoggedSet):
    """The current set and the tightness of every vertex.

    ``in_set[v]`` is 1 for vertices in the set; ``tight[v]`` counts v's neighbours in the set
    (kept for every vertex; only outside vertices' counts matter).
    """

    def __init__(self, graph: Graph, chosen: np.ndarray, weights: np.ndarray | None = None):
        indptr, indices = graph.csr()
        self.csr = indptr, indices  # the arrays, for numpy work on the whole set
        # perturbation weights as cumulative sums, drawn by bisection; None: uniform
        self.cumulative = None if weights is None else np.cumsum(weights, dtype=np.float64).tolist()
        self.adjacency = adjacency_lists(graph)
        self.in_set = bytearray(chosen.astype(np.uint8).tobytes())
        src = graph.edge_index[0]
        self.tight = np.bincount(graph.edge_index[1][chosen[src]], minlength=graph.num_nodes).tolist()
        self.size = int(chosen.sum())
        self.log = []
        self.forced = set()

    def insert(self, v: int) -> None:
        self.in_set[v] = 1
        self.size += 1
        self.log.append(v)
        tight = self.tight
        for u in self.adjacency[v]:
            tight[u] += 1

    def remove(self, v: int) -> None:
        self.in_set[v] = 0
        self.size -= 1
        self.log.append(~v)
        tight = self.tight
        for u in self.adjacency[v]:
            tight[u] -= 1

    def swap_for(self, x: int) -> tuple[int, int] | None:
        """Two non-adjacent 1-tight neighbours of ``x`` (in the set), or None."""
        tight, adjacency = self.tight, self.adjacency
        one_tight = [u for u in adjacency[x] if tight[u] == 1]
        if len(one_tight) < 2:
            return None
        members = set(one_tight)
        for u in one_tight:
            adjacent = members.intersection(adjacency[u])  # set arithmetic in C, not a Python loop
            if len(adjacent) < len(one_tight) - 1:
                return u, next(w for w in one_tight if w != u and w not in adjacent)
        return None

    def settle_around(self, removed: list[int], queue: list[int]) -> None:
        """After ``removed`` left the set: insert neighbours left with no neighbour in the set
        (keeping the set maximal), and queue the one set neighbour of each neighbour that is now
        1-tight, where a swap may have opened."""
        tight, in_set, adjacency = self.tight, self.in_set, self.adjacency
        for z in removed:
            for y in adjacency[z]:
                if in_set[y]:
                    continue
                if tight[y] == 0:
                    self.insert(y)
                    queue.append(y)
                elif tight[y] == 1:
                    queue.append(next(t for t in adjacency[y] if in_set[t]))

    def descend(self, queue: list[int], clock: Callable[[], float] | None = None, deadline: float = math.inf) -> None:
        """Apply (1,2)-swaps to the queued set vertices, and to every vertex a swap makes
        promising, until none is left: a local optimum around the queue. With a ``clock``, stop
        at ``deadline`` instead where that comes first (the set stays independent and maximal)."""
        in_set = self.in_set
        popped = 0
        while queue:
            popped += 1
            if clock is not None and popped % _CLOCK_EVERY == 0 and clock() >= deadline:
                return
            x = queue.pop()
            if not in_set[x] or x in self.forced:
                continue
            pair = self.swap_for(x)
            if pair is None:
                continue
            self.remove(x)
            self.insert(pair[0])
            self.insert(pair[1])
            queue.extend(pair)
            self.settle_around([x], queue)

    def become(self, target: np.ndarray) -> None:
        """Make the set ``target`` (``(num_nodes,)`` bool, independent), then keep it maximal and
        apply (1,2)-swaps where the change opened them: never smaller than ``target``."""
        removed, inserted = self.switch_to(target)
        queue = list(inserted)
        self.settle_around(removed, queue)
        self.descend(queue)
        self.log = []

    def perturb(self, rng: random.Random, num_nodes: int) -> list[int]:
        """Force one random outside vertex into the set (``k`` of them, close together, once in
        ``2|S|`` iterations on average, ``k - 1`` geometric) and return the vertices to search from."""
        _, removed = self.force_in(self._draw(rng, num_nodes), rng)
        queue: list[int] = []
        self.settle_around(removed, queue)
        return queue

    def _draw(self, rng: random.Random, num_nodes: int) -> int:
        """An outside vertex: by the weights (:data:`GUIDED_SHARE` of the draws, where there are
        weights), else uniformly."""
        in_set, cumulative = self.in_set, self.cumulative
        if cumulative is not None and rng.random() < GUIDED_SHARE:
            total = cumulative[-1]
            for _ in range(_WEIGHTED_TRIES):
                v = bisect.bisect_right(cumulative, rng.random() * total)
                if v < num_nodes and not in_set[v]:
                    return v
        v = rng.randrange(num_nodes)
        while in_set[v]:
            v = rng.randrange(num_nodes)
        return v


def iterated_local_search(
    graph: Graph,
    start: np.ndarray | None = None,
    time_budget: float = DEFAULT_TIME_BUDGET,
    max_iterations: int | None = None,
    max_stall: int | None = None,
    seed: int = 0,
    weights: np.ndarray | None = None,
    clock: Callable[[], float] = time.perf_counter,
    merge_every: int | None = MERGE_EVERY,
) -> SearchResult:
    """A large independent set by iterated local search (see the module docstring).

    The start (``start``, else :func:`greedy_min_degree`'s set) is completed to a maximal set,
    brought to a local optimum by (1,2)-swaps, then perturbed and searched again until the time
    or an iteration limit runs out. An iteration that loses ``d`` vertices against the current
    set, ``d*`` against the best, is kept with probability ``1 / (1 + d d*)``, else undone:
    plateaus are always crossed, steep descents rarely. The result is the best set seen, maximal
    and never smaller than the completed start. The budget stops the first descent too; what
    comes before it (reading the graph, greedy's set) is not interrupted.

    Args:
        start: ``(num_nodes,)`` bool, an independent set to improve, e.g. a policy's solution.
        time_budget: seconds, the start's construction included.
        max_iterations: stop after this many perturbations; with a budget that does not run out
            first, the result depends only on the graph, the start and ``seed``.
        max_stall: stop after this many perturbations without a new best set.
        seed: seeds the perturbations and the acceptance draws.
        weights: ``(num_nodes,)`` finite, non-negative, not all zero (e.g.
            :func:`guided_weights` of a policy's scores): :data:`GUIDED_SHARE` of the
            perturbations force in an outside vertex drawn in proportion to them, the rest one
            drawn uniformly. ``None``: every one uniform.
        clock: what ``time_budget`` is measured on: wall-clock seconds, or e.g.
            ``time.process_time`` for a budget of this process's CPU seconds, which other
            processes' load does not eat into.
        merge_every: perturbations between two merges of the best set with the current one
            (:data:`MERGE_EVERY`; at least one per :data:`MERGE_NODES` nodes); None: never.

    Raises:
        UsageError: a limit that is not positive, a ``start`` that is not an independent set, or
            bad ``weights``.
    """
    started = clock()
    _check_limits(time_budget, max_iterations, max_stall)
    if merge_every is not None and (isinstance(merge_every, bool) or not isinstance(merge_every, int) or merge_every < 1):
        raise UsageError(f"merge_every={merge_every!r} must be a positive whole number of perturbations, or None, e.g. {MERGE_EVERY}")
    chosen = greedy_min_degree(graph) if start is None else _checked_start(graph, start)
    search = _Search(graph, chosen, None if weights is None else _checked_weights(graph, weights))
    _complete(search, graph)
    start_size = search.size
    search.descend(_swap_candidates(graph, search), clock, started + time_budget)  # the first descent can outlast a budget on dense graphs
    best, best_size = bytes(search.in_set), search.size
    rng = random.Random(seed)
    indptr, indices = search.csr
    merge_every = merge_every and max(merge_every, graph.num_nodes // MERGE_NODES)
    iteration = stall = 0
    everything = search.size == graph.num_nodes  # no edges: nothing to perturb, and nothing better exists
    while not everything and (max_iterations is None or iteration < max_iterations) and (max_stall is None or stall < max_stall):
        if iteration % _CLOCK_EVERY == 0 and clock() - started >= time_budget:
            break
        iteration += 1
        stall += 1
        before = search.size
        search.log = []
        search.descend(search.perturb(rng, graph.num_nodes))
        forced, search.forced = list(search.forced), set()
        search.descend(forced)  # swaps at the forced vertices, now allowed, keep the set a local optimum
        if search.size > best_size:
            best, best_size, stall = bytes(search.in_set), search.size, 0
        lost = before - search.size
        if lost > 0 and rng.random() * (1 + lost * (best_size - search.size)) >= 1:
            search.undo()
        if merge_every and iteration % merge_every == 0 and best != bytes(search.in_set):
            merged = merge_sets(indptr, indices, as_bools(best), as_bools(search.in_set))
            if int(merged.sum()) > best_size:
                best, best_size, stall = merged.astype(np.uint8).tobytes(), int(merged.sum()), 0
    if best != bytes(search.in_set) and merge_every:
        search.become(as_bools(best))  # a merged set, brought to a maximal local optimum where the merge changed it
        if search.size >= best_size:
            best = bytes(search.in_set)
    solution = np.frombuffer(best, dtype=np.uint8).astype(bool)
    return SearchResult(solution, start_size, iteration, clock() - started)


def merge_sets(
    indptr: np.ndarray, indices: np.ndarray, first: np.ndarray, second: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """``(num_nodes,)`` bool: an independent set at least as large as each of the independent sets
    ``first`` and ``second`` (bool, one per node of the graph whose CSR is ``indptr, indices``):
    in every connected part of the graph the nodes where they differ span, the larger side (ties:
    ``first``'s); with ``weights`` (one per node), the heavier side, and at least as heavy as each.
    Valid: a node of ``second`` alone that has a neighbour of ``first`` alone is in that
    neighbour's part, and the nodes both hold have no neighbour in either set. It may leave
    nodes with no neighbour in it (:meth:`_Search.become` fills them in)."""
    from scipy.sparse import coo_array  # here, not at the top: scipy.sparse costs every command's start
    from scipy.sparse.csgraph import connected_components

    differ = np.flatnonzero(first != second)
    if differ.size == 0:
        return first.copy()
    degree = indptr[differ + 1] - indptr[differ]
    at = np.repeat(indptr[differ] - np.cumsum(degree) + degree, degree) + np.arange(int(degree.sum()))
    src, dst = np.repeat(differ, degree), indices[at]
    position = np.full(first.size, -1, dtype=np.int64)
    position[differ] = np.arange(differ.size)
    keep = position[dst] >= 0
    pairs = coo_array((np.ones(int(keep.sum())), (position[src[keep]], position[dst[keep]])), shape=(differ.size, differ.size))
    count, part = connected_components(pairs.tocsr(), directed=False)
    worth = np.ones(differ.size) if weights is None else np.asarray(weights, dtype=np.float64)[differ]
    in_first = np.bincount(part, weights=first[differ] * worth, minlength=count)
    in_second = np.bincount(part, weights=second[differ] * worth, minlength=count)
    merged = first.copy()
    take = in_second[part] > in_first[part]
    merged[differ[take]] = second[differ[take]]
    return merged


def as_bools(values: bytes | bytearray) -> np.ndarray:
    """A set kept as bytes (one per vertex) as ``(num_nodes,)`` bool."""
    return np.frombuffer(bytes(values), dtype=np.uint8).astype(bool)


def checked_seconds(seconds: float, example: float = DEFAULT_TIME_BUDGET) -> float:
    """A search's budget as a float, or a one-line error: not a number (a bool is none), not finite
    or not above 0."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not (math.isfinite(seconds) and seconds > 0):
        raise UsageError(f"seconds={seconds!r} must be a positive number, e.g. {example}")
    return float(seconds)


def reduced_search(
    graph: Graph,
    start: np.ndarray | None = None,
    time_budget: float = DEFAULT_TIME_BUDGET,
    seed: int = 0,
    stall_per_node: float | None = STALL_PER_NODE,
    clock: Callable[[], float] = time.perf_counter,
) -> SearchResult:
    """:func:`search_on_kernel` of ``graph``'s kernel (:func:`graphtransfer.tasks.mis.kernel.mis_kernel`:
    the nodes that exact rules decide, as some largest set decides them, left out), the kernel's
    time counted in ``time_budget``: the search every baseline and polish of this package runs.
    The rules lose no largest set, and the search's moves go where something is still undecided:
    on graphs the rules shrink, it reaches larger sets in the same seconds (10 CPU s at 10^5 nodes:
    random geometric graphs of degree 8, whose kernel is 5% of the nodes, 24,590 against 24,425
    on the whole graph; ``bench/guided_search.py``). On a graph they decide
    nothing of, it is the search on the whole graph, less the rules' time (0.7 s on an
    Erdős–Rényi graph of 10^5 nodes and degree 64).
    """
    started = clock()
    _check_limits(time_budget, None, None)
    return search_on_kernel(graph, mis_kernel(graph), start, time_budget, seed, stall_per_node, clock, started)


def search_on_kernel(
    graph: Graph,
    kernel: MISKernel | None,
    start: np.ndarray | None = None,
    time_budget: float = DEFAULT_TIME_BUDGET,
    seed: int = 0,
    stall_per_node: float | None = STALL_PER_NODE,
    clock: Callable[[], float] = time.perf_counter,
    started: float | None = None,
) -> SearchResult:
    """:func:`iterated_local_search` on ``kernel``, ``graph``'s kernel already made (``None``:
    the rules decide nothing of it, and the search runs on ``graph``), its set lifted back.

    ``start`` (``(num_nodes,)`` bool, independent; None: min-degree greedy's, :func:`_greedy_start`) is read on the
    kernel's nodes, one node of each adjacent pair the kernel's folds make dropped; the result is
    never smaller than ``start``. A kernel made for covers (MVC's) lifts the search's independent
    sets all the same. ``stall_per_node``: stop after that many times the kernel's
    nodes perturbations without a new best set (default, the baselines' limit); None: the whole
    budget. ``started``: where the budget's clock started (default: now). The result's
    ``start_size`` is that of the lifted start.
    """
    started = clock() if started is None else started
    _check_limits(time_budget, None, None)
    given = None if start is None else _checked_start(graph, start)
    if kernel is not None:
        kernel = replace(kernel, covers=False)  # the search's solutions are independent sets
    searched = graph if kernel is None else kernel.graph
    if kernel is None:
        on_searched = given
    elif given is None:
        on_searched, given = _greedy_start(graph, kernel)
    else:
        on_searched = _kernel_start(kernel, given)
    left = max(time_budget - (clock() - started), 1e-3)
    limit = _stall_limit(searched, stall_per_node)
    result = iterated_local_search(searched, start=on_searched, time_budget=left, max_stall=limit, seed=seed, clock=clock)
    lifted = result.solution if kernel is None else kernel.lift(result.solution)
    offset = int(lifted.sum()) - int(result.solution.sum())  # what the rules put in the set
    if given is not None and given.sum() > lifted.sum():
        lifted = given
    return SearchResult(lifted, result.start_size + offset, result.iterations, clock() - started)


def _greedy_start(graph: Graph, kernel: MISKernel) -> tuple[np.ndarray, np.ndarray | None]:
    """The start on ``kernel`` of a search given none, and the set it must not end below (or None):
    min-degree greedy's set on the kernel, or, on graphs of at most :data:`GREEDY_BOTH_EDGES` edges
    where greedy's set on the whole graph is larger than the kernel's lifted, that set read on the
    kernel, and the set itself as the floor. The rules keep a largest set but not greedy's: on a
    random geometric graph of 10^4 nodes and average degree 187 the nodes domination removes leave
    holes of low degree inside the square, where greedy on the kernel starts packings that meet
    badly (159 nodes, against 162 on the whole graph)."""
    on_kernel = greedy_min_degree(kernel.graph)
    if graph.num_edges > GREEDY_BOTH_EDGES:
        return on_kernel, None
    whole = greedy_min_degree(graph)
    if whole.sum() <= kernel.lift(on_kernel).sum():
        return on_kernel, None
    return _kernel_start(kernel, whole), whole


def _kernel_start(kernel: MISKernel, given: np.ndarray) -> np.ndarray:
    """``given``, an independent set of the kernel's given graph, read on the kernel's nodes: a folded
    node is in when the node that names it is; of each adjacent pair so chosen (a fold's new
    edges), the lower id leaves."""
    chosen = given[kernel.nodes]
    src, dst = kernel.graph.edge_index
    clash = chosen[src] & chosen[dst] & (src < dst)
    chosen[src[clash]] = False
    return chosen


def local_search(graph: Graph, time_budget: float = DEFAULT_TIME_BUDGET, seed: int = 0) -> np.ndarray:
    """The baseline: :func:`reduced_search` from greedy for ``time_budget`` seconds or until
    :data:`STALL_PER_NODE` ``* |V|`` perturbations (of the kernel's nodes) find no better set;
    ``(num_nodes,)`` bool."""
    return reduced_search(graph, time_budget=time_budget, seed=seed).solution


def polish_independent_set(graph: Graph, chosen: np.ndarray, time_budget: float = DEFAULT_TIME_BUDGET, seed: int = 0) -> np.ndarray:
    """``chosen`` (e.g. a policy's set) improved by :func:`reduced_search` started from it,
    with the baseline's limits, so that a polished policy and :func:`local_search` compare in
    the same budget; never smaller than ``chosen``.

    When that search stalls before the budget is spent (graphs of up to some 10^4 nodes), the
    rest of the budget restarts the search from greedy's set on the same kernel, which is
    :func:`local_search` itself given what is left, and the larger set wins. The polish is then
    at least the local search alone wherever the local search alone stalls within the budget
    left; on larger graphs the whole budget goes to the policy's start."""
    started = time.perf_counter()
    _check_limits(time_budget, None, None)
    kernel = mis_kernel(graph)  # made once for both searches
    polished = search_on_kernel(graph, kernel, chosen, time_budget, seed, started=started).solution
    left = time_budget - (time.perf_counter() - started)
    if left <= 0:
        return polished
    restarted = search_on_kernel(graph, kernel, None, left, seed).solution
    return restarted if restarted.sum() > polished.sum() else polished


def local_search_vertex_cover(
    graph: Graph,
    cover: np.ndarray | None = None,
    time_budget: float = DEFAULT_TIME_BUDGET,
    stall_per_node: float | None = STALL_PER_NODE,
    seed: int = 0,
) -> np.ndarray:
    """A small vertex cover: the complement of :func:`reduced_search`'s independent set (by
    default with the baselines' stall limit), started from the complement of ``cover`` (a
    cover's complement is independent), or from greedy. Minimal, and never larger than ``cover``."""
    start = None if cover is None else ~checked_cover(graph, cover)
    return ~reduced_search(graph, start=start, time_budget=time_budget, seed=seed, stall_per_node=stall_per_node).solution


def _stall_limit(graph: Graph, per_node: float | None = STALL_PER_NODE) -> int | None:
    """Perturbations without a new best set after which a search of ``graph`` stops: ``per_node``
    times its nodes (at least 1); None: never."""
    return None if per_node is None else max(math.ceil(per_node * graph.num_nodes), 1)


def _complete(search: _Search, graph: Graph) -> None:
    """Insert every vertex with no neighbour in the set, least degree first, so the set is maximal."""
    degree = graph.degrees()
    free = np.flatnonzero((np.frombuffer(bytes(search.in_set), dtype=np.uint8) == 0) & (np.asarray(search.tight) == 0))
    for v in free[np.argsort(degree[free], kind="stable")].tolist():
        if search.tight[v] == 0:
            search.insert(v)


def _swap_candidates(graph: Graph, search: _Search) -> list[int]:
    """Set vertices with at least two 1-tight neighbours, found with numpy in one pass: only they
    can start a swap, and on a greedy start they are a small share of the set."""
    in_set = np.frombuffer(bytes(search.in_set), dtype=bool)
    one_tight = ~in_set & (np.asarray(search.tight) == 1)
    src, dst = graph.edge_index
    counts = np.bincount(src[in_set[src] & one_tight[dst]], minlength=graph.num_nodes)
    return np.flatnonzero(counts >= 2).tolist()


def _node_bools(graph: Graph, values: np.ndarray, name: str) -> np.ndarray:
    """``values`` as one bool per node of ``graph``, or a one-line error naming ``name``."""
    values = np.asarray(values)
    if values.shape != (graph.num_nodes,):
        raise UsageError(f"{name} has shape {values.shape}; expected ({graph.num_nodes},), one bool per node")
    return values.astype(bool)


def _checked_start(graph: Graph, start: np.ndarray) -> np.ndarray:
    start = _node_bools(graph, start, "start")
    src, dst = graph.edge_index
    clash = start[src] & start[dst]
    if clash.any():
        k = int(np.argmax(clash))
        raise UsageError(
            f"start is not an independent set: nodes {graph.original_id(int(src[k]))} and {graph.original_id(int(dst[k]))} are "
            "adjacent and both chosen; drop one of each such pair first"
        )
    return start


def checked_cover(graph: Graph, cover: np.ndarray) -> np.ndarray:
    """``cover`` as one bool per node of ``graph``, or a one-line error: a wrong shape, or the first
    edge it leaves uncovered, named by the graph's own ids."""
    cover = _node_bools(graph, cover, "cover")
    src, dst = graph.edge_index
    open_edge = ~(cover[src] | cover[dst])
    if open_edge.any():
        k = int(np.argmax(open_edge))
        raise UsageError(
            f"cover is not a vertex cover: edge {graph.original_id(int(src[k]))}-{graph.original_id(int(dst[k]))} has no endpoint in it; "
            "add one endpoint of each uncovered edge first"
        )
    return cover


def guided_weights(scores: np.ndarray, chosen: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Perturbation weights from per-node ``scores`` (e.g. a policy's log-odds of including each
    node): a softmax of ``scores / temperature`` over the nodes outside ``chosen``, zero inside.
    Forcing in an outside node the policy rated highly undoes the choices it was least sure of."""
    outside = ~chosen.astype(bool)
    if not outside.any():
        return np.ones(len(scores))
    logits = np.where(outside, np.asarray(scores, dtype=np.float64) / temperature, -np.inf)
    weights = np.exp(logits - logits[outside].max())
    return weights / weights.sum()


def _checked_weights(graph: Graph, weights: np.ndarray) -> np.ndarray:
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape != (graph.num_nodes,):
        raise UsageError(f"weights has shape {weights.shape}; expected ({graph.num_nodes},), one per node")
    if not (np.isfinite(weights).all() and (weights >= 0).all() and weights.sum() > 0):
        raise UsageError("weights must be finite, non-negative and not all zero, e.g. guided_weights(scores, start)")
    return weights


def _check_limits(time_budget: float, max_iterations: int | None, max_stall: int | None) -> None:
    if not (time_budget > 0 and math.isfinite(time_budget)):
        raise UsageError(f"time_budget={time_budget} must be a positive number of seconds, e.g. {DEFAULT_TIME_BUDGET}")
    for name, value in (("max_iterations", max_iterations), ("max_stall", max_stall)):
        if value is not None and value < 1:
            raise UsageError(f"{name}={value} must be at least 1, or None for no limit")
