"""Generator specs (``.json``): a graph named by the seeded generator that builds it, such as
``{"generator": "barabasi_albert", "num_nodes": 250000, "m": 4, "seed": 7}``."""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path

from graphtransfer.errors import GraphFileError, GraphInputError, GraphInputWarning
from graphtransfer.graphs.formats.common import read_bytes
from graphtransfer.graphs.formats.npz import read_npz, write_npz
from graphtransfer.graphs.generators import generate
from graphtransfer.graphs.graph import Graph

EXTENSIONS = (".json",)
EXPECTED = 'a JSON generator spec such as {"generator": "barabasi_albert", "num_nodes": 1000, "m": 4, "seed": 0}'


def read_spec(path: str | Path) -> Graph:
    """Materialise a generator spec. The result is cached as ``.npz`` in ``$GRAPHTRANSFER_CACHE``
    (default ``~/.cache/graphtransfer``) so that later reads take a fraction of a second."""
    path = Path(path)
    spec = _parse(path, read_bytes(path, EXPECTED))
    cache = _cache_dir() / f"{path.stem}-{_spec_key(spec)}.npz"
    if cache.is_file():
        graph = read_npz(cache)
    else:
        try:
            graph = generate(spec)
        except GraphInputError as err:
            raise GraphFileError(path, str(err)) from None
        _store(graph, cache)
    return Graph(graph.edge_index, graph.num_nodes, path.name, graph.node_ids)


def _parse(path: Path, body: bytes) -> dict:
    try:
        spec = json.loads(body)
    except json.JSONDecodeError as err:
        raise GraphFileError(path, f"is not valid JSON ({err.msg}); expected {EXPECTED}", err.lineno) from None
    except UnicodeDecodeError:
        raise GraphFileError(path, f"is not UTF-8 text; expected {EXPECTED}") from None
    except RecursionError:
        raise GraphFileError(path, f"nests too deeply to be a generator spec; expected {EXPECTED}") from None
    if not isinstance(spec, dict):
        raise GraphFileError(path, f"holds a JSON {type(spec).__name__}, not an object; expected {EXPECTED}")
    return spec


def _store(graph: Graph, cache: Path) -> None:
    """Cache a generated graph; a cache that cannot be written only costs time next read."""
    try:
        write_npz(graph, cache)
    except OSError as err:
        warnings.warn(
            f"could not cache the generated graph at {cache} ({err.strerror}); set $GRAPHTRANSFER_CACHE to a writable folder",
            GraphInputWarning,
            stacklevel=3,
        )


def _cache_dir() -> Path:
    return Path(os.environ.get("GRAPHTRANSFER_CACHE", Path.home() / ".cache" / "graphtransfer"))


def _spec_key(spec: dict) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]
