"""numpy archives (``.npz``) holding ``edge_index`` and optionally ``num_nodes``, ``node_ids``,
``edge_weight`` and ``node_weight``, and the checks on those arrays that the PyTorch reader shares."""

from __future__ import annotations

import math
import zipfile
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from graphtransfer.errors import GraphFileError
from graphtransfer.graphs.formats.common import (
    build_graph,
    check_is_file,
    check_node_count,
    check_weight_values,
    one_direction,
    write_atomically,
)
from graphtransfer.graphs.graph import Graph, sorted_unique

EXTENSIONS = (".npz",)
EXPECTED = "an .npz archive with an integer 'edge_index' array of shape (2, E); write one with graphtransfer.graphs.write_npz"


def read_npz(path: str | Path) -> Graph:
    """Read ``edge_index`` ``(2, E)``, optional ``num_nodes``, optional ``node_ids`` ``(N,)``
    (integers or strings, the graph's own ids), optional ``edge_weight`` ``(E,)`` (one per column
    of ``edge_index``) and ``node_weight`` ``(N,)``; each undirected edge may appear in one or
    both directions. Arrays are read straight from the zip members: nothing is unpickled,
    and a header that promises more data than the member holds is refused before allocating."""
    path = Path(path)
    check_is_file(path)
    try:
        with zipfile.ZipFile(path) as archive:
            names = {name.removesuffix(".npy"): name for name in archive.namelist()}
            if "edge_index" not in names:
                raise GraphFileError(path, f"has no 'edge_index' array (found {sorted(names)}); expected {EXPECTED}")
            edge_index = read_member(path, archive, names["edge_index"])
            num_nodes = read_member(path, archive, names["num_nodes"]) if "num_nodes" in names else None
            node_ids = read_member(path, archive, names["node_ids"]) if "node_ids" in names else None
            weights = {key: read_member(path, archive, names[key]) for key in ("edge_weight", "node_weight") if key in names}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, ValueError, TypeError, NotImplementedError) as err:
        raise GraphFileError(path, f"is not a readable .npz archive ({_reason(err)}); expected {EXPECTED}") from None
    graph = graph_from_arrays(path, edge_index, num_nodes, node_ids, weights.get("edge_weight"))
    if "node_weight" in weights:
        graph = replace(graph, node_weight=_check_weights(path, weights["node_weight"], graph.num_nodes, "node_weight", "N"))
    return graph


def write_npz(graph: Graph, path: str | Path) -> None:
    """Write ``edge_index`` (one direction per edge), ``num_nodes`` and, when the graph has them,
    ``node_ids``, ``edge_weight`` and ``node_weight``, atomically."""
    ids: dict[str, Any] = {} if graph.node_ids is None else {"node_ids": graph.node_ids}
    if graph.edge_weight is not None:
        ids["edge_weight"] = graph.edge_weight[: graph.num_edges]  # the columns of one_direction(graph)
    if graph.node_weight is not None:
        ids["node_weight"] = graph.node_weight

    def write(tmp: Path) -> None:
        with tmp.open("wb") as file:  # a file object: np.savez would add ".npz" to a bare name
            np.savez(file, edge_index=one_direction(graph), num_nodes=np.int64(graph.num_nodes), **ids)

    write_atomically(Path(path), write)


def graph_from_arrays(
    path: Path,
    edge_index: np.ndarray,
    num_nodes: np.ndarray | int | None,
    node_ids: np.ndarray | None = None,
    edge_weight: np.ndarray | None = None,
) -> Graph:
    """Check an ``edge_index``, optional ``num_nodes``, ``node_ids`` and ``edge_weight`` from an
    array container and build the graph; without ``num_nodes`` the largest id + 1 is used."""
    if edge_index.ndim == 2 and edge_index.shape[1] == 2 and edge_index.shape[0] != 2:
        raise GraphFileError(path, f"edge_index has shape {edge_index.shape}; expected (2, E): transpose it")
    if edge_index.ndim != 2 or edge_index.shape[0] != 2 or edge_index.dtype.kind not in "iu":
        raise GraphFileError(
            path, f"edge_index has shape {edge_index.shape} and dtype {edge_index.dtype}; expected integers of shape (2, E)"
        )
    largest = int(edge_index.max()) if edge_index.size else -1  # a Python int: exact for uint64, which int64 wraps to negatives
    if largest > np.iinfo(np.int64).max:
        raise GraphFileError(path, f"edge_index holds node {largest}, beyond any node count; ids are 0..num_nodes-1")
    edge_index = edge_index.astype(np.int64)
    if edge_index.size and edge_index.min() < 0:
        raise GraphFileError(path, f"edge_index holds the negative node id {edge_index.min()}; ids are 0..num_nodes-1")
    if num_nodes is None:
        num_nodes = largest + 1
    else:
        num_nodes = _scalar_count(path, num_nodes)
        if largest >= num_nodes:
            raise GraphFileError(path, f"edge_index holds node {largest} but num_nodes is {num_nodes}; ids are 0..num_nodes-1")
    check_node_count(path, num_nodes)
    if node_ids is not None:
        node_ids = _check_node_ids(path, node_ids, num_nodes)
    if edge_weight is not None:
        edge_weight = _check_weights(path, edge_weight, edge_index.shape[1], "edge_weight", "E")
    return build_graph(path, edge_index[0], edge_index[1], num_nodes, repeats_expected=True, node_ids=node_ids, edge_weight=edge_weight)


