"""The undirected graph type every other module works with."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, replace

import numpy as np

from graphtransfer.errors import GraphInputError

# Edges are deduplicated through the keys ``lo * num_nodes + hi``, which must stay inside int64.
MAX_NODES = 2**31 - 1

CSR_KEPT_BELOW = 1 << 21
"""nodes below which a :class:`Graph` keeps its CSR once made (:meth:`Graph.csr`): a solve makes the input graph's in
the kernel before the first pass and reads it again in the nearly bipartite contest (at 250,000 nodes of degree 8 the
sort costs 0.035 s each time); larger graphs make it again rather than hold 8 bytes per edge for the whole solve"""
_CSR = "_csr"


@dataclass(frozen=True)
class Graph:
    """An undirected simple graph.

    Attributes:
        edge_index: ``(2, 2|E|)`` int64, both directions of every edge, no self-loops or
            duplicates, node ids in ``0..num_nodes-1``.
        num_nodes: number of nodes, isolated ones included.
        name: where the graph came from (file name or generator spec), for reports.
        node_ids: the graph's own id of each node, ``(num_nodes,)``, for answers a user can join
            back to their data: int64 where the file numbers its nodes (SNAP ids, GML ids, the
            1-based numbering of METIS, DIMACS and Matrix Market), a numpy string array where
            they are names (GraphML ids that are not all integers); ``None`` when the ids are
            the positions ``0..num_nodes-1`` (generated graphs, or files numbered that way).
        edge_weight: the file's own weight of every column of ``edge_index``, ``(2|E|,)``
            float64, the same for both directions; ``None`` when the file has none (tasks then
            hash weights from node ids, :mod:`graphtransfer.graphs.weights`).
        node_weight: the file's own weight of every node, ``(num_nodes,)`` float64, or ``None``.
    """

    edge_index: np.ndarray
    num_nodes: int
    name: str = ""
    node_ids: np.ndarray | None = None
    edge_weight: np.ndarray | None = None
    node_weight: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.node_ids is not None and self.node_ids.shape != (self.num_nodes,):
            raise ValueError(f"node_ids has shape {self.node_ids.shape}; expected ({self.num_nodes},), one id per node")
        if self.edge_weight is not None and self.edge_weight.shape != (self.edge_index.shape[1],):
            raise ValueError(f"edge_weight has shape {self.edge_weight.shape}; expected ({self.edge_index.shape[1]},), one per column")
        if self.node_weight is not None and self.node_weight.shape != (self.num_nodes,):
            raise ValueError(f"node_weight has shape {self.node_weight.shape}; expected ({self.num_nodes},), one per node")

    @property
    def num_edges(self) -> int:
        """Number of undirected edges."""
        return self.edge_index.shape[1] // 2

    def degrees(self) -> np.ndarray:
        """Node degrees, ``(num_nodes,)`` int64."""
        return np.bincount(self.edge_index[0], minlength=self.num_nodes)

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """Adjacency as ``(indptr (N+1,), indices (2|E|,))``, neighbours of ``v`` in
        ``indices[indptr[v]:indptr[v+1]]``; callers read it and never write to it. Edges already
        ordered by destination (the residual graphs of a solve) are read as they are, without a
        sort or a copy: both directions are stored, so the edges into a node name its neighbours
        too. A graph of fewer than :data:`CSR_KEPT_BELOW` nodes keeps its CSR once made."""
        kept = self.__dict__.get(_CSR)
        if kept is not None:
            return kept
        src, dst = self.edge_index
        indptr = np.zeros(self.num_nodes + 1, dtype=np.int64)
        made: tuple[np.ndarray, np.ndarray] | None
        if non_decreasing(dst):
            np.cumsum(np.bincount(dst, minlength=self.num_nodes), out=indptr[1:])
            made = indptr, src
        else:
            made = _grouped(src, dst, self.num_nodes) if src.size >= COUNTING_SORT_FROM else None
            if made is None:
                np.cumsum(self.degrees(), out=indptr[1:])
                made = indptr, dst[stable_order(src)]
        if self.num_nodes < CSR_KEPT_BELOW:
            object.__setattr__(self, _CSR, made)
        return made

    def forget_csr(self) -> None:
        """Drop the CSR kept by :meth:`csr` (a graph the solve replaced by its kernel or a renumbering
        reads it no more: at 10^6 nodes keeping it raised the peak of a predict by 200 MiB)."""
        self.__dict__.pop(_CSR, None)

    def __getstate__(self) -> dict:
        """Pickled (to a worker process) without the CSR it keeps: the worker makes it where it needs it."""
        return {name: value for name, value in self.__dict__.items() if name != _CSR}

    def ids(self) -> np.ndarray:
        """``(num_nodes,)``: the graph's own id of every node (``0..N-1`` when it has none)."""
        return np.arange(self.num_nodes) if self.node_ids is None else self.node_ids

    def original_id(self, node: int) -> int | str:
        """The graph's own id of the node at position ``node``."""
        return node if self.node_ids is None else self.node_ids[node].item()

    def describe_ids(self) -> str:
        """How the nodes are named, for ``graphs info``: ``0..4``, ``1..5 (1-based)``, ``10..100,
        not contiguous`` or ``names, e.g. 'a', 'b', 'c'``."""
        if self.node_ids is None:
            return f"0..{self.num_nodes - 1}"
        if self.node_ids.dtype.kind == "U":
            return "names, e.g. " + ", ".join(repr(str(name)) for name in self.node_ids[:3])
        low, high = int(self.node_ids.min()), int(self.node_ids.max())
        if high - low + 1 == self.num_nodes:
            return f"{low}..{high}" + (" (1-based)" if low == 1 else "")
        return f"{low}..{high}, not contiguous"

    def to_pyg(self):
        """The graph as a PyG ``Data``: ``edge_index`` (both directions), ``num_nodes``, and where the
        graph has them ``node_ids`` (a tensor for integer ids, the numpy array for names),
        ``edge_weight`` and ``node_weight``; :meth:`from_pyg` reads it back to an equal graph. torch
        and PyG are imported here, not with this module."""
        import torch
        from torch_geometric.data import Data

        data = Data(edge_index=torch.from_numpy(self.edge_index), num_nodes=self.num_nodes)
        if self.node_ids is not None:
            data.node_ids = torch.from_numpy(self.node_ids) if self.node_ids.dtype.kind in "iu" else self.node_ids
        for name in ("edge_weight", "node_weight"):
            if getattr(self, name) is not None:
                data[name] = torch.from_numpy(getattr(self, name))
        return data

    @classmethod
    def from_pyg(cls, data, name: str = "") -> Graph:
        """A PyG ``Data`` (or a ``Batch`` of one graph) as an undirected simple graph: its edges in
        either or both directions, self-loops and repeats dropped, with ``node_ids``, ``edge_weight``
        (a repeated edge keeps its first weight) and ``node_weight`` where the data has them. Node
        features are not read: a task builds its own from the graph."""
        import torch

        graphs = getattr(data, "num_graphs", 1)
        if graphs != 1:
            raise GraphInputError(f"a Batch of {graphs} graphs; Graph.from_pyg takes one: pass each of batch.to_data_list()")
        if data.edge_index is None or data.num_nodes is None:
            raise GraphInputError("the Data has no edge_index or no num_nodes (nor x to count them); give both")

        def array(value):
            return value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else np.asarray(value)

        src, dst = array(data.edge_index)
        weight = None if data.get("edge_weight") is None else array(data.edge_weight).reshape(-1)
        graph, _, _ = from_edges(src, dst, int(data.num_nodes), name, weight)
        ids = None if data.get("node_ids") is None else array(data.node_ids).reshape(-1)
        node_weight = None if data.get("node_weight") is None else array(data.node_weight).astype(np.float64).reshape(-1)
        return replace(with_ids(graph, ids), node_weight=node_weight)


