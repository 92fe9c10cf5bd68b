"""GraphML, read as a stream by the standard library's expat parser: only ``<node id>``,
``<edge source target>`` and the ``<data>`` of a key named ``weight`` matter; other keys, data
and attributes are skipped.

No third-party XML library is needed (networkx reads GraphML several times slower, holding the
whole tree). A document type declaration is refused: GraphML needs none, and refusing it rules
out entity-expansion attacks.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import NoReturn
from xml.parsers import expat

import numpy as np

from graphtransfer.errors import GraphFileError, GraphInputWarning
from graphtransfer.graphs.formats.common import build_graph, check_is_file, check_node_count, one_direction, weights_of, write_atomically
from graphtransfer.graphs.graph import Graph, ids_from_names

EXTENSIONS = (".graphml",)
EXPECTED = "a GraphML document: <graphml><graph> with <node id=...> and <edge source=... target=...> elements"
# Above this size a warning suggests converting once: GraphML parses at roughly 10 MB/s.
SLOW_BYTES = 50 * 2**20


class _Collector:
    """Expat callbacks that keep node ids in document order and the endpoints of every edge."""

    def __init__(self, path: Path, parser: expat.XMLParserType):
        self.path, self.parser = path, parser
        self.index: dict[str, int] = {}
        self.sources: list[str] = []
        self.targets: list[str] = []
        self.edge_lines: list[int] = []
        self.directed = False
        self.root_seen = False
        self.weight_keys: dict[str, str] = {}  # "node" / "edge" -> the id of the key named weight
        self.node_weights: list[str | None] = []
        self.edge_weights: list[str | None] = []
        self.inside: str | None = None  # "node" or "edge" while inside one
        self.text: list[str] | None = None  # the text of a weight <data> being read

    def start(self, name: str, attributes: dict[str, str]) -> None:
        tag = name.rpartition(" ")[2]  # "namespace tag" -> tag
        if not self.root_seen:
            self.root_seen = True
            if tag != "graphml":
                self.fail(f"the root element is <{tag}>; expected {EXPECTED}")
        if tag == "node":
            self.node(attributes.get("id"))
        elif tag == "edge":
            self.edge(attributes.get("source"), attributes.get("target"))
        elif tag == "key" and attributes.get("attr.name") == "weight" and attributes.get("for") in ("node", "edge"):
            self.weight_keys[attributes["for"]] = attributes.get("id", "")
        elif tag == "data" and self.inside and attributes.get("key") == self.weight_keys.get(self.inside):
            self.text = []
        elif tag == "graph":
            self.directed |= attributes.get("edgedefault") == "directed"
        elif tag == "hyperedge":
            self.fail("a <hyperedge> joins more than two nodes; graphtransfer reads graphs of plain <edge> elements")

    def node(self, node_id: str | None) -> None:
        if node_id is None:
            self.fail("a <node> without an id attribute")
        if node_id in self.index:
            self.fail(f"node id {node_id!r} appears a second time; every node needs its own id")
        self.index[node_id] = len(self.index)
        self.node_weights.append(None)
        self.inside = "node"

    def edge(self, source: str | None, target: str | None) -> None:
        if source is None or target is None:
            self.fail("an <edge> without a source or target attribute")
        self.sources.append(source)
        self.targets.append(target)
        self.edge_lines.append(self.parser.CurrentLineNumber)
        self.edge_weights.append(None)
        self.inside = "edge"

    def end(self, name: str) -> None:
        tag = name.rpartition(" ")[2]
        if tag == "data" and self.text is not None:
            weights = self.node_weights if self.inside == "node" else self.edge_weights
            weights[-1] = "".join(self.text).strip()
            self.text = None
        elif tag in ("node", "edge"):
            self.inside = None

    def characters(self, data: str) -> None:
        if self.text is not None:
            self.text.append(data)

    def refuse_doctype(self, *_: object) -> None:
        self.fail("a <!DOCTYPE> declaration; GraphML needs none, and graphtransfer refuses them (entity expansion)")

    def fail(self, cause: str) -> NoReturn:
        raise GraphFileError(self.path, cause, self.parser.CurrentLineNumber)


def read_graphml(path: str | Path) -> Graph:
    """Read a GraphML graph; nodes sit at positions ``0..N-1`` in document order, their ids kept as
    the graph's ``node_ids`` (int64 when every id is a plain integer, else strings), and an edge
    to a node that no ``<node>`` declares is an error. The ``<data>`` of a ``<key
    attr.name="weight" for="edge">`` on every edge (``for="node"``: every node) becomes the
    graph's ``edge_weight`` (``node_weight``); on some but not all, a warning says they are not used."""
    path = Path(path)
    check_is_file(path)
    _check_size(path)
    parser = expat.ParserCreate(namespace_separator=" ")
    collector = _Collector(path, parser)
    parser.StartElementHandler = collector.start
    parser.EndElementHandler = collector.end
    parser.CharacterDataHandler = collector.characters
    parser.StartDoctypeDeclHandler = collector.refuse_doctype
    try:
        with path.open("rb") as file:
            parser.ParseFile(file)
    except expat.ExpatError as err:
        raise GraphFileError(
            path, f"invalid XML ({expat.ErrorString(err.code)}); the file is truncated or not GraphML", err.lineno
        ) from None
    except (OSError, ValueError, LookupError) as err:  # unreadable, or an unknown declared encoding
        raise GraphFileError(path, f"cannot be read as XML ({err}); expected {EXPECTED}") from None
    return _graph(path, collector)


