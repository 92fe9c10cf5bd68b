"""The MIS kernel: a smaller graph whose largest independent sets give the given graph's.

Five exact rules of the reduction literature, applied until none applies (each keeps the size of
a maximum independent set, less what it decides):

1. a node without neighbours joins the set;
2. a node with one neighbour joins, its neighbour leaves; a node of degree 2 whose two neighbours
   are adjacent joins, both neighbours leave;
3. a node ``v`` of degree 2 whose neighbours ``u`` and ``w`` are not adjacent is *folded*: ``v``,
   ``u`` and ``w`` become one node adjacent to every neighbour of ``u`` and ``w``; if the folded
   node joins a set of the kernel, ``u`` and ``w`` join the given graph's set, else ``v`` does
   (so the kernel's set is one node smaller than the lifted one);
4. a neighbour ``u`` of a node ``v`` leaves when ``v``'s closed neighbourhood lies inside ``u``'s
   (domination: ``v`` or one of its neighbours, all ``u``'s, can take ``u``'s place in any set);
   applied to the whole graph at once first (:func:`graphtransfer.tasks.mis.domination.dominated`),
   then to the nodes of degree at most :data:`RULE_DEGREE` the other rules change, and only on
   graphs with triangles (:data:`CLOSED_WEDGES`);
5. the nodes at 0 in a half-integral optimum of the LP relaxation join and those at 1 leave
   (Nemhauser and Trotter: some largest set agrees with it; :func:`half_integral_cover`), run
   once the other rules are done, and again after their cascades, on graphs without triangles
   (:data:`LP_NODES`). It decides crowns, independent sets with fewer neighbours than nodes, as
   the low-degree nodes around the hubs of Barabási–Albert graphs with ``m = 3`` make. In the
   same step a component that is bipartite (grids, quad meshes, trees the other rules left) is
   decided whole by König's theorem from the same matching: its largest set, which the LP, 1/2
   everywhere on a lattice, cannot see. Above :data:`LP_NODES` it runs only where the graph may
   be bipartite (:func:`odd_cycle_near`), so bipartite graphs of any size are decided whole.

Rules 1, 2 and 4 are what the local-max decoding also applies every pass
(:func:`graphtransfer.tasks.mis.env.reduction_actions`); rule 3 changes the graph, which no pass of an env
can, so the rules run once, before the policy, and their cascades (a fold or a removal lowers
degrees, which make new pendants, folds and dominated nodes) run to the end. On Barabási–Albert
graphs with ``m = 2`` and ``m = 3`` they leave nothing: the kernel's set is the maximum one
(``bench/mis_kernel.py``).

A smallest vertex cover is the complement of a largest independent set, so the same kernel serves
MVC (:func:`mvc_kernel`): the kernel's cover is complemented, lifted and complemented back.

Only the nodes the rules read get a Python set of neighbours; the rest stay in the CSR, with a
count of their neighbours now, so the cost follows the work the rules do, not the graph's size.
"""

from __future__ import annotations

import gc
from array import array
from dataclasses import dataclass, replace

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import breadth_first_order, connected_components, maximum_bipartite_matching, maximum_flow

from graphtransfer.envs.transforms import MISKernel
from graphtransfer.graphs import Graph
from graphtransfer.graphs.graph import edges_by_destination, sorted_unique, stable_order
from graphtransfer.tasks.mis.domination import CLOSED_WEDGES, closed_wedges, dominated, run_positions

RULE_DEGREE = 8
"""rule 4 looks again at nodes of at most this degree when the other rules change their
neighbourhood (the larger neighbourhoods of denser graphs are rarely nested)"""
LP_NODES = 1 << 17
"""rule 5 runs on graphs the other rules leave with at most this many nodes, and only on graphs
without the triangles that make rule 4 run: the matching behind it takes a second at 2.5 x 10^5
nodes and seconds at 10^6 (Hopcroft–Karp, 3 s for ER of degree 4, 12 s for Barabási–Albert m = 4,
for nothing decided) and far longer on planar graphs (4 s at 3 x 10^4 Delaunay nodes), whose
kernels it never reduced where measured (random geometric and Delaunay graphs, 10^3-10^5 nodes:
every node at 1/2). Above it rule 5 still runs where a breadth-first ball of the graph left finds no odd cycle
(:func:`odd_cycle_near`): a graph that may be bipartite, which the matching decides whole (a 1000 x 1000 grid's largest
set in a 0.55-s solve, where the policy found 0.927 of it in 3.8 s)"""
ODD_CYCLE_BALL = 1 << 16
"""the nodes :func:`odd_cycle_near` reaches at most before it answers: on a random graph of 10^6 nodes its first few
thousand already close an odd cycle; a lattice's ball of this size closes none"""