def with_ids(graph: Graph, ids: np.ndarray | None) -> Graph:
    """``graph`` with ``ids`` ``(num_nodes,)`` as its own node ids; ids that are exactly the
    positions ``0..N-1`` are dropped (``None``), so that only graphs with ids of their own carry
    an array."""
    if ids is not None and ids.dtype.kind in "iu" and ids.size and ids[0] == 0 and ids[-1] == ids.size - 1:
        if np.array_equal(ids, np.arange(ids.size)):
            ids = None
    return replace(graph, node_ids=ids)


_INTEGER = re.compile(r"0|-?[1-9][0-9]{0,17}")


def ids_from_names(names: list[str]) -> np.ndarray:
    """Node names read from a file as ids: int64 when every name is an integer written plainly
    (``"7"``, not ``"07"`` or ``"+7"``, which would not read back the same), else the names as
    a numpy string array."""
    if all(_INTEGER.fullmatch(name) for name in names):
        return np.array([int(name) for name in names], dtype=np.int64)
    return np.array(names, dtype=str)


def induced_subgraph(graph: Graph, keep: np.ndarray) -> tuple[Graph, np.ndarray]:
    """The subgraph on the nodes in ``keep`` (``(num_nodes,)`` bool), renumbered in order.

    Returns:
        The subgraph, and ``(k,)`` int64, the position in ``graph`` of each of its nodes.
    """
    nodes = np.flatnonzero(keep)
    new_id = np.full(graph.num_nodes, -1, dtype=np.int64)
    new_id[nodes] = np.arange(nodes.size)
    src, dst = graph.edge_index
    inside = keep[src] & keep[dst]
    every = bool(inside.all())  # a residual graph's observed edges often are all inside: no copy of them
    edges = graph.edge_index if every else np.compress(inside, graph.edge_index, axis=1)  # 5x faster than [:, mask] on 2 rows
    ids = None if graph.node_ids is None else graph.node_ids[nodes]
    edge_weight = graph.edge_weight if graph.edge_weight is None or every else graph.edge_weight[inside]
    node_weight = None if graph.node_weight is None else graph.node_weight[nodes]
    sub = Graph(new_id[edges], int(nodes.size), graph.name, ids, edge_weight, node_weight)
    return sub, nodes


