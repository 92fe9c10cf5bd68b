"""Independent sets of nearly bipartite graphs: the graph less a cover of its few odd edges is
bipartite, and its largest set is found by König's theorem or, on large graphs, stood in for by the
better side.

A graph bipartite but for a small share of its edges (a user-item graph with some item-item links,
a lattice with some diagonals) is decided neither by the kernel's LP step, which needs it bipartite
throughout (:func:`graphtransfer.tasks.mis.kernel.largest_bipartite_set`), nor well by a policy
that decides in parallel: its passes start the two sides' sets in many places and the walls
between them cost nodes (the built-in MIS model fell to min-degree greedy's sets or below on such graphs;
``bench/default_quality.py``). Here:

1. **A two-colouring with few edges inside a colour** (the odd edges): the parity of breadth-first
   levels, then rounds of flips of the nodes with more neighbours of their own colour than of the
   other, then of whole domains between walls (where a search tree crossed an odd edge); where the
   graph has triangles, again over its edges in no triangle (a lattice's diagonal closes two; a
   search tree through one would give a whole region the wrong colours), the better kept.
2. **A cover of the odd edges** (the node with the most odd edges first) leaves the graph; the rest
   is bipartite. Up to :data:`EXACT_NODES` nodes a largest independent set of it comes from
   König's theorem (the flow matching); above, the colour with more nodes outside the cover
   stands in for it: on random bipartite graphs with odd edges and grids with diagonals of 10^4-10^6
   nodes the two gave sets of the same size in the end, and the matching of a grid with holes took
   7 s at 10^6 nodes where the side took 2.6 s in all.
3. **That set made maximal** in the whole graph: nodes of the cover join where no neighbour is in it.

No independent set of the graph is larger than König's set of the rest plus the cover (every one
is, less the cover, an independent set of the rest): :attr:`NearBipartiteSet.bound`, where König's
theorem ran. Graphs with more than :data:`ODD_EDGE_SHARE` of their edges odd (random, geometric and
scale-free graphs: 20-36%) are refused, larger ones after a sample first: a ball of
:data:`SAMPLE_NODES` nodes coloured the same way.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import breadth_first_order, connected_components

from graphtransfer.envs.transforms import NearBipartiteSet
from graphtransfer.graphs import Graph
from graphtransfer.graphs.graph import induced_subgraph, sorted_unique
from graphtransfer.tasks.mis.completion import make_maximal
from graphtransfer.tasks.mis.domination import closed_wedges
from graphtransfer.tasks.mis.kernel import LP_NODES, _tree_distances, largest_bipartite_set, neighbours_of, searchable

ODD_EDGE_SHARE = 0.10
"""the largest share of a graph's edges inside a colour for which :func:`near_bipartite_set` solves
it: up to about this share its set was at or above the built-in MIS policy's on random bipartite
graphs with odd edges and grids with diagonals of 10^4 nodes (``bench/default_quality.py``),
and random graphs, the least bipartite, have 20% and more"""
EXACT_NODES = LP_NODES
"""the most nodes on which the rest's largest set comes from König's theorem (the kernel's LP limit); above, the
colour with more nodes outside the cover"""
SAMPLE_NODES = 1 << 14
"""nodes of the breadth-first ball, from the node of highest degree, whose colouring decides whether the whole
graph is coloured"""
FLIP_ROUNDS = 50
"""the most rounds of flips of :func:`_fewer_odd_edges`; each flips an independent set of the nodes that gain"""
WALL_ROUNDS = 8
"""the most rounds of domains' flips of :func:`_fewer_walls`"""
HOPELESS = ((0, 0.4), (3, 0.25))
"""(round, share): flips stop where more than the share of the edges are odd at that round: random graphs of degree 8
(40-44% from the levels, 30% after three rounds, 28% once settled), random geometric graphs and Delaunay meshes (38-43%,
then 35-36%). The first check saves a random graph of degree 8 and 10^6 nodes the three rounds (0.25 s), and costs the
graphs near :data:`ODD_EDGE_SHARE`: a random bipartite graph of 10^4 nodes with 10% of its edges inside its sides has
36% from the levels over the whole graph (9% once settled) but 42% over its kernel, which is refused at once (the
bipartite solve had beaten the policy there by 3%)"""
RETRY_SHARE = 0.18
"""odd edges after the levels over every edge above which the colouring does not retry them over the edges in no
triangle (grids of 10^4-10^5 nodes with 1% or 3% diagonals: 5-16% odd, then 1% or 3%; random and scale-free graphs of
degree 4: 19-21%, and no better)"""
TRIANGLE_ROWS = 1 << 16
"""rows of the adjacency multiplied at once to find the edges in triangles (bounds the product's memory)"""


def near_bipartite_set(graph: Graph) -> NearBipartiteSet | None:
    """A maximal independent set of ``graph`` by the steps of the module docstring, or ``None``
    where more than :data:`ODD_EDGE_SHARE` of its edges (or of a sampled ball's) are odd, or it has
    no edges."""
    if graph.num_edges == 0:
        return None
    indptr, indices = graph.csr()
    if graph.num_nodes > SAMPLE_NODES:
        ball_indptr, ball_indices = _ball(graph, indptr, indices).csr()
        if _colouring(ball_indptr, ball_indices, _sources(ball_indptr)) is None:
            return None
    src = _sources(indptr)
    colour = _colouring(indptr, indices, src)
    if colour is None:
        return None
    odd = colour[src] == colour[indices]
    cover = _odd_edge_cover(src[odd], indices[odd], graph.num_nodes)
    bound = None
    if graph.num_nodes <= EXACT_NODES:
        kept = ~odd & ~cover[src] & ~cover[indices]
        in_set = np.zeros(graph.num_nodes, dtype=bool)
        in_set[largest_bipartite_set(_adjacency(src[kept], indices[kept], graph.num_nodes), colour)[0]] = True
        in_set &= ~cover  # the cover's nodes, isolated in the rest, are in its largest set; they join below where they can
        bound = int(np.count_nonzero(in_set) + np.count_nonzero(cover))
    else:
        in_set = colour & ~cover
        if np.count_nonzero(in_set) < np.count_nonzero(~colour & ~cover):
            in_set = ~colour & ~cover
    solution, _ = make_maximal(graph, in_set)
    return NearBipartiteSet(solution, int(np.count_nonzero(odd)) // 2, graph.num_edges, bound)


def _ball(graph: Graph, indptr: np.ndarray, indices: np.ndarray) -> Graph:
    """The subgraph on the first :data:`SAMPLE_NODES` nodes that a breadth-first search from the node of highest degree
    reaches, over the graph's CSR adjacency ``(indptr, indices)``."""
    frontier = np.array([int(np.argmax(np.diff(indptr)))])
    reached = np.zeros(graph.num_nodes, dtype=bool)
    reached[frontier] = True
    count = 1
    while frontier.size and count < SAMPLE_NODES:
        around = sorted_unique(neighbours_of(indptr, indices, frontier))
        frontier = around[~reached[around]][: SAMPLE_NODES - count]
        reached[frontier] = True
        count += frontier.size
    return induced_subgraph(graph, reached)[0]


def _sources(indptr: np.ndarray) -> np.ndarray:
    """``(E,)`` int64, the row (source node) of each entry of a CSR adjacency."""
    return np.repeat(np.arange(indptr.size - 1), np.diff(indptr))


def _colouring(indptr: np.ndarray, indices: np.ndarray, src: np.ndarray) -> np.ndarray | None:
    """``(n,)`` bool, step 1 of the module docstring for the graph of CSR adjacency ``(indptr,
    indices)`` (``src``: :func:`_sources` of it), or ``None`` where more than
    :data:`ODD_EDGE_SHARE` of its edges stay odd. The levels are first taken over every edge; where
    that leaves some odd edges, but at most :data:`RETRY_SHARE`,
    and sampled wedges close (:func:`~graphtransfer.tasks.mis.domination.closed_wedges`), again over the
    edges in no triangle, the colouring with fewer odd edges kept (the product that finds those edges
    costs the graph's wedges: random and scale-free graphs, refused after the first, never pay it)."""
    n = indptr.size - 1
    every = searchable(indptr, indices)
    colour, share = _settled(_level_parity(every), indptr, indices, src)
    if 0 < share <= RETRY_SHARE and closed_wedges(indptr, indices) > 0:
        open_edges = ~_in_triangles(indptr, indices, src)
        tree_graph = _adjacency(src[open_edges], indices[open_edges], n)
        retried, retried_share = _settled(_level_parity(tree_graph), indptr, indices, src)
        if retried_share < share:
            colour, share = retried, retried_share
    return colour if share <= ODD_EDGE_SHARE else None


def _level_parity(adjacency: csr_array) -> np.ndarray:
    """``(n,)`` bool, the parity of each node's breadth-first level from the node of highest degree;
    ``False`` for the nodes of other components, which the flips and the domains' flips then colour
    (one search: a random graph's hundreds of small components cost a second one 0.25 s at 10^6 nodes)."""
    start = int(np.argmax(np.diff(adjacency.indptr)))
    _, parent = breadth_first_order(adjacency, start, directed=True, return_predecessors=True)  # symmetric: no transpose
    return _tree_distances(parent) % 2 == 1


def _settled(colour: np.ndarray, indptr: np.ndarray, indices: np.ndarray, src: np.ndarray) -> tuple[np.ndarray, float]:
    """``colour`` after the nodes' flips (:func:`_fewer_odd_edges`) and, where they leave some odd
    edges but at most :data:`RETRY_SHARE`, the domains' (:func:`_fewer_walls`); and the share of
    edges left odd."""
    colour, share = _fewer_odd_edges(colour, indptr, indices, src)
    if 0 < share <= RETRY_SHARE:
        colour, share = _fewer_walls(colour, share, indptr, indices, src)
    return colour, share


def _fewer_walls(colour: np.ndarray, share: float, indptr: np.ndarray, indices: np.ndarray, src: np.ndarray) -> tuple[np.ndarray, float]:
    """``colour`` after rounds of whole domains' flips, and the share of edges it leaves odd. A
    domain is a component of the edges whose ends differ in colour, so every edge between two
    domains is odd: a wall, where a search tree crossed an odd edge and the node flips cannot help
    (on a wall a node has as many neighbours of each colour). Each round colours the graph of
    domains (joined by their walls, weighted by the edges) as the nodes are coloured, flips the
    domains so coloured and the nodes again; every round lowers the odd edges, until no wall is left
    or after :data:`WALL_ROUNDS`. ``share``: the odd edges' share before."""
    n = colour.size
    for _ in range(WALL_ROUNDS):
        odd = colour[src] == colour[indices]
        count, domain = connected_components(_adjacency(src[~odd], indices[~odd], n), directed=False)
        first, second = domain[src[odd]], domain[indices[odd]]
        across = first != second
        if not across.any():
            break
        walls = csr_array((np.ones(int(np.count_nonzero(across))), (first[across], second[across])), shape=(count, count))
        walls.sum_duplicates()
        flip, _ = _fewer_odd_edges(_level_parity(walls), walls.indptr, walls.indices, _sources(walls.indptr), walls.data)
        colour, share = _fewer_odd_edges(colour ^ flip[domain], indptr, indices, src)
    return colour, share


def _in_triangles(indptr: np.ndarray, indices: np.ndarray, src: np.ndarray) -> np.ndarray:
    """``(E,)`` bool, whether each entry of the CSR adjacency is an edge of a triangle: its two
    ends have a neighbour in common (the product of the adjacency with itself, :data:`TRIANGLE_ROWS`
    rows at a time)."""
    n = indptr.size - 1
    adjacency = csr_array((np.ones(indices.size, dtype=np.int32), indices, indptr), shape=(n, n))
    closing = np.zeros(indices.size, dtype=bool)
    for first in range(0, n, TRIANGLE_ROWS):
        rows = adjacency[first : first + TRIANGLE_ROWS]
        common = (rows @ adjacency).multiply(rows).tocoo()  # the block's edges, with their common neighbours counted
        inside = common.data > 0
        keys = (common.row[inside].astype(np.int64) + first) * n + common.col[inside]
        span = slice(indptr[first], indptr[min(first + TRIANGLE_ROWS, n)])
        closing[span] = np.isin(src[span].astype(np.int64) * n + indices[span], keys)
    return closing


def _fewer_odd_edges(
    colour: np.ndarray, indptr: np.ndarray, indices: np.ndarray, src: np.ndarray, weight: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """``colour`` after rounds of flips, and the share of edges it leaves odd: each round, the
    nodes with more neighbours of their own colour than of the other whose gain beats every such
    neighbour's (ties by a seeded draw, so no two neighbours flip together and every round lowers
    the odd edges); with ``weight`` (one per entry of the CSR), the edges' weights counted instead.
    The graphs measured settled within 15 rounds; an unweighted one with more of its edges odd than
    a :data:`HOPELESS` share at that round is given up."""
    n = colour.size
    degree = np.diff(indptr) if weight is None else np.bincount(src, weights=weight, minlength=n)
    rows = np.flatnonzero(np.diff(indptr))
    tie = np.random.default_rng(0).random(n) * 0.5
    share = 0.0
    for round_ in range(FLIP_ROUNDS + 1):
        odd = colour[src] == colour[indices]
        share = float(np.count_nonzero(odd)) / max(indices.size, 1)
        gain = 2 * np.bincount(src[odd], None if weight is None else weight[odd], minlength=n) - degree
        gaining = gain > 0
        hopeless = weight is None and any(round_ == at and share > most for at, most in HOPELESS)
        if round_ == FLIP_ROUNDS or not gaining.any() or hopeless:
            break
        score = np.where(gaining, gain + tie, -1.0)
        best_around = np.full(n, -1.0)
        best_around[rows] = np.maximum.reduceat(score[indices], indptr[rows])
        colour = colour ^ (gaining & (score > best_around))
    return colour, share


def _odd_edge_cover(src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """``(n,)`` bool, a vertex cover of the odd edges ``src - dst`` (each in both directions):
    rounds in which each edge not yet covered takes its end with more such edges (ties to the
    lower id)."""
    once = src < dst
    src, dst = src[once], dst[once]
    cover = np.zeros(n, dtype=bool)
    while src.size:
        count = np.bincount(src, minlength=n) + np.bincount(dst, minlength=n)
        cover[np.where(count[src] >= count[dst], src, dst)] = True
        left = ~cover[src] & ~cover[dst]
        src, dst = src[left], dst[left]
    return cover


def _adjacency(src: np.ndarray, dst: np.ndarray, n: int) -> csr_array:
    """The ``(n, n)`` adjacency of the directed edges ``src -> dst`` (both directions of each edge given)."""
    return csr_array((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(n, n))