def mis_kernel(graph: Graph, lp: bool = True) -> MISKernel | None:
    """``graph``'s kernel under the rules of this module; ``None`` where they decide nothing.
    ``lp=False`` leaves rule 5 out (the kernels between a decoding's passes,
    :mod:`graphtransfer.solve.residual_kernels`).

    Isolated nodes, pendants and nodes of degree 2 are first decided in array rounds
    (:func:`low_degree_rounds`), then the rules run node by node on the graph left, and the two
    kernels are made one."""
    rounds = low_degree_rounds(graph)
    if rounds is None:
        return _rules_kernel(graph, lp)
    rest, nodes, joined, folds = rounds.rest, rounds.nodes, rounds.joined, rounds.folds
    inner = _rules_kernel(rest, lp) if rest.num_nodes else None
    if inner is None:
        if not rest.num_nodes:  # decided whole: keep the last node to join, isolated, for the decoding to take
            nodes, joined = joined[-1:], joined[:-1]
            rest = Graph(np.zeros((2, 0), dtype=np.int64), 1, graph.name)
        return MISKernel(graph_by_destination(rest.edge_index, rest.num_nodes, graph.name), nodes, joined, folds, graph)
    included = np.concatenate([joined, nodes[inner.included]])
    return MISKernel(inner.graph, nodes[inner.nodes], included, np.concatenate([folds, nodes[inner.folds]]), graph)


def graph_by_destination(edges: np.ndarray, num_nodes: int, name: str) -> Graph:
    """A kernel's graph, its edges ``(2, E)`` listed by destination (a stable sort, a merge where
    they mostly are): the order the MIS env reads them in (:func:`graphtransfer.tasks.mis.env.by_destination`),
    which then takes them as they are instead of keeping a sorted copy beside them for the whole
    solve (an Erdős–Rényi kernel of 10^6 nodes: 128 MB)."""
    return Graph(edges_by_destination(edges, num_nodes), num_nodes, name)


PEEL_SHARE = 0.01
"""a round of pendants (:func:`low_degree_rounds`) is made while it decides at least this share of the nodes left: the
cascades of a few nodes that follow cost a pass over every edge each, the rules node by node a few microseconds a node"""
FOLD_SHARE = 0.01
"""a round of degree-2 nodes is made while the graph left has at least this many of them per directed edge, and it
decides as many nodes: on an Erdős–Rényi graph of degree 8 (1% of its nodes of degree 2) the rules node by node fold them
in less time than a round's passes over the edges take"""


@dataclass(frozen=True)
class Rounds:
    """What :func:`low_degree_rounds` decided: the graph left and how to lift a set of it."""

    rest: Graph
    """the graph left, its nodes numbered ``0..k-1`` in the given graph's order (no ids or weights)"""
    nodes: np.ndarray
    """``(k,)`` int64, each node's position in the given graph (a folded node is named by the neighbour it kept)"""
    joined: np.ndarray
    """``(j,)`` int64, the nodes that joined the set"""
    folds: np.ndarray
    """``(f, 3)`` int64, the folds' ``(v, kept, merged)``, in :class:`MISKernel`'s order"""


def low_degree_rounds(graph: Graph) -> Rounds | None:
    """Rules 1-3 in array rounds, each a few passes over the edges: every isolated node joins, every
    node of one neighbour joins and that neighbour leaves (of two pendants joined to each other,
    the lower id joins), again on what is left, while a round decides :data:`PEEL_SHARE` of the
    nodes; then, while enough nodes have degree 2 (:data:`FOLD_SHARE`), one round of degree-2 nodes
    that share no node: a node whose two neighbours are adjacent joins and they leave, any other
    is folded with its two neighbours (:func:`_degree_two_round`), and the pendants again.

    The joins of a pendant round are independent and every one is a rule's: pendants of one
    neighbour are never adjacent, and a node that joins is never another's neighbour unless both
    are pendants of each other. A degree-2 round's nodes and their neighbours are disjoint, so no
    rule of the round changes what another reads (a node's two neighbours, whether they are
    adjacent): the round is the rules applied one after another. On the residual graph two passes
    of an MIS decoding leave of a Barabási–Albert graph (``m = 3``, 10^6 nodes; 9.3 x 10^5 left)
    the pendant rounds decide every node in 0.3 s, where the rules node by node took 6.2 s; on the
    residual graphs of the demo's 250k graph and of an Erdős–Rényi graph of 10^6 nodes the degree-2
    rounds decide the same number of nodes as the rules in a third of their seconds
    (``bench/mis_kernel.py``).

    Returns ``None`` where no round decided anything.
    """
    n = graph.num_nodes
    src, dst = graph.edge_index
    alive = np.ones(n, dtype=bool)
    joined: list[np.ndarray] = []
    folds: list[np.ndarray] = []
    while True:
        degree = np.bincount(dst, minlength=n)  # edges between nodes left only
        joins, leaving = _pendant_round(src, dst, alive, degree)
        if joins.size and joins.size >= PEEL_SHARE * np.count_nonzero(alive):
            joined.append(joins)
            alive[joins] = alive[leaving] = False
            kept = alive[src] & alive[dst]
            src, dst = src[kept], dst[kept]
            continue
        if np.count_nonzero(alive & (degree == 2)) < FOLD_SHARE * src.size:
            break
        joins, made, leaving = _degree_two_round(src, dst, degree)
        decided = joins.size + 2 * len(made) + leaving.size
        if not decided or decided < FOLD_SHARE * src.size:
            break
        joined.append(joins)
        folds.append(made)
        alive[joins] = alive[leaving] = alive[made[:, 0]] = alive[made[:, 2]] = False
        src, dst = _folded_edges(src, dst, alive, made)
    if alive.all():
        return None
    nodes = np.flatnonzero(alive)
    position = np.full(n, -1, dtype=np.int64)
    position[nodes] = np.arange(nodes.size)
    rest = Graph(np.stack([position[src], position[dst]]), int(nodes.size), graph.name)
    no_folds = np.zeros((0, 3), dtype=np.int64)
    return Rounds(rest, nodes, np.concatenate(joined), np.concatenate(folds) if folds else no_folds)