def edge_lookup(graph: Graph, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """The column of ``graph.edge_index`` of each edge ``(src[i], dst[i])``, -1 where there is none."""
    keys = graph.edge_index[0] * graph.num_nodes + graph.edge_index[1]
    wanted = np.asarray(src, dtype=np.int64) * graph.num_nodes + np.asarray(dst, dtype=np.int64)
    if keys.size == 0:
        return np.full(wanted.size, -1, dtype=np.int64)
    order = np.argsort(keys)
    found = order[np.minimum(np.searchsorted(keys, wanted, sorter=order), keys.size - 1)]
    return np.where(keys[found] == wanted, found, -1)


def from_edges(
    src: np.ndarray, dst: np.ndarray, num_nodes: int, name: str = "", weights: np.ndarray | None = None
) -> tuple[Graph, int, int]:
    """Build a :class:`Graph` from undirected edge endpoints, in any order and with repeats,
    and optionally their ``weights`` ``(len(src),)`` (a repeated edge keeps its first weight).

    Returns:
        The graph, the number of self-loops dropped and the number of duplicate edges dropped.
    """
    if not 0 <= num_nodes <= MAX_NODES:
        raise GraphInputError(f"{name or 'graph'}: {num_nodes} nodes; graphtransfer handles 0..{MAX_NODES:,} nodes")
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= num_nodes):
        raise GraphInputError(f"{name or 'graph'}: edge endpoint outside 0..{num_nodes - 1}")
    loops = src == dst
    if loops.any():
        src, dst = src[~loops], dst[~loops]
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    keys = lo * num_nodes + hi
    edge_weight = None
    if weights is None and increasing(keys):  # one direction, sorted, no repeats (write_npz's): no sort to pay
        duplicates = 0
    else:
        if weights is None:
            keys = sorted_unique(keys)
        else:
            keys, first = np.unique(keys, return_index=True)  # the first of repeats, for its weight
            kept = np.asarray(weights, dtype=np.float64)[~loops][first]
            edge_weight = np.concatenate([kept, kept])
        duplicates = lo.size - keys.size
        lo, hi = keys // num_nodes, keys % num_nodes
    edge_index = np.stack([np.concatenate([lo, hi]), np.concatenate([hi, lo])])
    return Graph(edge_index, int(num_nodes), name, edge_weight=edge_weight), int(loops.sum()), int(duplicates)


def increasing(values: np.ndarray) -> bool:
    """Whether ``values`` are strictly increasing (sorted, no repeats): one pass, no copy of a sort."""
    return bool(np.all(values[1:] > values[:-1]))


