"""One graph split into K parts, each with its halo: what one machine of a cluster holds of it.

A part owns some nodes and holds every edge into them; the sources of those edges that other
parts own are its halo. One layer of message passing for the owned nodes reads their own rows
and the halo's rows of the previous layer, nothing else, so a forward runs part by part when,
before each layer, every part receives its halo's rows from their owners
(:mod:`graphtransfer.solve.partitioned`). A part's *boundary* is what it sends: its owned nodes
that lie in some other part's halo.

The parts are contiguous ranges, of near-equal size, of the reverse Cuthill–McKee order
(:func:`graphtransfer.graphs.ordering.locality_order`), a streaming partition: on meshes and
geometric graphs a range of that order is a band whose boundary is a thin layer, on expanders
(Erdős–Rényi, scale-free) no partition has a small boundary and most of a part's neighbours are
halo whatever the partitioner. METIS cuts fewer edges, but its bindings (``pymetis``) are not
among this package's dependencies and, like the order used here, need the whole graph in one
process; :func:`halo_share` measures what a partition costs. A split graph can be written to
disk, one file per part (:mod:`graphtransfer.graphs.partition_files`), for workers to read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from graphtransfer.graphs.graph import Graph, sorted_unique
from graphtransfer.graphs.ordering import locality_order


@dataclass(frozen=True)
class Part:
    """The nodes one part owns and the edges into them, numbered locally: owned nodes
    ``0..n-1`` (ascending global id), then halo nodes ``n..n+h-1`` (ascending global id).

    Attributes:
        index: the part's number, ``0..K-1``.
        nodes: ``(n,)`` int64, the global ids it owns, ascending.
        halo: ``(h,)`` int64, the global ids of the in-neighbours other parts own, ascending.
        halo_owner: ``(h,)`` int64, the part that owns each halo node.
        halo_position: ``(h,)`` int64, each halo node's row in its owner's :attr:`boundary`.
        boundary: ``(s,)`` int64, the local ids of owned nodes in some other part's halo, ascending.
        edge_index: ``(2, E_p)`` int64, the edges into owned nodes in local ids, sources in
            ``0..n+h-1``, destinations in ``0..n-1``, ordered by destination.
        ids: ``(n,)``, the graph's own id of each owned node (int64 or strings, as
            :attr:`Graph.node_ids`); ``None`` where the ids are the positions :attr:`nodes`.
    """

    index: int
    nodes: np.ndarray
    halo: np.ndarray
    halo_owner: np.ndarray
    halo_position: np.ndarray
    boundary: np.ndarray
    edge_index: np.ndarray
    ids: np.ndarray | None = None

    @property
    def num_owned(self) -> int:
        return int(self.nodes.size)

    @property
    def num_local(self) -> int:
        """Owned and halo nodes: the rows a layer of this part reads."""
        return int(self.nodes.size + self.halo.size)

    @property
    def num_halo(self) -> int:
        return int(self.halo.size)

    def senders(self) -> list[int]:
        """The parts this part receives halo rows from, ascending."""
        return np.unique(self.halo_owner).tolist()

    def own_ids(self) -> np.ndarray:
        """``(n,)``: the graph's own id of each owned node (its position where the graph has none)."""
        return self.nodes if self.ids is None else self.ids

    def outline(self) -> PartMap:
        """What a driver keeps of this part once a worker holds it."""
        return PartMap(self.index, self.num_owned, self.num_halo, self.senders())


@dataclass(frozen=True)
class PartMap:
    """A part without its nodes and edges: its entry in the partition map, all a driver keeps.

    Attributes:
        index: the part's number, ``0..K-1``.
        num_owned: how many nodes it owns.
        num_halo: how many other parts' nodes it reads.
        senders: the parts it receives halo rows from, ascending.
    """

    index: int
    num_owned: int
    num_halo: int
    senders: list[int]


def check_part_count(parts: object, num_nodes: int, name: str = "parts") -> int:
    """``parts`` as a count of parts, a whole number from 1 to ``num_nodes``; else a
    ``ValueError`` that names it ``name`` (an option's name, say)."""
    if isinstance(parts, bool) or not isinstance(parts, int | np.integer) or not 1 <= parts <= max(num_nodes, 1):
        raise ValueError(f"{name} {parts!r}: expected a whole number of parts from 1 to the graph's {num_nodes} nodes")
    return int(parts)


