"""Node orders for speed: a renumbering that puts neighbours close together in memory.

A GNN layer gathers every node's neighbours' rows. When neighbours have nearby numbers those
rows are already in cache; in a file that lists a mesh's or a geometric graph's nodes in random
order, every gather is a cache miss once the graph's activations outgrow the cache. Renumbering
by reverse Cuthill–McKee once, before a solve, recovers the locality: the whole MIS solve of a
250,000-node random geometric graph took 2.03 s instead of 2.72 s, the renumbering included
(``bench/node_order.py``). Random and scale-free graphs have no locality to recover (the
renumbering shortens their edges by 10-20% and changes nothing measurable), so
:func:`better_order` keeps their order.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import reverse_cuthill_mckee

from graphtransfer.graphs.graph import Graph

LOCAL_SPAN = 0.01
"""a graph whose edges span less than this share of the node count on average is local as numbered"""
SPAN_GAIN = 4.0
"""a renumbering is worth its cost when it shortens the edges' mean span at least this many times: on random
geometric and Delaunay graphs in random order reverse Cuthill–McKee shortened them 50-200x, on Erdős–Rényi and
Barabási–Albert graphs 1.1-1.2x (100,000 and 250,000 nodes)"""
SPAN_SAMPLE = 65_536
"""the spans are averaged over about this many evenly spaced edges: the gains to tell apart are 1.1-1.2x and
50-200x, and mapping every edge to its new numbers took 75 ms at 250,000 nodes, which :func:`renumbered` does again"""
BALL_STARTS, BALL_RADIUS = 4, 4
""":func:`grows_like_an_expander` grows the balls of this radius around this many nodes"""
EXPANDER_GROWTH = 2.5
"""a ball whose last shell is this many times the one before grows like an expander's: about the average degree
in Erdős–Rényi graphs (7 at degree 8), 1.3-1.8 in two- and three-dimensional meshes"""


def mean_span(edge_index: np.ndarray) -> float:
    """The mean ``|source - target|`` of the edges ``(2, E)``: how far apart neighbours are numbered."""
    return float(np.abs(edge_index[0] - edge_index[1]).mean()) if edge_index.size else 0.0


def grows_like_an_expander(graph: Graph) -> bool:
    """Whether ``graph`` is an expander, with no locality for any numbering to recover: the balls
    of radius :data:`BALL_RADIUS` around :data:`BALL_STARTS` nodes either grow geometrically or
    already hold an eighth of the graph (hubs). A few passes over the edges, a seventh to an eighth
    of what :func:`locality_order` costs (0.01 s at 250,000 nodes, 0.06-0.09 s at 10^6), which it
    saves on random and scale-free graphs."""
    src, dst = graph.edge_index
    reached = np.zeros(graph.num_nodes, dtype=bool)
    reached[np.linspace(0, graph.num_nodes - 1, BALL_STARTS).astype(np.int64)] = True
    shells = [int(reached.sum())]
    for _ in range(BALL_RADIUS):
        reached[dst[reached[src]]] = True
        shells.append(int(reached.sum()) - sum(shells))
    return sum(shells) * 8 > graph.num_nodes or shells[-1] > EXPANDER_GROWTH * max(shells[-2], 1)


def better_order(graph: Graph) -> np.ndarray | None:
    """A renumbering (:func:`locality_order`) that shortens ``graph``'s edges at least
    :data:`SPAN_GAIN` times on average, or ``None`` where the graph is local as numbered, is an
    expander (:func:`grows_like_an_expander`) or the renumbering gains too little to pay."""
    sample = graph.edge_index[:, :: max(1, graph.edge_index.shape[1] // SPAN_SAMPLE)]
    given = mean_span(sample)
    if given < LOCAL_SPAN * graph.num_nodes or grows_like_an_expander(graph):
        return None
    order = locality_order(graph.edge_index, graph.num_nodes)
    return order if mean_span(_new_numbers(order)[sample]) * SPAN_GAIN <= given else None


def locality_order(edge_index: np.ndarray, num_nodes: int) -> np.ndarray:
    """A renumbering (reverse Cuthill–McKee) that puts neighbours close together: 0.1-0.2 s at
    250,000 nodes and 1M edges, 0.4-0.5 s at 10^6 nodes and 4M.

    Shapes:
        edge_index: ``(2, E)`` with both directions of every edge; returns ``(num_nodes,)``
        int64, ``order[k]`` is the old number of new node ``k``.
    """
    source, target = edge_index
    matrix = csr_array((np.ones(source.size, dtype=np.int8), (target, source)), shape=(num_nodes, num_nodes))
    return reverse_cuthill_mckee(matrix, symmetric_mode=True).astype(np.int64)


def renumbered(graph: Graph, order: np.ndarray) -> Graph:
    """``graph`` with its nodes renumbered: new node ``k`` is old node ``order[k]``, and keeps its
    own id (``node_ids``) and every edge. The edges are listed by destination, then source, in the
    new numbers, so that a node's neighbours are read in memory order.

    Shapes:
        order: ``(num_nodes,)`` int64, a permutation of ``0..num_nodes-1``.
    """
    n = graph.num_nodes
    source, target = _new_numbers(order)[graph.edge_index]
    keys = target * n + source  # below 2^62 for the graph's at most 2^31 - 1 nodes
    keys.sort()
    return Graph(np.stack([keys % n, keys // n]), n, graph.name, graph.ids()[order])


def _new_numbers(order: np.ndarray) -> np.ndarray:
    """The inverse of ``order``: ``(N,)``, the new number of each old node."""
    new_number = np.empty(order.size, dtype=np.int64)
    new_number[order] = np.arange(order.size)
    return new_number