def non_decreasing(values: np.ndarray) -> bool:
    """Whether ``values`` are sorted (repeats allowed): one pass, no sort."""
    return sorted_prefix(values) == values.size


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """Distinct values in increasing order; a sort is several times faster here than
    ``np.unique``, which hashes large integer arrays in numpy 2."""
    values = np.sort(values)
    keep = np.empty(values.size, dtype=bool)
    keep[:1] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


TORCH_SORT_FROM = 1 << 21
"""values from which :func:`stable_order` takes torch's stable sort, where torch is loaded and the counting sort cannot
serve (:func:`_counting_order`)"""
COUNTING_SORT_FROM, COUNTING_SORT_UP_TO = 1 << 12, 1 << 24
"""the counts of values :func:`stable_order` takes the counting sort (:func:`_counting_order`) for where it can: above
16M its scattered writes miss the cache more than torch's radix passes (on one core, 16M ids below 2M: 0.80 against
0.83 s; 80M below 10^7: 5.8 against 4.5 s). A CSR adjacency or edges by destination grouped whole (:func:`_grouped`)
take it from the lower count up, at any size: it saves them the gather of a stable order (80M edges of 10^7 nodes:
5.1-5.7 s of CPU against 6.4-7.2 s for torch's sort on two threads and the gather)"""
COUNTING_SORT_RANGE = 4
"""the counting sort serves values below this many times their count (node ids of a graph's edges, nearly always): its
counts take one slot per possible value"""


SORTED_PREFIX_SHARE = 0.85
"""values whose first this share are in order already are ordered by :func:`stable_order` as a merge: the rest sorted,
then each placed after the equal values of that prefix. The destinations of the kernels of three residual graphs of an
ER graph of 10^6 nodes, merging was faster until about three quarters remained"""


