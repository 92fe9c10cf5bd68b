"""numpy archives (``.npz``) holding ``edge_index`` and optionally ``num_nodes``, and the checks on
an ``edge_index`` array that the PyTorch reader shares."""

from __future__ import annotations

import math
import zipfile
import zlib
from pathlib import Path

import numpy as np

from graphtransfer.errors import GraphFileError
from graphtransfer.graphs.formats.common import build_graph, check_is_file, check_node_count, one_direction, write_atomically
from graphtransfer.graphs.graph import Graph

EXTENSIONS = (".npz",)
EXPECTED = "an .npz archive with an integer 'edge_index' array of shape (2, E); write one with graphtransfer.graphs.write_npz"


def read_npz(path: str | Path) -> Graph:
    """Read ``edge_index`` ``(2, E)`` and optional ``num_nodes``; each undirected edge may appear in
    one or both directions. Arrays are read straight from the zip members: nothing is unpickled,
    and a header that promises more data than the member holds is refused before allocating."""
    path = Path(path)
    check_is_file(path)
    try:
        with zipfile.ZipFile(path) as archive:
            names = {name.removesuffix(".npy"): name for name in archive.namelist()}
            if "edge_index" not in names:
                raise GraphFileError(path, f"has no 'edge_index' array (found {sorted(names)}); expected {EXPECTED}")
            edge_index = _read_member(path, archive, names["edge_index"])
            num_nodes = _read_member(path, archive, names["num_nodes"]) if "num_nodes" in names else None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, ValueError, TypeError, NotImplementedError) as err:
        raise GraphFileError(path, f"is not a readable .npz archive ({_reason(err)}); expected {EXPECTED}") from None
    return graph_from_arrays(path, edge_index, num_nodes)


def write_npz(graph: Graph, path: str | Path) -> None:
    """Write ``edge_index`` (one direction per edge) and ``num_nodes``, atomically."""

    def write(tmp: Path) -> None:
        with tmp.open("wb") as file:  # a file object: np.savez would add ".npz" to a bare name
            np.savez(file, edge_index=one_direction(graph), num_nodes=np.int64(graph.num_nodes))

    write_atomically(Path(path), write)


def graph_from_arrays(path: Path, edge_index: np.ndarray, num_nodes: np.ndarray | int | None) -> Graph:
    """Check an ``edge_index`` and optional ``num_nodes`` from an array container and build the
    graph; without ``num_nodes`` the largest id + 1 is used."""
    if edge_index.ndim == 2 and edge_index.shape[1] == 2 and edge_index.shape[0] != 2:
        raise GraphFileError(path, f"edge_index has shape {edge_index.shape}; expected (2, E): transpose it")
    if edge_index.ndim != 2 or edge_index.shape[0] != 2 or edge_index.dtype.kind not in "iu":
        raise GraphFileError(
            path, f"edge_index has shape {edge_index.shape} and dtype {edge_index.dtype}; expected integers of shape (2, E)"
        )
    edge_index = edge_index.astype(np.int64)
    if edge_index.size and edge_index.min() < 0:
        raise GraphFileError(path, f"edge_index holds the negative node id {edge_index.min()}; ids are 0..num_nodes-1")
    largest = int(edge_index.max()) if edge_index.size else -1
    if num_nodes is None:
        num_nodes = largest + 1
    else:
        num_nodes = _scalar_count(path, num_nodes)
        if largest >= num_nodes:
            raise GraphFileError(path, f"edge_index holds node {largest} but num_nodes is {num_nodes}; ids are 0..num_nodes-1")
    check_node_count(path, num_nodes)
    return build_graph(path, edge_index[0], edge_index[1], num_nodes, repeats_expected=True)


def _read_member(path: Path, archive: zipfile.ZipFile, name: str) -> np.ndarray:
    """One ``.npy`` member, its header checked against the bytes that follow it."""
    with archive.open(name) as member:
        version = np.lib.format.read_magic(member)
        if version not in ((1, 0), (2, 0)):
            raise ValueError(f".npy format version {version} of '{name}' is not 1.0 or 2.0")
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran_order, dtype = read_header(member)
        if dtype.hasobject:
            raise GraphFileError(path, f"'{name}' holds Python objects, which would need unpickling; expected {EXPECTED}")
        size = math.prod(shape) * dtype.itemsize
        data = member.read(size)
    if len(data) != size:
        raise GraphFileError(
            path, f"'{name}' declares shape {shape} ({size} bytes) but holds {len(data)}; the file is truncated or damaged"
        )
    return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran_order else "C")


def _scalar_count(path: Path, value: np.ndarray | int) -> int:
    array = np.asarray(value)
    if array.size != 1 or array.dtype.kind not in "iu":
        raise GraphFileError(path, f"num_nodes is {array.dtype} of shape {array.shape}; expected one integer")
    return int(array.reshape(()))


def _reason(err: Exception) -> str:
    return str(err).splitlines()[0][:120] if str(err) else type(err).__name__