def assign_parts(graph: Graph, parts: int) -> np.ndarray:
    """The part of every node: ``parts`` contiguous ranges, of near-equal size, of the graph's
    reverse Cuthill–McKee order (see the module).

    Shapes:
        returns ``(num_nodes,)`` int64 in ``0..parts-1``.
    """
    parts = check_part_count(parts, graph.num_nodes)
    order = locality_order(graph.edge_index, graph.num_nodes)
    assignment = np.empty(graph.num_nodes, dtype=np.int64)
    assignment[order] = np.arange(graph.num_nodes) * parts // max(graph.num_nodes, 1)
    return assignment


def split(graph: Graph, assignment: np.ndarray) -> list[Part]:
    """The parts of ``graph`` that ``assignment`` (the part of every node) describes, each with
    its halo, boundary and local edges (:class:`Part`).

    Shapes:
        assignment: ``(num_nodes,)`` integers ``0..K-1``, every part non-empty.
    """
    return list(iter_parts(graph, assignment))


def iter_parts(graph: Graph, assignment: np.ndarray) -> Iterator[Part]:
    """:func:`split`'s parts one at a time, for a writer that keeps one part in memory beside the graph."""
    assignment = np.asarray(assignment, dtype=np.int64)
    if assignment.shape != (graph.num_nodes,):
        raise ValueError(f"assignment has shape {assignment.shape}; expected ({graph.num_nodes},), one part per node")
    if assignment.size and (assignment.min() < 0 or (np.bincount(assignment) == 0).any()):
        raise ValueError("assignment must number the parts 0..K-1 with every part holding at least one node")
    count = int(assignment.max()) + 1 if assignment.size else 0
    source, target = graph.edge_index
    cut = assignment[source] != assignment[target]
    sent = np.zeros(graph.num_nodes, dtype=bool)
    sent[source[cut]] = True  # a source of an edge into another part is in that part's halo
    boundaries = [np.flatnonzero(sent & (assignment == index)) for index in range(count)]  # global ids, ascending
    by_target = np.argsort(assignment[target], kind="stable")
    starts = np.concatenate([[0], np.cumsum(np.bincount(assignment[target], minlength=count))])
    local = np.empty(graph.num_nodes, dtype=np.int64)  # each part's local ids, written over by the next part
    for index in range(count):
        part = _part(index, assignment, source, target, by_target[starts[index] : starts[index + 1]], boundaries, local)
        yield part if graph.node_ids is None else replace(part, ids=graph.node_ids[part.nodes])


def _part(
    index: int,
    assignment: np.ndarray,
    source: np.ndarray,
    target: np.ndarray,
    edges: np.ndarray,
    boundaries: list[np.ndarray],
    local: np.ndarray,
) -> Part:
    """Part ``index`` from the positions ``edges`` of the edges into its nodes; ``local`` ``(N,)``
    is scratch space for the local id of every node the part reads."""
    nodes = np.flatnonzero(assignment == index)
    source, target = source[edges], target[edges]
    halo = sorted_unique(source[assignment[source] != index])
    halo_owner = assignment[halo]
    halo_position = np.empty(halo.size, dtype=np.int64)
    for owner in np.unique(halo_owner):
        mine = halo_owner == owner
        halo_position[mine] = np.searchsorted(boundaries[owner], halo[mine])
    local[nodes], local[halo] = np.arange(nodes.size), np.arange(nodes.size, nodes.size + halo.size)  # owned first, then halo
    local_target, local_source = local[target], local[source]  # a gather: searchsorted took half the split's time
    by_destination = np.argsort(local_target, kind="stable")
    edge_index = np.stack([local_source[by_destination], local_target[by_destination]])
    boundary = np.searchsorted(nodes, boundaries[index])
    return Part(index, nodes, halo, halo_owner, halo_position, boundary, edge_index)


def halo_share(parts: list[Part] | list[PartMap]) -> float:
    """The parts' halo nodes together as a share of the graph's nodes: how much more than the
    graph itself the parts hold (0 for one part, up to ``K - 1`` where every part reads every node)."""
    owned = sum(part.num_owned for part in parts)
    return sum(part.num_halo for part in parts) / max(owned, 1)
