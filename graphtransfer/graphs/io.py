"""Reading and writing graph files: SNAP edge lists, ``.npz`` and generator specs (``.json``).

Edge lists are parsed with numpy in bulk (about 0.2 s for 10^6 edges); nothing here unpickles.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
import zipfile
from pathlib import Path

import numpy as np

from graphtransfer.errors import GraphInputError
from graphtransfer.graphs.generators import generate
from graphtransfer.graphs.graph import Graph, from_edges, sorted_unique

EDGE_LIST_SUFFIXES = (".txt", ".edges", ".el", ".tsv", ".csv")
GRAPH_SUFFIXES = (*EDGE_LIST_SUFFIXES, ".npz", ".json")
_COMMENT = re.compile(rb"(?m)^[ \t]*[#%].*$")


def read_graph(path: str | Path) -> Graph:
    """Read one graph file, choosing the reader by extension (edge list for anything else)."""
    path = Path(path)
    if path.is_dir():
        raise GraphInputError(f"{path}: is a folder, expected a graph file; use read_graphs for a folder")
    if not path.is_file():
        raise GraphInputError(f"{path}: no such file; give a path to a graph file or a sample set name")
    if path.suffix == ".npz":
        return read_npz(path)
    if path.suffix == ".json":
        return read_spec(path)
    return read_edge_list(path)


def read_edge_list(path: str | Path) -> Graph:
    """Read a SNAP-style edge list: one ``u v`` pair per line (extra columns such as weights are
    ignored), any whitespace or commas, ``#`` or ``%`` comment lines, arbitrary non-negative
    integer ids remapped to ``0..N-1`` in increasing order. Self-loops and repeated edges are
    dropped with a warning that counts them.
    """
    path = Path(path)
    body = path.read_bytes().replace(b",", b" ")
    if b"#" in body or b"%" in body:
        body = _COMMENT.sub(b"", body)
    first = next((line.split() for line in body[:65536].splitlines() if line.strip()), [])
    if len(first) < 2:
        raise GraphInputError(f"{path}: no edge lines found; expected lines of 'u v' node id pairs")
    columns = len(first)
    ids = _parse_numbers(path, body, columns).reshape(-1, columns)[:, :2].ravel()
    if ids.min() < 0:
        raise GraphInputError(f"{path}: negative node id {ids.min()}; ids must be non-negative integers")
    num_nodes, remapped = _compact_ids(ids)
    graph, loops, duplicates = from_edges(remapped[0::2], remapped[1::2], num_nodes, path.name)
    if loops or duplicates:
        warnings.warn(f"{path}: dropped {loops} self-loop(s) and {duplicates} duplicate edge(s)", stacklevel=2)
    return graph


def _parse_numbers(path: Path, body: bytes, columns: int) -> np.ndarray:
    """All numbers of the body; node ids must be integers, a weight column may hold floats."""
    try:
        numbers = np.fromstring(body, dtype=np.int64 if columns == 2 else np.float64, sep=" ")
    except ValueError:
        raise GraphInputError(f"{path}: {_first_bad_token(body)!r} is not an integer node id; expected lines 'u v'") from None
    if numbers.size % columns:
        raise GraphInputError(f"{path}: {numbers.size} numbers do not split into lines of {columns}; every line needs the same columns")
    if columns > 2:
        ids = numbers.reshape(-1, columns)[:, :2]
        if not np.array_equal(ids, np.round(ids)):
            raise GraphInputError(f"{path}: a node id in the first two columns is not an integer; expected lines 'u v [weight]'")
        numbers = numbers.reshape(-1, columns).astype(np.int64)
    return numbers


def _compact_ids(ids: np.ndarray) -> tuple[int, np.ndarray]:
    """Map the distinct ids to ``0..N-1`` keeping their order; a lookup table when ids are
    dense (much faster than sorting), ``np.unique`` otherwise."""
    top = int(ids.max())
    if top < 4 * ids.size:
        present = np.zeros(top + 1, dtype=bool)
        present[ids] = True
        new_id = np.cumsum(present) - 1
        return int(present.sum()), new_id[ids]
    unique = sorted_unique(ids)
    return unique.size, np.searchsorted(unique, ids)


def _first_bad_token(body: bytes) -> str:
    token = next((t for t in body.split() if not t.lstrip(b"-").isdigit()), b"?")
    return token[:30].decode(errors="replace")


def read_npz(path: str | Path) -> Graph:
    """Read ``.npz`` with ``edge_index`` ``(2, E)`` and optional ``num_nodes`` (pickles refused).

    Each undirected edge may appear in one or both directions.
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            if "edge_index" not in archive:
                raise GraphInputError(f"{path}: no 'edge_index' array; found {sorted(archive.files)}")
            edge_index = archive["edge_index"]
            num_nodes = int(archive["num_nodes"]) if "num_nodes" in archive else None
    except (zipfile.BadZipFile, ValueError, OSError) as err:
        raise GraphInputError(f"{path}: not a readable .npz graph ({err}); write one with graphtransfer.graphs.write_npz") from None
    if edge_index.ndim != 2 or edge_index.shape[0] != 2 or not np.issubdtype(edge_index.dtype, np.integer):
        raise GraphInputError(
            f"{path}: edge_index has shape {edge_index.shape} and dtype {edge_index.dtype}; expected integers of shape (2, E)"
        )
    if num_nodes is None:
        num_nodes = int(edge_index.max()) + 1 if edge_index.size else 0
    graph, _, _ = from_edges(edge_index[0], edge_index[1], num_nodes, path.name)
    return graph


def read_spec(path: str | Path) -> Graph:
    """Materialise a generator spec such as ``{"generator": "barabasi_albert", "num_nodes":
    250000, "m": 4, "seed": 7}``; the result is cached as ``.npz`` in ``$GRAPHTRANSFER_CACHE`` (default
    ``~/.cache/graphtransfer``) so later reads take a fraction of a second."""
    path = Path(path)
    try:
        spec = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise GraphInputError(f"{path}: not a JSON generator spec ({err})") from None
    if not isinstance(spec, dict):
        raise GraphInputError(f"{path}: expected a JSON object with a 'generator' key")
    cache = _cache_dir() / f"{path.stem}-{_spec_key(spec)}.npz"
    if cache.is_file():
        graph = read_npz(cache)
    else:
        graph = generate(spec)
        write_npz(graph, cache)
    return Graph(graph.edge_index, graph.num_nodes, path.name)


def write_npz(graph: Graph, path: str | Path) -> None:
    """Write ``edge_index`` (one direction per edge) and ``num_nodes``, atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    half = graph.edge_index[:, : graph.num_edges]
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, edge_index=half, num_nodes=np.int64(graph.num_nodes))
    tmp.replace(path)


def write_edge_list(graph: Graph, path: str | Path) -> None:
    """Write one ``u v`` line per undirected edge with a comment header."""
    path = Path(path)
    half = graph.edge_index[:, : graph.num_edges].T
    header = f"{graph.name or 'graph'}\nnodes: {graph.num_nodes} edges: {graph.num_edges}"
    np.savetxt(path, half, fmt="%d", header=header)


def _cache_dir() -> Path:
    return Path(os.environ.get("GRAPHTRANSFER_CACHE", Path.home() / ".cache" / "graphtransfer"))


def _spec_key(spec: dict) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