def _pendant_round(src: np.ndarray, dst: np.ndarray, alive: np.ndarray, degree: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rules 1 and 2's isolated nodes and pendants: ``(joining, leaving)`` node arrays."""
    pendant = alive & (degree == 1)
    edge = np.flatnonzero(pendant[src])
    v, u = src[edge], dst[edge]
    first = ~pendant[u] | (v < u)
    return np.concatenate([np.flatnonzero(alive & (degree == 0)), v[first]]), u[first]


def _degree_two_round(src: np.ndarray, dst: np.ndarray, degree: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One round of degree-2 nodes ``v`` with neighbours ``u, w``, no node in two of them (each
    node goes to the lowest ``v`` that claims it): ``v`` joins where ``u`` and ``w`` are adjacent
    (rule 2), else the three are folded into the neighbour of the higher degree (rule 3).

    Returns ``(joining, folds, leaving)``: the nodes that join, the folds' ``(v, kept, merged)``
    and the neighbours of the joining nodes, which leave.
    """
    n = degree.size
    edge = np.flatnonzero((degree == 2)[src])
    edge = edge[stable_order(src[edge])]  # each node's two edges side by side
    v, u, w = src[edge[0::2]], dst[edge[0::2]], dst[edge[1::2]]
    claim = np.full(n, n, dtype=np.int64)
    for part in (v, u, w):
        np.minimum.at(claim, part, v)
    first = (claim[v] == v) & (claim[u] == v) & (claim[w] == v)
    v, u, w = v[first], u[first], w[first]
    adjacent = _has_edges(src, dst, u, w, n)
    larger = degree[u] >= degree[w]
    kept, merged = np.where(larger, u, w)[~adjacent], np.where(larger, w, u)[~adjacent]
    folds = np.stack([v[~adjacent], kept, merged], axis=1)
    return v[adjacent], folds, np.concatenate([u[adjacent], w[adjacent]])


def _has_edges(src: np.ndarray, dst: np.ndarray, a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Whether each ``(a[i], b[i])`` is an edge: a binary search among the sorted edges out of the nodes of ``a``."""
    among = np.zeros(n, dtype=bool)
    among[a] = True
    edge = np.flatnonzero(among[src])
    keys = np.sort(src[edge] * n + dst[edge])
    probe = a * n + b
    if not keys.size:
        return np.zeros(probe.size, dtype=bool)
    found = np.minimum(np.searchsorted(keys, probe), keys.size - 1)
    return keys[found] == probe


def _folded_edges(src: np.ndarray, dst: np.ndarray, alive: np.ndarray, folds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The edges after a degree-2 round (``alive`` already marks the nodes gone: joined, left, merged): those between
    nodes left, and each merged node's edges to nodes left renamed to its kept node, once, where
    the kept node has no such edge yet."""
    n = alive.size
    _, kept, merged = folds.T
    renamed = np.arange(n)
    renamed[merged] = kept
    moving = np.zeros(n, dtype=bool)
    moving[merged] = True
    edge = np.flatnonzero(moving[src] | moving[dst])
    new_src, new_dst = renamed[src[edge]], renamed[dst[edge]]
    both = alive[new_src] & alive[new_dst]
    pairs = sorted_unique(new_src[both] * n + new_dst[both])
    new_src, new_dst = pairs // n, pairs % n
    stay = alive[src] & alive[dst]
    src, dst = src[stay], dst[stay]
    is_kept = np.zeros(n, dtype=bool)
    is_kept[kept] = True
    outer, inner = np.where(is_kept[new_src], new_src, new_dst), np.where(is_kept[new_src], new_dst, new_src)
    new = ~_has_edges(src, dst, outer, inner, n)  # the graph is symmetric: test each pair from its kept end
    return np.concatenate([src, new_src[new]]), np.concatenate([dst, new_dst[new]])


def _rules_kernel(graph: Graph, lp: bool) -> MISKernel | None:
    """The kernel of the rules node by node (:class:`_Rules`), rule 5 only with ``lp``; ``None`` where they decide nothing."""
    collecting = gc.isenabled()
    gc.disable()  # the rules make a set per node they touch: the collector's passes over them would cost more than the rules
    try:
        rules = _Rules(graph, lp)
        rules.run()
        kernel = rules.kernel()
        if kernel is not None:  # the graph is replaced by its kernel: the CSR it keeps (Graph.csr) goes as it went with the rules
            graph.forget_csr()
        return kernel
    finally:
        if collecting:
            gc.enable()


RENUMBER_BLOCK = 1 << 16
"""edges renumbered at a time by :func:`_renumbered_edges`: its temporaries (512 KiB) stay in the cache"""


def _renumbered_edges(
    edge_index: np.ndarray, kept: np.ndarray, new_src: np.ndarray, new_dst: np.ndarray, position: np.ndarray
) -> np.ndarray:
    """The kernel's edges, one ``(2, E')`` array and no other of that size: the columns of
    ``edge_index`` that ``kept`` marks, then ``(new_src, new_dst)``, renumbered by ``position``.
    Each block of columns is compressed and renumbered before the next, so the result is written
    once (compressing it whole, then renumbering it in blocks of 4M, read and wrote it twice: the
    kernel of an ER graph of degree 8 alone in a fresh process took 0.80-0.95 s against 0.65-0.66 s
    at 10^6 nodes, 9.9-10.4 s against 8.1-8.2 s at 10^7; inside predict 0.67-0.70 s either way at
    10^6, 14.3-14.4 s against 11.1 s at 10^7)."""
    count = int(np.count_nonzero(kept))
    edges = np.empty((2, count + new_src.size), dtype=np.int64)
    written = 0
    for start in range(0, edge_index.shape[1], RENUMBER_BLOCK):
        block = kept[start : start + RENUMBER_BLOCK]
        size = int(np.count_nonzero(block))
        for row in range(2):
            np.take(position, np.compress(block, edge_index[row, start : start + RENUMBER_BLOCK]), out=edges[row, written : written + size])
        written += size
    edges[0, count:], edges[1, count:] = position[new_src], position[new_dst]
    return edges


def half_integral_cover(csr: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The nodes at 0 and at 1 of a half-integral optimum of the vertex-cover LP of the graph of
    adjacency ``csr`` (:meth:`Graph.csr`), each ``(n,)`` int64: a largest independent set holds
    every node at 0 and none at 1 (Nemhauser and Trotter, 1975); and on every bipartite component
    of the graph, the nodes of one of its largest independent sets at 0 and the rest at 1.

    The optimum comes from a minimum vertex cover of the bipartite double cover (every node a left
    and a right copy, every edge ``u - v`` joining ``u``'s left copy to ``v``'s right one), by
    König's theorem from a maximum matching: the left copies unmatched and those reached from them
    by alternating paths, and the right copies those paths reach, are ``Z``; the cover is the left
    copies outside ``Z`` and the right ones in it, and a node is at 0 when neither of its copies is
    in the cover, at 1 when both are. A graph whose double cover has a perfect matching (most
    random graphs without low-degree hubs' leaves) has every node at 1/2. A bipartite component's
    double cover is two copies of it, each holding one side's left copies and the other's right
    ones, and the same matching restricted to one copy is a maximum matching of the component: its
    largest set is that copy's complement of the cover (:func:`_bipartite_sides`), integral where
    the LP is 1/2 (a grid: every node)."""
    indptr, indices = csr
    n = indptr.size - 1
    adjacency = csr_array((np.ones(indices.size, dtype=np.int8), indices, indptr), shape=(n, n))
    levels, components = breadth_first_levels(adjacency)
    side = _bipartite_sides(levels, components, indptr, indices)
    if (side >= 0).all():
        return largest_bipartite_set(adjacency, side == 0)
    flow = n > LP_NODES or int(levels.max(initial=0)) > FLOW_MATCHING_DEPTH
    left_reached, right_reached = _alternating_reach(indptr, indices, _maximum_matching(adjacency, flow))
    at_zero, at_one = left_reached & ~right_reached, ~left_reached & right_reached
    bipartite, first = side >= 0, side == 0
    in_set = (first & left_reached) | (~first & ~right_reached)
    at_zero = np.where(bipartite, in_set, at_zero)
    at_one = np.where(bipartite, ~in_set, at_one)
    return np.flatnonzero(at_zero), np.flatnonzero(at_one)


def largest_bipartite_set(adjacency: csr_array, first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`half_integral_cover` of a graph whose every component is bipartite, ``first`` ``(n,)``
    bool marking one side: König's theorem on the graph itself rather than on its double cover,
    which holds it twice (half the edges to match: the 1000 x 1000 grid's flow 0.16 s against 0.89 s
    for its double cover's). A maximum matching of
    the first side into the other, the alternating paths from the first side's unmatched nodes
    reaching ``Z``: the smallest cover is the first side outside ``Z`` and the other inside it, the
    largest set the rest, at 0; the cover at 1.

    The matching is always the flow (:func:`_flow_matching`), bounded by ``E sqrt(V)``: scipy's
    matching, faster on random bipartite graphs (2 x 10^5 nodes: 0.18 against 0.78 s), took 6.2 s on
    a 362 x 362 grid with one node joined to a tenth of one side, which keeps it shallow, where the
    flow took 0.1 s, and did not finish within 5 minutes at 10^6 nodes (:func:`_maximum_matching`)."""
    left, right = np.flatnonzero(first), np.flatnonzero(~first)
    between = adjacency[left][:, right].tocsr()
    left_reached, right_reached = _alternating_reach(between.indptr, between.indices, _flow_matching(between), right.size)
    in_set = np.zeros(first.size, dtype=bool)
    in_set[left[left_reached]] = True
    in_set[right[~right_reached]] = True
    return np.flatnonzero(in_set), np.flatnonzero(~in_set)


def _alternating_reach(
    indptr: np.ndarray, indices: np.ndarray, right_of: np.ndarray, num_right: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``Z`` of :func:`half_integral_cover` for a matching ``right_of`` of the left nodes (rows of
    the CSR) into the right ones (its columns, ``num_right`` of them; as many as the rows by
    default, the double cover's copies): which left and which right nodes alternating paths from
    the unmatched left nodes reach, ``(rows,)`` and ``(num_right,)`` bool."""
    n = indptr.size - 1
    num_right = n if num_right is None else num_right
    unmatched = right_of < 0
    left_of = np.full(num_right, -1, dtype=np.int64)
    left_of[right_of[~unmatched]] = np.flatnonzero(~unmatched)
    # one breadth-first search in scipy over the paths' steps: left -> right along every edge, right -> its matched left,
    # and a source -> every unmatched left (a random bipartite graph of 10^6 nodes: 0.3 s, where rounds over the
    # frontier in numpy took 1.8 s)
    partnered = left_of >= 0
    starts = np.flatnonzero(unmatched)
    source = n + num_right
    steps_indptr = np.concatenate([indptr, indptr[-1] + np.cumsum(partnered), [indptr[-1] + np.count_nonzero(partnered) + starts.size]])
    steps_indices = np.concatenate([n + indices, left_of[partnered], starts])
    steps = searchable(steps_indptr, steps_indices)
    reached = np.zeros(source + 1, dtype=bool)
    reached[breadth_first_order(steps, source, directed=True, return_predecessors=False)] = True
    return reached[:n], reached[n:source]


def odd_cycle_near(csr: tuple[np.ndarray, np.ndarray], alive: np.ndarray, degree: np.ndarray) -> bool:
    """Whether a breadth-first search among the ``alive`` nodes of the graph of adjacency ``csr``,
    from the node of highest ``degree``, finds an edge between two nodes of one level (an odd
    cycle, so the graph is not bipartite) before it has reached :data:`ODD_CYCLE_BALL` nodes or its
    component. ``False`` says only that the ball is bipartite. One ball, from one node: a bipartite
    component beside a non-bipartite one that holds the node of highest degree is left to the
    policy, as every graph above :data:`LP_NODES` was before.

    Shapes:
        csr: :meth:`Graph.csr`'s ``(indptr, indices)``; alive, degree: ``(n,)``.
    """
    indptr, indices = csr
    level = np.where(alive, np.int32(-1), np.int32(-2))  # -1: not reached yet; -2: gone
    start = int(np.argmax(np.where(alive, degree, -1)))
    level[start] = 0
    frontier, reached, depth = np.array([start]), 1, 0
    while frontier.size and reached < ODD_CYCLE_BALL:
        around = neighbours_of(indptr, indices, frontier)
        if (level[around] == depth).any():
            return True
        frontier = sorted_unique(around[level[around] == -1])
        depth += 1
        level[frontier] = depth
        reached += frontier.size
    return False


def neighbours_of(indptr: np.ndarray, indices: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """The entries of the rows ``nodes`` of the CSR adjacency ``(indptr, indices)``, one after the
    other: every neighbour of each of them, in one gather (a breadth-first search's next level,
    before duplicates and nodes already reached are dropped)."""
    return indices[run_positions(indptr[nodes], indptr[nodes + 1] - indptr[nodes])]


FLOW_MATCHING_DEPTH = 32
"""the breadth-first depth of the largest component from which the LP rule's matching is a maximum flow (Dinic's)
rather than scipy's bipartite matching: see :func:`_maximum_matching`"""


def _maximum_matching(adjacency: csr_array, flow: bool) -> np.ndarray:
    """``(rows,)`` int64, the column each row of ``adjacency`` is matched to (-1: unmatched) in a
    maximum matching of the bipartite graph of rows and columns (the double cover's copies, or a
    bipartite graph's two sides): scipy's bipartite matching, or with ``flow`` a maximum flow.

    scipy's bipartite matching is the faster on graphs whose paths are short (Barabási–Albert and
    Erdős–Rényi graphs of 10^5 nodes: 0.15-0.19 s, a maximum flow 0.63 s; a random bipartite graph of
    10^6 nodes, its sides: 3.0 s against 7.6 s) but searches for minutes on lattices, where augmenting
    paths are long: a 100 x 100 grid whose rules had folded its corners did not finish in 60 s, an 80
    x 80 grid numbered at random took 32 s. Dinic's maximum flow is bounded by ``E sqrt(V)`` whatever
    the order (that grid 0.002 s, a 316 x 316 grid 0.05 s). So :func:`half_integral_cover` takes the
    flow on graphs whose breadth-first search is deeper than :data:`FLOW_MATCHING_DEPTH`, on every
    graph above :data:`LP_NODES`, and on graphs bipartite throughout (:func:`largest_bipartite_set`),
    where a hub can make a lattice shallow: a 1000 x 1000 grid with one node joined to a tenth of one
    side (13 levels) matched by the flow in 0.26 s, and by scipy's matching not within 5 minutes."""
    if not flow:
        return maximum_bipartite_matching(adjacency, perm_type="column").astype(np.int64)
    return _flow_matching(adjacency)


def searchable(indptr: np.ndarray, indices: np.ndarray) -> csr_array:
    """The square CSR matrix ``(indptr, indices)`` as scipy's graph searches read it without a copy: float64 ones,
    32-bit indices where they fit (a breadth-first search of 8M entries: 0.08 s, against 0.19 s from int8 data and
    int64 indices, which the search first converts)."""
    n = indptr.size - 1
    narrow = np.int32 if indices.size < np.iinfo(np.int32).max and n < np.iinfo(np.int32).max else np.int64
    return csr_array((np.ones(indices.size), indices.astype(narrow, copy=False), indptr.astype(narrow, copy=False)), shape=(n, n))


def breadth_first_levels(adjacency: csr_array) -> tuple[np.ndarray, np.ndarray | None]:
    """``(n,)`` int64, each node's breadth-first distance from one node of its component (the
    node of highest degree where the graph is connected), and the components' labels, ``None``
    for a connected graph. A disconnected graph is searched once more from a node joined to one
    node of each component, so that every component's depth counts (a lattice beside a larger
    random part made scipy's matching search for minutes as a lattice alone did); the components
    are those of the nodes the first search missed, with the first search's as 0 (a random graph
    of 10^6 nodes with 361 small components: 0.2 s, where the components of the whole graph and a
    matrix joined by blocks took 0.6 s more). One breadth-first search, 0.03 s at 10^5 nodes."""
    n = adjacency.shape[0]
    indptr, indices = adjacency.indptr, adjacency.indices
    start = int(np.argmax(np.diff(indptr)))
    order, parent = breadth_first_order(adjacency, start, directed=True, return_predecessors=True)  # symmetric: no transpose
    if order.size == n:
        return _tree_distances(parent), None
    missed = np.ones(n, dtype=bool)
    missed[order] = False
    rest = np.flatnonzero(missed)
    _, labels = connected_components(adjacency[rest][:, rest], directed=False)  # no edge leaves the first search's component
    components = np.zeros(n, dtype=np.int64)
    components[rest] = labels + 1
    firsts = np.concatenate([[start], rest[np.unique(labels, return_index=True)[1]]])  # one node of each component
    joined_indices = np.concatenate([indices, firsts])
    joined_indptr = np.concatenate([indptr, [indptr[-1] + firsts.size]])  # node n, the search's start: to each first
    joined = searchable(joined_indptr, joined_indices)
    _, parent = breadth_first_order(joined, n, directed=True, return_predecessors=True)
    return _tree_distances(parent)[:n] - 1, components


def _tree_distances(parent: np.ndarray) -> np.ndarray:
    """Each node's distance from the root of a forest given by ``parent`` (negative: a root or a
    node outside it), by pointer jumping: each round doubles how far every node looks up."""
    up = np.where(parent >= 0, parent, np.arange(parent.size))
    distance = (parent >= 0).astype(np.int64)
    while True:
        above = up[up]
        if np.array_equal(above, up):
            return distance
        distance += distance[up]
        up = above


ODD_CYCLE_PREFIX = 4096
"""nodes whose edges :func:`_bipartite_sides` reads first on a connected graph: one with odd cycles everywhere shows one
there"""


def _bipartite_sides(levels: np.ndarray, components: np.ndarray | None, indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``(n,)`` int8: each node's side, 0 or 1 (the parity of its breadth-first level), where its
    component is bipartite; -1 where an edge of the component joins two levels of the same parity
    (an odd cycle). ``components``: the labels of :func:`breadth_first_levels`, ``None`` for a
    connected graph, whose edges of the first :data:`ODD_CYCLE_PREFIX` nodes are read first: on
    dense random graphs that one slice decides it, where all edges (or the double cover's
    components, the first way this was done) cost 0.3-1.3 s at 10^4-10^5 nodes of degree 64."""
    parity = (levels % 2).astype(np.int8)
    n = parity.size
    odd = np.zeros(1 if components is None else int(components.max()) + 1, dtype=bool)
    label = np.zeros(n, dtype=np.int64) if components is None else components
    for first, last in ((0, min(ODD_CYCLE_PREFIX, n)), (min(ODD_CYCLE_PREFIX, n), n)):
        src = np.repeat(np.arange(first, last), np.diff(indptr[first : last + 1]))
        closing = parity[src] == parity[indices[indptr[first] : indptr[last]]]
        odd[label[src[closing]]] = True
        if components is None and odd[0]:
            break
    return np.where(odd[label], -1, parity).astype(np.int8)


def _flow_matching(adjacency: csr_array) -> np.ndarray:
    """:func:`_maximum_matching` as a maximum flow: source -> left nodes (rows) -> right nodes
    (columns) -> sink, every capacity 1 (Dinic's algorithm)."""
    n, m = adjacency.shape
    indptr, indices = adjacency.indptr, adjacency.indices
    left = np.repeat(np.arange(n), np.diff(indptr))
    source, sink = n + m, n + m + 1
    rows = np.concatenate([np.full(n, source), left, n + np.arange(m)])
    cols = np.concatenate([np.arange(n), n + indices, np.full(m, sink)])
    network = csr_array((np.ones(rows.size, dtype=np.int32), (rows, cols)), shape=(n + m + 2, n + m + 2))
    flow = maximum_flow(network, source, sink, method="dinic").flow.tocoo()
    used = (flow.data > 0) & (flow.row < n) & (flow.col >= n) & (flow.col < n + m)
    right_of = np.full(n, -1, dtype=np.int64)
    right_of[flow.row[used]] = flow.col[used] - n
    return right_of


def mvc_kernel(graph: Graph, lp: bool = True) -> MISKernel | None:
    """:func:`mis_kernel` for vertex covers: its solutions are covers (:attr:`MISKernel.covers`)."""
    kernel = mis_kernel(graph, lp)
    return None if kernel is None else replace(kernel, covers=True)


class _Rules:
    """The rules' state: the nodes still in the graph, every node's degree now, and the
    neighbourhoods the rules read.

    A node's neighbours become a Python set only when a rule reads them (:meth:`neighbours`);
    removing or merging a node updates the sets already made and every neighbour's degree, not
    the neighbours' neighbourhoods (an Erdős–Rényi graph of degree 8 made a set for 1.6 million of
    its 10^7 nodes when each removal made one for every neighbour; ``bench/mis_kernel.py``)."""

    def __init__(self, graph: Graph, lp: bool = True):
        self.graph = graph
        self.lp = lp
        indptr, self.indices = self.csr = graph.csr()
        degree = np.diff(indptr)
        self.indptr = array("q", indptr.tobytes())  # read once per node: Python ints, as fast as a list's, in 8 bytes each
        self.degree = array("q", degree.tobytes())
        """each node's number of neighbours now"""
        self.alive = bytearray(b"\x01") * graph.num_nodes
        self.sets: list[set[int] | None] = [None] * graph.num_nodes
        """each node's neighbours now, once read (:meth:`neighbours`); None: not read yet"""
        self.merged_into: dict[int, int] = {}
        """each merged node's folded node: a set made later reads the folded node for the merged one"""
        self.added: list[int] = []
        """the edges folds added, flat ``kept, y, kept, y, ...``; the rules remove no edge between
        nodes that stay, so the graph left is the given edges and these between the nodes left"""
        self.queue: list[int] = np.flatnonzero(degree <= 2)[::-1].tolist()  # lowest ids first
        self.included: list[int] = []
        self.folds: list[tuple[int, int, int]] = []
        self.limit = RULE_DEGREE if closed_wedges(indptr, self.indices) >= CLOSED_WEDGES else 2
        """the largest degree the rules look at: above 2 where rule 4 runs"""

    def neighbours(self, x: int) -> set[int]:
        """``x``'s neighbours now, made a set of its own the first time asked: its neighbours in the
        graph that are still in it, a merged one read as the node it was folded into."""
        found = self.sets[x]
        if found is None:
            alive, merged_into = self.alive, self.merged_into
            found = self.sets[x] = set()
            for y in self.indices[self.indptr[x] : self.indptr[x + 1]].tolist():
                while not alive[y]:
                    y = merged_into.get(y, -1)
                    if y < 0:
                        break
                else:
                    found.add(y)
        return found

    def run(self) -> None:
        """Apply the rules until none applies: rule 4 to every node at once (where it runs), then
        the rules node by node to the nodes of degree <= 2 and to those whose neighbourhood the
        rules change, then rule 5 to the graph left, and the others again after each time it
        decides something."""
        if self.limit > 2:
            degree = np.frombuffer(self.degree, dtype=np.int64)  # the degrees as given: no rule has run yet
            for u in np.flatnonzero(dominated(self.graph.edge_index, degree)).tolist():
                self.remove(u)
        self.cascade()
        while self.relax():
            self.cascade()

    def cascade(self) -> None:
        """Rules 1-4 node by node, from the queue, until it is empty."""
        queue, alive, degree, neighbours, limit = self.queue, self.alive, self.degree, self.neighbours, self.limit
        while queue:
            v = queue.pop()
            if not alive[v] or degree[v] > limit:
                continue
            around = neighbours(v)
            if len(around) < 2:
                self.join(v, around)
            elif len(around) > 2:
                self.dominate(v, around)
            else:
                u, w = around
                if w in neighbours(u):
                    self.join(v, around)
                else:
                    self.fold(v, u, w)

    def relax(self) -> bool:
        """Rule 5 on the graph left, where it runs (:data:`LP_NODES`; above it where a ball finds no
        odd cycle): the nodes of a half-integral optimum of the LP relaxation at 0 join, those at 1
        leave. Whether it decided any."""
        alive = np.frombuffer(self.alive, dtype=np.uint8)
        left = int(np.count_nonzero(alive))
        if not self.lp or self.limit > 2 or not left:
            return False
        if left > LP_NODES and odd_cycle_near(self.csr, alive.astype(bool), np.frombuffer(self.degree, dtype=np.int64)):
            return False
        nodes, edges = self.current()
        joining, leaving = half_integral_cover(Graph(edges, int(nodes.size)).csr())
        if not joining.size and not leaving.size:
            return False
        if joining.size + leaving.size == nodes.size:  # decided whole (a bipartite graph): no neighbourhood to update
            self.included += nodes[joining].tolist()
            alive[nodes] = 0
            return True
        for v in nodes[joining].tolist():
            self.join(v, self.neighbours(v))
        for u in nodes[leaving].tolist():
            if self.alive[u]:
                self.remove(u)
        return True

    def join(self, v: int, leaving: set[int]) -> None:
        """``v`` joins the set; ``leaving``, its neighbours, leave the graph."""
        self.included.append(v)
        for u in tuple(leaving):
            self.remove(u)
        self.alive[v] = 0
        self.sets[v] = set()

    def dominate(self, v: int, around: set[int]) -> None:
        """The first neighbour of ``v`` whose closed neighbourhood holds ``v``'s leaves; ``v`` is
        looked at again (its degree fell)."""
        for u in around:
            if self.degree[u] >= len(around) and len(around - self.neighbours(u)) == 1:  # u itself, never its own neighbour
                self.remove(u)
                self.queue.append(v)
                return

    def remove(self, x: int) -> None:
        sets, degree, queue, limit = self.sets, self.degree, self.queue, self.limit
        self.alive[x] = 0
        for y in self.neighbours(x):
            around = sets[y]
            if around is not None:
                around.discard(x)
            degree[y] -= 1
            if degree[y] <= limit:
                queue.append(y)
        sets[x] = set()

    def fold(self, v: int, u: int, w: int) -> None:
        """``v``, ``u`` and ``w`` become one node, named by the neighbour of the larger neighbourhood."""
        sets, degree, queue, limit = self.sets, self.degree, self.queue, self.limit
        kept, merged = (u, w) if degree[u] >= degree[w] else (w, u)
        self.folds.append((v, kept, merged))
        self.alive[v] = self.alive[merged] = 0
        self.merged_into[merged] = kept
        sets[v] = set()
        into = self.neighbours(kept)
        into.discard(v)
        added = self.added
        for y in self.neighbours(merged):
            if y == v:
                continue
            around = sets[y]
            if around is not None:
                around.discard(merged)
            if y in into:  # y loses merged, already a neighbour of kept
                degree[y] -= 1
            else:  # merged's place goes to kept
                if around is not None:
                    around.add(kept)
                into.add(y)
                added += (kept, y)
            if degree[y] <= limit:
                queue.append(y)
        sets[merged] = set()
        degree[kept] = len(into)
        if degree[kept] <= limit:
            queue.append(kept)

    def kernel(self) -> MISKernel | None:
        alive = np.frombuffer(self.alive, dtype=np.uint8).astype(bool)
        if alive.all():
            return None
        if not alive.any():  # decided whole: keep the last node to join, isolated, for the decoding to take
            self.alive[self.included.pop()] = 1
        nodes, edges = self.current()
        kernel = graph_by_destination(edges, int(nodes.size), self.graph.name)
        folds = np.array(self.folds, dtype=np.int64).reshape(-1, 3)
        return MISKernel(kernel, nodes, np.array(self.included, dtype=np.int64), folds, self.graph)

    def current(self) -> tuple[np.ndarray, np.ndarray]:
        """The graph the rules have left: its nodes' positions in the given graph and its edges,
        ``(2, E')``, between the nodes' positions in that list: the given edges between nodes left,
        then the edges folds added between them, both ways."""
        alive = np.frombuffer(self.alive, dtype=np.uint8).astype(bool)
        nodes = np.flatnonzero(alive)
        position = np.full(self.graph.num_nodes, -1, dtype=np.int64)
        position[nodes] = np.arange(nodes.size)
        src, dst = self.graph.edge_index
        added = np.array(self.added, dtype=np.int64).reshape(-1, 2)
        added = added[alive[added[:, 0]] & alive[added[:, 1]]]
        new_src, new_dst = np.concatenate([added[:, 0], added[:, 1]]), np.concatenate([added[:, 1], added[:, 0]])
        return nodes, _renumbered_edges(self.graph.edge_index, alive[src] & alive[dst], new_src, new_dst, position)