def write_graphml(graph: Graph, path: str | Path) -> None:
    """Write an undirected GraphML graph in the graph's own ids (``0..N-1`` when it has none),
    each edge once, atomically."""
    from xml.sax.saxutils import escape  # here: it imports urllib, 20 ms of every command's start-up

    names = [escape(str(name), {'"': "&quot;"}) for name in graph.ids().tolist()]
    nodes = '    <node id="%s"/>\n' * graph.num_nodes % tuple(names)
    ends = one_direction(graph).T.ravel().tolist()
    edges = '    <edge source="%s" target="%s"/>\n' * graph.num_edges % tuple(names[i] for i in ends)
    text = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n'
        f'  <graph id="{escape(graph.name or "G", {chr(34): "&quot;"})}" edgedefault="undirected">\n{nodes}{edges}  </graph>\n</graphml>\n'
    )
    write_atomically(Path(path), lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _graph(path: Path, collector: _Collector) -> Graph:
    check_node_count(path, len(collector.index))
    index = collector.index
    src = np.fromiter((index.get(s, -1) for s in collector.sources), dtype=np.int64, count=len(collector.sources))
    dst = np.fromiter((index.get(t, -1) for t in collector.targets), dtype=np.int64, count=len(collector.targets))
    unknown = (src < 0) | (dst < 0)
    if unknown.any():
        k = int(np.argmax(unknown))
        name = collector.sources[k] if src[k] < 0 else collector.targets[k]
        raise GraphFileError(path, f"an <edge> to node {name!r}, which no <node> declares; declare every node", collector.edge_lines[k])
    return build_graph(
        path,
        src,
        dst,
        len(index),
        repeats_expected=collector.directed,
        node_ids=ids_from_names(list(index)),
        edge_weight=weights_of(path, collector.edge_weights, "edge"),
        node_weight=weights_of(path, collector.node_weights, "node"),
    )


def _check_size(path: Path) -> None:
    """Refuse an empty file; warn before a long parse."""
    size = path.stat().st_size
    if size == 0:
        raise GraphFileError(path, f"is empty; expected {EXPECTED}")
    if size > SLOW_BYTES:
        warnings.warn(
            f"{path}: {size / 2**20:.0f} MiB of GraphML takes about {size / 10e6:.0f} s to parse; convert it once "
            f"(graphtransfer graphs convert {path} {path.with_suffix('.npz')}) and read the .npz",
            GraphInputWarning,
            stacklevel=3,
        )
