"""Maximum-weight matching's local search: what eval's and predict's ``--polish`` run from a
matching (the policy's, or a baseline's for eval).

A move is centred on a non-matching edge ``(u, v)``: it joins, the matching edges at ``u`` and
``v`` leave, and each of their freed mates (``u'``, ``v'``) takes its heaviest edge to a free
node, each other included. That is every weight-gaining alternating path or cycle of up to five
edges whose middle edge is ``(u, v)``; the move is made when it gains weight. Nodes whose moves a
change may alter (the changed nodes and their neighbours) go back on a work list, so a pass
costs what changes, not the graph. Once no move gains, the search kicks: a few random matching
edges leave (:data:`KICK_SHARE` of them) and the work list runs again from there; the heavier of
the two matchings is kept (iterated local search). Plain Python over lists (``bench/anchors.py``
measures it against the optimum).
"""

from __future__ import annotations

import random
import time
from collections import deque

import numpy as np

from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, edge_weights
from graphtransfer.tasks.matching.rules import is_matching

DEFAULT_MATCHING_SECONDS = 10.0
"""seconds eval's ``--polish`` gives the search at most (it stops at the first local optimum)"""

KICK_SHARE = 0.02
"""share of the matching edges a kick removes (at least 2)"""

_GAIN_EPS = 1e-9  # weights are floats: a move must gain more than rounding


class _Matching:
    """A matching over the graph's CSR (neighbours and weights as lists), with the weight of each
    node's matching edge, changed by :meth:`try_move` and :meth:`kick`."""

    def __init__(self, graph: Graph, mate: np.ndarray):
        src, dst = graph.edge_index
        order = np.argsort(src, kind="stable")
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=graph.num_nodes))]).tolist()
        self.nbr, self.wt = dst[order].tolist(), np.asarray(edge_weights(graph), dtype=np.float64)[order].tolist()
        heaviest = np.zeros(graph.num_nodes)
        np.maximum.at(heaviest, src, np.asarray(edge_weights(graph), dtype=np.float64))
        self.heaviest = heaviest.tolist()
        self.reset(np.asarray(mate, dtype=np.int64).tolist())

    def reset(self, mate: list[int]) -> None:
        """Make ``mate`` the matching, with each node's matched weight and the total."""
        self.mate, self.mw = list(mate), [0.0] * len(mate)
        for u, m in enumerate(self.mate):
            if m >= 0:
                for k in range(self.indptr[u], self.indptr[u + 1]):
                    if self.nbr[k] == m:
                        self.mw[u] = self.wt[k]
        self.weight = sum(self.mw) / 2

    def _match(self, a: int, b: int, w: float) -> None:
        self.mate[a], self.mate[b], self.mw[a], self.mw[b] = b, a, w, w

    def _free(self, a: int) -> None:
        self.mate[a], self.mw[a] = -1, 0.0

    def _best_free(self, a: int) -> tuple[int, float]:
        best, best_w = -1, 0.0
        mate, nbr, wt = self.mate, self.nbr, self.wt
        for k in range(self.indptr[a], self.indptr[a + 1]):
            x = nbr[k]
            if mate[x] < 0 and x != a and wt[k] > best_w:
                best, best_w = x, wt[k]
        return best, best_w

    def try_move(self, u: int) -> list[int]:
        """The first weight-gaining move centred on an edge at ``u``, made; the nodes it changed
        (empty: none gains)."""
        mate, mw, nbr, wt, heaviest = self.mate, self.mw, self.nbr, self.wt, self.heaviest
        for k in range(self.indptr[u], self.indptr[u + 1]):
            v, w = nbr[k], wt[k]
            if v == mate[u]:
                continue
            up, vp = mate[u], mate[v]
            gain = w - mw[u] - mw[v]
            bound = gain + (heaviest[up] if up >= 0 else 0.0) + (heaviest[vp] if vp >= 0 else 0.0)
            if bound <= _GAIN_EPS:
                continue
            saved = {node: (mate[node], mw[node]) for node in (u, v, up, vp) if node >= 0}
            for node in (up, vp):
                if node >= 0:
                    self._free(node)
            self._match(u, v, w)
            changed = [u, v]
            for node in (up, vp):
                if node >= 0 and mate[node] < 0:
                    x, xw = self._best_free(node)
                    if x >= 0:
                        saved.setdefault(x, (mate[x], mw[x]))
                        self._match(node, x, xw)
                        gain += xw
                        changed.append(x)
                    changed.append(node)
            if gain > _GAIN_EPS:
                self.weight += gain
                return changed
            for node, (m, weight) in saved.items():
                mate[node], mw[node] = m, weight
        return []

    def kick(self, rng: random.Random) -> list[int]:
        """A few random matching edges leave (:data:`KICK_SHARE`); their ends."""
        matched = [u for u, m in enumerate(self.mate) if m > u]
        ends = []
        for u in rng.sample(matched, min(len(matched), max(2, int(KICK_SHARE * len(matched))))):
            v = self.mate[u]
            self.weight -= self.mw[u]
            self._free(u)
            self._free(v)
            ends += [u, v]
        return ends

    def around(self, nodes: list[int]) -> list[int]:
        """``nodes`` and their neighbours: where a change at ``nodes`` may open a move."""
        near = list(nodes)
        for a in nodes:
            near.extend(self.nbr[self.indptr[a] : self.indptr[a + 1]])
        return near