def stable_order(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` for node ids (integers in ``0..MAX_NODES``).

    Values in order are their own order; values in order for their first :data:`SORTED_PREFIX_SHARE` and more (a
    kernel's edges: a residual graph's, ordered by destination, then the few a fold added) are a merge of that prefix
    with the rest sorted; any others are sorted whole (:func:`_sorted_order`).
    """
    prefix = sorted_prefix(values)
    if prefix == values.size:
        return np.arange(values.size)
    if prefix < SORTED_PREFIX_SHARE * values.size:
        return _sorted_order(values)
    rest = prefix + _sorted_order(values[prefix:])
    at = np.searchsorted(values[:prefix], values[rest], side="right") + np.arange(rest.size)  # after the equal ones: stable
    order = np.empty(values.size, dtype=np.int64)
    order[at] = rest
    kept = np.ones(values.size, dtype=bool)
    kept[at] = False
    order[kept] = np.arange(prefix)
    return order


def sorted_prefix(values: np.ndarray) -> int:
    """How many of ``values`` from the first on are in order (non-decreasing): one pass."""
    if values.size < 2:
        return values.size
    descents = values[1:] < values[:-1]
    first = int(descents.argmax())
    return first + 1 if descents[first] else values.size


def _sorted_order(values: np.ndarray) -> np.ndarray:
    """:func:`stable_order` by a sort of them all: from :data:`COUNTING_SORT_FROM` values a counting sort where it
    serves (:func:`_counting_order`), else as follows.

    From :data:`TORCH_SORT_FROM` values, where torch is already loaded (a solve, training), torch's
    stable sort of the ids as int32, on torch's threads (the process's choice of cores: see
    :mod:`graphtransfer.process`): for the 8M edges of a 10^6-node graph 0.20 s on one thread and
    0.13 s on two. Elsewhere a radix sort of 16-bit digits: numpy's stable argsort of 16-bit
    integers is a radix sort, one pass below 2^16 and two (low digit, then high) above, 0.29 s at 8M
    on one thread and 0.7 against torch's 2.9 ms at 160k. Both replace a sort of int64 keys
    ``value * n + position`` (0.54 s at 8M).

    Shapes:
        values: ``(n,)`` integers; returns ``(n,)`` int64.
    """
    order = _counting_order(values)
    if order is not None:
        return order
    torch = sys.modules.get("torch")
    if torch is not None and values.size >= TORCH_SORT_FROM:
        return torch.sort(torch.from_numpy(values.astype(np.int32)), stable=True).indices.numpy()
    low = np.argsort(values.astype(np.uint16), kind="stable")  # the low 16 bits: the cast wraps
    if values.size == 0 or values.max() < 1 << 16:
        return low
    high = (values >> 16).astype(np.uint16)[low]  # gathered as 16-bit digits: a quarter of the bytes
    return low[np.argsort(high, kind="stable")]


def _counting_order(values: np.ndarray) -> np.ndarray | None:
    """:func:`stable_order` by a counting sort (:func:`_grouped`: the positions grouped by value), int64; ``None``
    where it cannot serve.

    On one core, 8M random node ids below 10^6: 0.19-0.25 s, against 0.30 s for torch's stable sort and 0.60 s for
    the radix sort of :func:`_sorted_order`; 1.4M below 250,000: 23-25 against 31-33 and 29-32 ms
    (``bench/sort_speed.py``). The sorts of a solve's kernels and CSRs then take one core, where torch's took both.

    Shapes:
        values: ``(n,)`` integers ``>= 0``; returns ``(n,)`` int64.
    """
    if not COUNTING_SORT_FROM <= values.size <= COUNTING_SORT_UP_TO:
        return None
    if int(values.min()) < 0:
        return None
    grouped = _grouped(values, np.arange(values.size), int(values.max()) + 1)
    return None if grouped is None else grouped[1]


def _grouped(keys: np.ndarray, values: np.ndarray, num_keys: int, out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """``values`` grouped by their ``keys`` ``0..num_keys-1``, each group in the values' order, by a counting sort:
    the groups' offsets ``(num_keys + 1,)`` and the values so ordered (written into ``out`` where given), all int64;
    ``None`` where it cannot serve: keys of :data:`COUNTING_SORT_RANGE` times their count or more (its counts take a
    slot per key), or a scipy without the routine it runs. The routine is scipy's conversion of a sparse matrix from
    coordinates to compressed rows (``coo_tocsr``, C++, of a private module of scipy's: the other sorts take over
    where it is gone): a count per row, then one pass that places each entry after the earlier ones of its row, with
    the keys as rows and the values as columns. A CSR adjacency (:meth:`Graph.csr`) or edges by destination
    (:func:`edges_by_destination`) come out of it whole, without the gather of a stable order.

    Shapes:
        keys, values: ``(n,)`` integers ``>= 0``; out: ``(n,)`` int64.
    """
    try:
        from scipy.sparse._sparsetools import coo_tocsr
    except ImportError:  # pragma: no cover - a scipy without the routine
        return None
    count = keys.size
    if num_keys >= COUNTING_SORT_RANGE * max(count, 1):
        return None
    if count and (int(keys.min()) < 0 or int(keys.max()) >= num_keys):  # the routine writes where the keys say: no check
        raise ValueError(f"keys outside 0..{num_keys - 1}")
    offsets = np.empty(num_keys + 1, dtype=np.int64)
    ordered = np.empty(count, dtype=np.int64) if out is None else out
    unused = np.zeros(count, dtype=np.int8)  # the matrix's data, which nothing reads
    keys, values = keys.astype(np.int64, copy=False), values.astype(np.int64, copy=False)
    coo_tocsr(num_keys, num_keys, count, keys, values, unused, offsets, ordered, unused.copy())
    return offsets, ordered


def edges_by_destination(edge_index: np.ndarray, num_nodes: int) -> np.ndarray:
    """``edge_index`` ``(2, E)`` ordered stably by destination (its second row), C-contiguous: the edges themselves
    where they are in that order, a merge where they mostly are (:func:`stable_order`), else grouped by a counting
    sort where it serves (:func:`_grouped`: the sources grouped by destination, the destinations counted out), or
    gathered in a stable order."""
    src, dst = edge_index
    prefix = sorted_prefix(dst)
    if prefix == dst.size:
        return edge_index
    if prefix < SORTED_PREFIX_SHARE * dst.size and dst.size >= COUNTING_SORT_FROM:
        edges = np.empty((2, dst.size), dtype=np.int64)
        grouped = _grouped(dst, src, num_nodes, edges[0])
        if grouped is not None:
            edges[1] = np.repeat(np.arange(num_nodes), np.diff(grouped[0]))
            return edges
    # np.take writes the rows C-contiguous at once: indexing [:, order] gave a Fortran-ordered copy that needed a second
    # one (2M edges: 0.19 s of a 250k solve's first pass, against 0.06 s)
    return np.take(edge_index, stable_order(dst), axis=1)
