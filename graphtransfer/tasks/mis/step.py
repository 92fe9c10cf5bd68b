"""The MIS rules of one step, which an env (:class:`~graphtransfer.tasks.mis.env.MISEnv`) and a
batch of episodes (:class:`~graphtransfer.tasks.mis.batched.MISBatch`) share: the step itself and
the residual edges it reads, ordered by destination."""

from __future__ import annotations

import weakref

import numpy as np

from graphtransfer.graphs import Graph
from graphtransfer.graphs.graph import edges_by_destination
from graphtransfer.tasks.mis.constants import EXCLUDE, IN_SET, INCLUDE, OUT, UNDECIDED

_BY_DESTINATION: dict[int, np.ndarray] = {}
BY_DESTINATION_KEPT = 4
"""graphs whose edges by destination are kept: the graphs of an env or two (a solve goes through many kernels of one graph)"""


def by_destination(graph: Graph) -> np.ndarray:
    """``graph.edge_index`` ordered by destination (stably), computed once per graph of the last
    :data:`BY_DESTINATION_KEPT` still alive: ``(2, E)``. An entry goes with its graph (a weak
    reference's callback): a decoding's residual kernels, each a graph of its own and dropped once
    the next is made, would otherwise stay in memory with their edges until pushed out."""
    key = id(graph)
    edges = _BY_DESTINATION.get(key)
    if edges is None:
        while len(_BY_DESTINATION) >= BY_DESTINATION_KEPT:  # the oldest goes
            _BY_DESTINATION.pop(next(iter(_BY_DESTINATION)))
        edges = edges_by_destination(graph.edge_index, graph.num_nodes)  # a residual graph of a solve comes in this order already
        _BY_DESTINATION[key] = edges
        weakref.finalize(graph, _BY_DESTINATION.pop, key, None)  # before another object can take its id
    return edges


def mis_step(edge_index: np.ndarray, status: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, int]:
    """One step of the rules above; returns the new status and how many nodes joined the set.

    Both directions of every edge are stored, so each test reads the flags by destination first
    and an edge's source only where that passed: along the env's edges, ordered by destination,
    the first read runs along the flags (ER, 10^7 nodes: 4.9 s of a solve's 21 passes in a
    profile when every edge's source was looked up)."""
    src, dst = edge_index
    undecided = status == UNDECIDED
    wants_in = undecided & (action == INCLUDE)
    clash = np.zeros_like(wants_in)
    into = np.flatnonzero(wants_in[dst])
    clash[src[into[wants_in[src[into]]]]] = True
    joins = wants_in & ~clash
    status = status.copy()
    status[joins] = IN_SET
    near_new = np.zeros_like(joins)
    near_new[src[joins[dst]]] = True
    status[near_new & (status == UNDECIDED)] = OUT
    status[(action == EXCLUDE) & (status == UNDECIDED)] = OUT
    return status, int(joins.sum())
