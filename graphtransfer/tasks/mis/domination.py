"""Domination among closed neighbourhoods, vectorised: the MIS rule that a node whose closed
neighbourhood holds a neighbour's can leave the set. The local-max decoding applies it every pass
(:func:`graphtransfer.tasks.mis.env.reduction_actions`), the kernel once before the policy
(:mod:`graphtransfer.tasks.mis.kernel`)."""

from __future__ import annotations

import numpy as np

from graphtransfer.graphs.graph import sorted_unique, stable_order

CLOSED_WEDGES = 0.05
"""domination beyond pendants needs triangles: a node's closed neighbourhood can hold a neighbour's
only where every other neighbour of that one closes a triangle with the two. On graphs where fewer
than this share of sampled wedges (paths ``u - v - w``) close (random graphs, Barabási–Albert)
the kernel's rule 4 and the passes' check take the pendants' neighbours alone
(:func:`pendant_dominated`); random geometric graphs close 0.61, Delaunay meshes 0.43"""
WEDGE_SAMPLES = 2048
TOUCHED_SHARE = 0.25
""":func:`dominated` checks the pairs around the ``touched`` nodes alone while their edges are at most this share of the
graph's; above it, the whole graph (the same answer: a check of every pair reads each edge once, faster per pair)"""


def closed_wedges(indptr: np.ndarray, indices: np.ndarray) -> float:
    """The share of :data:`WEDGE_SAMPLES` wedges ``u - v - w`` (a node ``v`` of degree >= 2 drawn
    uniformly, two of its neighbours drawn, seeded) whose ends are adjacent, in the CSR adjacency
    ``(indptr, indices)`` (:meth:`Graph.csr`, or the edges by destination)."""
    starts, degree = indptr[:-1], np.diff(indptr)
    centres = np.flatnonzero(degree >= 2)
    if centres.size == 0:
        return 0.0
    rng = np.random.default_rng(0)
    v = centres[rng.integers(centres.size, size=WEDGE_SAMPLES)]
    first = rng.integers(degree[v])
    second = (first + 1 + rng.integers(degree[v] - 1)) % degree[v]  # another neighbour
    u, w = indices[starts[v] + first], indices[starts[v] + second]
    u, w = np.where(degree[u] <= degree[w], u, w), np.where(degree[u] <= degree[w], w, u)  # look in the shorter row
    return float(np.count_nonzero(_in_rows(indptr, indices, u, w))) / WEDGE_SAMPLES


