"""Graph file formats: one module per family, the registry ``FORMATS`` (name → reader, writer,
extensions), and :func:`read_graph` / :func:`write_graph`, which pick a format by name, else by
the file's first bytes, else by its extension."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from graphtransfer.errors import GraphInputError
from graphtransfer.graphs.formats import dimacs, edgelist, gml, graphml, metis, mtx, npz, pyg, spec
from graphtransfer.graphs.formats.common import check_is_file
from graphtransfer.graphs.graph import Graph
from graphtransfer.io import check_output_file


@dataclass(frozen=True)
class GraphFormat:
    """A file format: its reader, its writer (None where graphtransfer only reads it), and the
    extensions that name it."""

    name: str
    description: str
    extensions: tuple[str, ...]
    read: Callable[[Path], Graph]
    write: Callable[[Graph, Path], None] | None = None


FORMATS: dict[str, GraphFormat] = {
    f.name: f
    for f in (
        GraphFormat("edgelist", "SNAP edge list", edgelist.EXTENSIONS, edgelist.read_edge_list, edgelist.write_edge_list),
        GraphFormat("metis", "METIS adjacency lists", metis.EXTENSIONS, metis.read_metis, metis.write_metis),
        GraphFormat("dimacs", "DIMACS edge format", dimacs.EXTENSIONS, dimacs.read_dimacs, dimacs.write_dimacs),
        GraphFormat("mtx", "Matrix Market coordinate matrix", mtx.EXTENSIONS, mtx.read_mtx, mtx.write_mtx),
        GraphFormat("graphml", "GraphML", graphml.EXTENSIONS, graphml.read_graphml, graphml.write_graphml),
        GraphFormat("gml", "GML", gml.EXTENSIONS, gml.read_gml, gml.write_gml),
        GraphFormat("npz", "numpy archive", npz.EXTENSIONS, npz.read_npz, npz.write_npz),
        GraphFormat("pyg", "PyTorch / PyG tensors (torch.save)", pyg.EXTENSIONS, pyg.read_pyg, pyg.write_pyg),
        GraphFormat("spec", "generator spec (JSON)", spec.EXTENSIONS, spec.read_spec),
    )
}
GRAPH_SUFFIXES = tuple(extension for f in FORMATS.values() for extension in f.extensions)
_BY_EXTENSION = {extension: f.name for f in FORMATS.values() for extension in f.extensions}
_SNIFF_BYTES = 65536
_DIMACS_START = re.compile(rb"(?:c(?:[ \t][^\n]*)?\r?\n\s*)*p[ \t]")
_GML_GRAPH = re.compile(rb"(?m)^\s*graph\s*\[")


def get_format(name: str) -> GraphFormat:
    """The registered format called ``name``."""
    if name not in FORMATS:
        raise GraphInputError(f"format {name!r} is not known; choose one of {', '.join(FORMATS)}")
    return FORMATS[name]


def detect_format(path: str | Path) -> str:
    """The name of the format of ``path``: told by its first bytes where they are unmistakable (a
    zip archive, a pickle, XML, a Matrix Market banner, a DIMACS ``p`` line, a GML ``graph [``,
    a JSON object), else by its extension, else an edge list. METIS looks like an edge list
    inside, so it is told only by its extension (``.graph``, ``.metis``) or by name."""
    path = Path(path)
    check_is_file(path)
    return _sniff(path) or _BY_EXTENSION.get(path.suffix.lower(), "edgelist")


def read_graph(path: str | Path, format: str | None = None) -> Graph:
    """Read one graph file in the named ``format``, or the one :func:`detect_format` finds."""
    path = Path(path)
    return get_format(format or detect_format(path)).read(path)


def write_graph(graph: Graph, path: str | Path, format: str | None = None) -> str:
    """Write ``graph`` in the named ``format``, or the one its extension names; returns the format."""
    path = Path(path)
    name = format or _BY_EXTENSION.get(path.suffix.lower())
    if name is None:
        raise GraphInputError(f"{path}: cannot tell the format from the extension {path.suffix!r}; name one of {', '.join(writable())}")
    chosen = get_format(name)
    if chosen.write is None:
        raise GraphInputError(f"format {name!r} can be read but not written; write one of {', '.join(writable())}")
    try:
        chosen.write(graph, path)
    except OSError as err:
        raise GraphInputError(
            f"{path}: cannot be written ({err.strerror or err}); check that its folder is writable and has space"
        ) from None
    return name


def convert_graph(
    source: str | Path, target: str | Path, format: str | None = None, to: str | None = None, force: bool = False
) -> tuple[Graph, str, str]:
    """Read ``source`` (in ``format`` or the detected one) and write it to ``target`` (in ``to`` or
    the one its extension names; never over ``source`` or a model's files, over another existing
    file only with ``force``). Returns the graph and both format names."""
    source = Path(source)
    check_output_file(Path(target), [source], force, "TARGET", example="graph.npz")
    read_as = format or detect_format(source)
    graph = read_graph(source, read_as)
    return graph, read_as, write_graph(graph, target, to)


def writable() -> list[str]:
    """Names of the formats graphtransfer can write."""
    return [name for name, f in FORMATS.items() if f.write is not None]


def _sniff(path: Path) -> str | None:
    try:
        with path.open("rb") as file:
            head = file.read(_SNIFF_BYTES)
    except OSError:
        return None  # the reader chosen by extension reports why the file cannot be read
    if head.startswith(b"PK\x03\x04"):
        return _zip_kind(path)
    if head.startswith(b"\x80"):
        return "pyg"  # a pickle: torch.save's legacy format (loaded weights-only, never unpickled freely)
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"<"):
        return "graphml"
    if text.startswith(mtx.BANNER):
        return "mtx"
    if text.startswith(b"{"):
        return "spec"
    if _DIMACS_START.match(text):
        return "dimacs"
    if _GML_GRAPH.search(text):
        return "gml"
    return None


def _zip_kind(path: Path) -> str | None:
    """``npz`` for numpy's archives, ``pyg`` for torch.save's (which hold a ``data.pkl``)."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, NotImplementedError):
        return None  # damaged (zipfile raises NotImplementedError for a mangled version field): the reader reports it
    if any(name.endswith("/data.pkl") for name in names):
        return "pyg"
    return "npz" if any(name.endswith(".npy") for name in names) else None