def _descend(matching: _Matching, work: deque, deadline: float) -> int:
    """Moves from the work list until none gains or ``deadline``; the moves made."""
    queued = set(work)
    moves = 0
    while work:
        if moves % 64 == 0 and time.perf_counter() >= deadline:
            break
        u = work.popleft()
        queued.discard(u)
        changed = matching.try_move(u)
        if changed:
            moves += 1
            for a in matching.around(changed):
                if a not in queued:
                    queued.add(a)
                    work.append(a)
    return moves


def local_search_matching(graph: Graph, mate: np.ndarray, seconds: float, seed: int = 0, kicks: bool = True) -> tuple[np.ndarray, int]:
    """The matching ``mate`` ``(num_nodes,)`` (each node's mate, -1 unmatched) improved by the
    moves of this module until none gains, then (``kicks``) kicked and improved again until
    ``seconds`` are up, keeping the heaviest: never lighter than ``mate``. Returns the matching
    and the kicks tried."""
    if not (isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and np.isfinite(seconds) and seconds > 0):
        raise UsageError(f"seconds={seconds!r} must be a positive number, e.g. {DEFAULT_MATCHING_SECONDS}")
    if not is_matching(graph, mate):
        raise UsageError(f"mate must be a matching of {graph.name or 'the graph'}: (num_nodes,) mates along its edges, -1 unmatched")
    deadline = time.perf_counter() + seconds
    rng = random.Random(seed)
    matching = _Matching(graph, mate)
    order = list(range(graph.num_nodes))
    rng.shuffle(order)
    _descend(matching, deque(order), deadline)
    best, best_weight = list(matching.mate), matching.weight
    tries = 0
    while kicks and time.perf_counter() < deadline and graph.num_edges:
        ends = matching.kick(rng)
        _descend(matching, deque(matching.around(ends)), deadline)
        tries += 1
        if matching.weight > best_weight + _GAIN_EPS:
            best, best_weight = list(matching.mate), matching.weight
        elif matching.weight < best_weight - _GAIN_EPS:
            matching.reset(best)  # a kick that lost weight: the next one starts from the best again
    return np.asarray(best, dtype=np.int64), tries


def improve_matching(graph: Graph, mate: np.ndarray, seconds: float = DEFAULT_MATCHING_SECONDS, seed: int = 0) -> np.ndarray:
    """Eval's ``--polish``: the moves until none gains (at most ``seconds``), no kicks."""
    return local_search_matching(graph, mate, seconds, seed, kicks=False)[0]


def search_matching(graph: Graph, mate: np.ndarray, seconds: float, seed: int = 0, kernel: object = None) -> tuple[np.ndarray, int]:
    """Predict's ``--polish``: :func:`local_search_matching` with kicks for the whole of
    ``seconds``. ``kernel`` is MIS's and is not read (matching has no kernel)."""
    return local_search_matching(graph, mate, seconds, seed)