def _check_weights(path: Path, weights: np.ndarray, count: int, name: str, letter: str) -> np.ndarray:
    """``weights`` as float64, one per edge column or node."""
    if weights.shape != (count,) or weights.dtype.kind not in "iuf":
        raise GraphFileError(path, f"{name} has shape {weights.shape} and dtype {weights.dtype}; expected ({letter},) = ({count},) numbers")
    check_weight_values(path, weights, name.removesuffix("_weight"))
    return weights.astype(np.float64)


def _check_node_ids(path: Path, node_ids: np.ndarray, num_nodes: int) -> np.ndarray:
    """``node_ids`` as int64 or strings (unsigned ids above int64's range), one distinct id per node."""
    if node_ids.shape != (num_nodes,) or node_ids.dtype.kind not in "iuU":
        raise GraphFileError(
            path, f"node_ids has shape {node_ids.shape} and dtype {node_ids.dtype}; expected ({num_nodes},) integers or strings"
        )
    if node_ids.dtype.kind == "u" and node_ids.size and int(node_ids.max()) > np.iinfo(np.int64).max:
        node_ids = node_ids.astype(str)  # int64 would wrap them to negatives: kept exactly as names, as GraphML keeps such ids
    node_ids = node_ids.astype(np.int64) if node_ids.dtype.kind in "iu" else node_ids
    distinct = sorted_unique(node_ids).size if node_ids.dtype.kind == "i" else np.unique(node_ids).size
    if distinct != num_nodes:
        raise GraphFileError(path, f"node_ids holds {num_nodes - distinct} repeated id(s); every node needs its own id")
    return node_ids


def read_member(path: Path, archive: zipfile.ZipFile, name: str, expected: str = EXPECTED) -> np.ndarray:
    """One ``.npy`` member, its header checked against the bytes that follow it; ``expected`` says
    what the file should hold, for the message that refuses a member of Python objects."""
    with archive.open(name) as member:
        shape, fortran_order, dtype = _header(path, member, name, expected)
        size = math.prod(shape) * dtype.itemsize
        data = member.read(size)
    if len(data) != size:
        raise GraphFileError(
            path, f"'{name}' declares shape {shape} ({size} bytes) but holds {len(data)}; the file is truncated or damaged"
        )
    return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran_order else "C")


def read_member_header(path: Path, archive: zipfile.ZipFile, name: str, expected: str = EXPECTED) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype a ``.npy`` member declares, read from its header alone (no data, nothing
    unpickled); a member of Python objects is refused as :func:`read_member` refuses it."""
    with archive.open(name) as member:
        shape, _, dtype = _header(path, member, name, expected)
    return shape, dtype


def _header(path: Path, member, name: str, expected: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    version = np.lib.format.read_magic(member)
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f".npy format version {version} of '{name}' is not 1.0 or 2.0")
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran_order, dtype = read_header(member)
    if dtype.hasobject:
        raise GraphFileError(path, f"'{name}' holds Python objects, which would need unpickling; expected {expected}")
    return shape, fortran_order, dtype


def _scalar_count(path: Path, value: np.ndarray | int) -> int:
    array = np.asarray(value)
    if array.size != 1 or array.dtype.kind not in "iu":
        raise GraphFileError(path, f"num_nodes is {array.dtype} of shape {array.shape}; expected one integer")
    return int(array.reshape(()))


def _reason(err: Exception) -> str:
    return str(err).splitlines()[0][:120] if str(err) else type(err).__name__