def _in_rows(indptr: np.ndarray, indices: np.ndarray, rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``(k,)`` bool: whether ``values[i]`` is among row ``rows[i]``'s entries of the CSR ``(indptr, indices)``,
    every row read at once (a set per sampled wedge cost 3 ms a call, a kernel's rebuilds on small graphs a fifth of
    their solve)."""
    lengths = indptr[rows + 1] - indptr[rows]
    owner = np.repeat(np.arange(rows.size), lengths)
    read = run_positions(indptr[rows], lengths)
    found = np.zeros(rows.size, dtype=bool)
    found[owner[indices[read] == values[owner]]] = True
    return found


def closes_wedges(edge_index: np.ndarray, num_nodes: int) -> bool:
    """Whether at least :data:`CLOSED_WEDGES` of the graph's sampled wedges close, from its
    directed edges (both directions; ordered by destination, as the env keeps them, or sorted so
    here): the same edges give the same answer in any caller."""
    src, dst = edge_index
    if np.any(dst[1:] < dst[:-1]):
        src, dst = np.take(edge_index, stable_order(dst), axis=1)
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=num_nodes), out=indptr[1:])
    return closed_wedges(indptr, src) >= CLOSED_WEDGES


def pendant_dominated(edge_index: np.ndarray, degree: np.ndarray) -> np.ndarray:
    """:func:`dominated` with pendant dominators alone: the nodes ``u`` with a neighbour ``v`` of
    degree 1 (for two adjacent pendants, the higher id). On a graph without triangles these are
    every node :func:`dominated` finds, at the cost of one gather over the edges.

    Shapes:
        edge_index: ``(2, E)`` directed edges (both directions); degree: ``(N,)``; returns ``(N,)`` bool.
    """
    out = np.zeros(degree.size, dtype=bool)
    src, dst = edge_index
    if np.any(dst[1:] < dst[:-1]):  # not ordered by destination: look every edge's source up
        pendant = degree[src] == 1
        v, u = src[pendant], dst[pendant]
    else:  # by destination, as the env keeps them: a pendant's one edge in starts its run (ER 10^7: 0.3 s against 5.8 s)
        v = np.flatnonzero(degree == 1)
        u = src[(np.cumsum(degree) - degree)[v]]
    out[u[(degree[v] < degree[u]) | (v < u)]] = True
    return out


def dominated(edge_index: np.ndarray, degree: np.ndarray, words: int | None = None, touched: np.ndarray | None = None) -> np.ndarray:
    """The nodes ``u`` with a neighbour ``v`` whose closed neighbourhood ``N[v]`` is inside
    ``N[u]`` (for equal ones, the higher id of the two): some maximum independent set leaves every
    such ``u`` out at once, since following dominators from any of them ends at one that stays.

    Each node's closed neighbourhood is first hashed into a bit mask of ``words`` 64-bit words
    (default: enough for about a quarter of the bits to be set at the average degree, 1-16
    words); a pair whose ``v``-mask has a bit outside the ``u``-mask cannot nest, and the few
    pairs left are checked neighbour by neighbour, so the cost is ``O(E × words)`` plus the
    neighbours of the pairs that pass the filter.

    ``touched``, ``(N,)`` bool: check only the pairs whose ``v`` it marks, for a graph that is an
    earlier one less some nodes, checked then with every node it found removed since, and
    ``touched`` the nodes that lost a neighbour in between. No other pair can have come to nest:
    ``N[v] ⊆ N[u]`` after a removal and not before means that a neighbour of ``v`` outside
    ``N[u]`` was removed. The answer is then the whole graph's, at the cost of the touched nodes'
    neighbourhoods (a decoding's later passes on dense geometric graphs, where a pass removes a few
    hundred nodes of 10^5: :meth:`graphtransfer.tasks.mis.env.MISEnv.exact_actions`).

    Shapes:
        edge_index: ``(2, E)`` directed edges (both directions); degree, touched: ``(N,)``; returns ``(N,)`` bool.
    """
    num_nodes = degree.size
    out = np.zeros(num_nodes, dtype=bool)
    src, dst = edge_index
    if src.size == 0:
        return out
    if np.any(dst[1:] < dst[:-1]):  # the env's residual edges come ordered by destination; other callers' may not (no int64 diff)
        src, dst = np.take(edge_index, stable_order(dst), axis=1)
    if words is None:
        words = int(np.clip(np.ceil(4 * (src.size / max(num_nodes, 1) + 1) / 64), 1, 16))
    starts = np.cumsum(degree) - degree
    if touched is not None:
        touched = np.flatnonzero(touched)
        if degree[touched].sum() > TOUCHED_SHARE * src.size:
            touched = None
    if touched is None:
        pairs = [src, dst]  # u, v: every edge
        masks = neighbourhood_masks(src, degree, words)  # (N, words), a row per node
    else:
        u, v = src[run_positions(starts[touched], degree[touched])], np.repeat(touched, degree[touched])  # every edge into a touched node
        row = np.zeros(num_nodes, dtype=np.int64)
        row[u] = row[v] = 1
        needed = np.flatnonzero(row)
        row[needed] = np.arange(needed.size)
        masks = neighbourhood_masks(src, degree, words, needed)  # a row per needed node
        pairs = [u, v, row[u], row[v]]  # and each pair's rows
    u, v = pairs[0], pairs[1]
    mu, mv = pairs[-2], pairs[-1]
    first = np.ascontiguousarray(masks[:, 0])
    # v can be inside u only if its mask is; the first word, over every pair, leaves few (1-7% on random and geometric
    # graphs), so the degrees are compared on those only: 1.1-1.9x faster than the other way round
    keep = np.flatnonzero((first[mv] & ~first[mu]) == 0)
    pairs = [part[keep] for part in pairs]
    fits = degree[pairs[1]] <= degree[pairs[0]]  # and only with no more neighbours
    pairs = [part[fits] for part in pairs]
    for word in range(1, words):  # one word at a time: each leaves few pairs for the next
        fits = (masks[pairs[-1], word] & ~masks[pairs[-2], word]) == 0
        pairs = [part[fits] for part in pairs]
    u, v = pairs[0], pairs[1]
    nested = nested_neighbourhoods(src, dst, degree, u, v)
    u, v = u[nested], v[nested]
    out[np.where(degree[v] < degree[u], u, np.maximum(u, v))] = True
    return out


def run_positions(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The positions of runs laid one after another: ``counts[i]`` positions from ``starts[i]`` each
    (the entries of some rows of a CSR adjacency, the edges of some nodes ordered by destination)."""
    offset = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(starts, counts) + offset


MASK_BLOCK_NODES = 1 << 16
"""nodes whose masks :func:`neighbourhood_masks` builds at a time (its flags, one byte per bit: at
most 64 MiB at 16 words)"""


def neighbourhood_masks(src: np.ndarray, degree: np.ndarray, words: int, nodes: np.ndarray | None = None) -> np.ndarray:
    """A bit mask per node of its closed neighbourhood, each member hashed to one of ``64 ×
    words`` bits, from the sources ``src`` of edges ordered by destination: ``(N, words)`` uint64,
    or ``(len(nodes), words)``, the masks of ``nodes`` alone in their order."""
    num_nodes = degree.size
    bit = (np.arange(num_nodes, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)  # Fibonacci hashing
    bit %= np.uint64(64 * words)
    starts = np.cumsum(degree) - degree
    if nodes is None and words == 1:  # a reduction over each node's run of edges, 3x faster than the flags below
        value = np.left_shift(np.uint64(1), bit)
        masks = value.reshape(num_nodes, 1).copy()
        has_edges = degree > 0
        masks[has_edges, 0] |= np.bitwise_or.reduceat(value[src], starts[has_edges])
        return masks
    bit = bit.astype(np.int64)
    count = num_nodes if nodes is None else nodes.size
    masks = np.empty((count, words), dtype=np.uint64)
    for first in range(0, count, MASK_BLOCK_NODES):  # a flag per bit, packed: 1.5-2.5x faster than a scattered or
        last = min(first + MASK_BLOCK_NODES, count)
        edges: slice | np.ndarray
        if nodes is None:  # a block of consecutive nodes: their edges are one slice
            block, edges = np.arange(first, last), slice(starts[first], starts[last - 1] + degree[last - 1])
        else:
            block = nodes[first:last]
            edges = run_positions(starts[block], degree[block])
        flags = np.zeros((block.size, 64 * words), dtype=bool)
        flags[np.arange(block.size), bit[block]] = True
        flags[np.repeat(np.arange(block.size), degree[block]), bit[src[edges]]] = True
        packed = np.packbits(flags, axis=1, bitorder="little")  # bit b of a row in byte b // 8
        masks[first:last] = packed.view("<u8")  # ... and in word b // 64, as bit b % 64
    return masks


def nested_neighbourhoods(src: np.ndarray, dst: np.ndarray, degree: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """For adjacent pairs ``(u, v)``, whether every neighbour of ``v`` other than ``u`` is a
    neighbour of ``u``, so that ``N[v] ⊆ N[u]``: ``(P,)`` bool, by one sorted lookup of the pairs'
    ``sum deg(v)`` (pair, neighbour) edges among the edges of the pairs' ``u``. The edges ``(src,
    dst)`` come ordered by destination; the ``u``'s edges are read as runs where they are few
    (:data:`TOUCHED_SHARE`), else picked out of all of them in one pass."""
    num_nodes = degree.size
    starts = np.cumsum(degree) - degree
    count = degree[v]
    pair = np.repeat(np.arange(u.size), count)
    w = src[run_positions(starts[v], degree[v])]  # v's neighbours, pair by pair
    rows = sorted_unique(u)
    if degree[rows].sum() <= TOUCHED_SHARE * src.size:
        keys = np.repeat(rows, degree[rows]) * num_nodes + src[run_positions(starts[rows], degree[rows])]
    else:
        of_u = np.zeros(num_nodes, dtype=bool)
        of_u[rows] = True
        mine = of_u[dst]
        keys = dst[mine].astype(np.int64) * num_nodes + src[mine]
    keys.sort()  # the edges of the pairs' u
    wanted = u[pair].astype(np.int64) * num_nodes + w
    found = keys[np.minimum(np.searchsorted(keys, wanted), max(keys.size - 1, 0))] == wanted if keys.size else w < 0
    hits = np.bincount(pair, weights=found | (w == u[pair]), minlength=u.size)
    return hits == count
