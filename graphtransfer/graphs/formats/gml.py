"""GML (Graph Modelling Language): ``graph [ node [ id 1 ] edge [ source 1 target 2 ] ]``, split
into tokens and walked by a small state machine; only node ids, edge endpoints and ``weight``
keys of the top-level ``graph`` matter, every other key (labels, graphics, nested lists) is
skipped."""

from __future__ import annotations

import itertools
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import numpy as np

from graphtransfer.errors import GraphFileError, GraphInputWarning
from graphtransfer.graphs.formats.common import (
    build_graph,
    check_node_count,
    one_direction,
    read_bytes,
    warn_if_ids_lost,
    weights_of,
    write_atomically,
)
from graphtransfer.graphs.formats.text import show
from graphtransfer.graphs.graph import Graph

EXTENSIONS = (".gml",)
EXPECTED = "GML such as 'graph [ node [ id 1 ] node [ id 2 ] edge [ source 1 target 2 ] ]'"
# Above this size a warning suggests converting once: GML parses at roughly 5 MB/s.
SLOW_BYTES = 50 * 2**20
# The tokens, for finding where the k-th token is when reporting an error; reading splits faster.
_TOKEN = re.compile(rb'"[^"]*"|[\[\]]|[^\s\[\]"]+')
_COMMENT = re.compile(rb"(?m)^[ \t]*#.*$")
_INTEGER = re.compile(rb"[+-]?\d{1,18}")
_KEY_START = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


@dataclass
class _Parsed:
    """What the walk keeps: node ids in order, and each edge's endpoints and token position."""

    index: dict[int, int] = field(default_factory=dict)
    sources: list[int] = field(default_factory=list)
    targets: list[int] = field(default_factory=list)
    edge_tokens: list[int] = field(default_factory=list)
    node_weights: list[bytes | None] = field(default_factory=list)
    edge_weights: list[bytes | None] = field(default_factory=list)
    directed: bool = False


def read_gml(path: str | Path) -> Graph:
    """Read a GML graph. Node ids must be integers; nodes sit at positions ``0..N-1`` in the order
    they are declared, their ids kept as the graph's ``node_ids``, and an edge to an undeclared
    node is an error. A ``weight`` on every edge (every node) becomes the graph's
    ``edge_weight`` (``node_weight``); on some but not all, a warning says they are not used."""
    path = Path(path)
    body = read_bytes(path, EXPECTED)
    if len(body) > SLOW_BYTES:
        warnings.warn(
            f"{path}: {len(body) / 2**20:.0f} MiB of GML takes about {len(body) / 5e6:.0f} s to parse; convert it once "
            f"(graphtransfer graphs convert {path} {path.with_suffix('.npz')}) and read the .npz",
            GraphInputWarning,
            stacklevel=2,
        )
    if b"#" in body:
        body = _COMMENT.sub(lambda m: b" " * len(m.group()), body)
    parsed = _Walk(path, body).run()
    check_node_count(path, len(parsed.index))
    index = parsed.index
    src = np.fromiter((index.get(s, -1) for s in parsed.sources), dtype=np.int64, count=len(parsed.sources))
    dst = np.fromiter((index.get(t, -1) for t in parsed.targets), dtype=np.int64, count=len(parsed.targets))
    unknown = (src < 0) | (dst < 0)
    if unknown.any():
        k = int(np.argmax(unknown))
        node = parsed.sources[k] if src[k] < 0 else parsed.targets[k]
        line = _line(body, parsed.edge_tokens[k])
        raise GraphFileError(path, f"an edge to node {node}, which no node [ id {node} ] declares; declare every node", line)
    node_ids = np.fromiter(index, dtype=np.int64, count=len(index))  # dicts keep declaration order
    edge_weight, node_weight = weights_of(path, parsed.edge_weights, "edge"), weights_of(path, parsed.node_weights, "node")
    return build_graph(
        path, src, dst, len(index), repeats_expected=parsed.directed, node_ids=node_ids, edge_weight=edge_weight, node_weight=node_weight
    )


def write_gml(graph: Graph, path: str | Path) -> None:
    """Write an undirected GML graph in the graph's own integer ids, each edge once, atomically.

    GML ids are integers, so names (string ids) are replaced by positions, with a warning.
    """
    warn_if_ids_lost(graph, Path(path), "GML", "integers")
    ids = graph.ids() if graph.ids().dtype.kind in "iu" else np.arange(graph.num_nodes)
    nodes = "  node [ id %d ]\n" * graph.num_nodes % tuple(ids.tolist())
    edges = "  edge [ source %d target %d ]\n" * graph.num_edges % tuple(ids[one_direction(graph)].T.ravel().tolist())
    text = f"graph [\n  directed 0\n{nodes}{edges}]\n"
    write_atomically(Path(path), lambda tmp: tmp.write_text(text))


def _tokens(path: Path, body: bytes) -> list[bytes]:
    """Keys, values, ``[`` and ``]`` in order, as :data:`_TOKEN` finds them, but by splitting:
    outside strings, brackets are padded with spaces and the rest split on whitespace, several
    times faster than any regular expression over a large file."""
    pieces = body.split(b'"')
    if len(pieces) % 2 == 0:
        raise GraphFileError(
            path, "a string is not closed (an odd number of '\"'); the file is truncated or damaged", _line_at(body, body.rfind(b'"'))
        )
    tokens: list[bytes] = []
    for i, piece in enumerate(pieces):
        if i % 2:
            tokens.append(b'"' + piece + b'"')
        else:
            tokens.extend(piece.replace(b"[", b" [ ").replace(b"]", b" ] ").split())
    return tokens


class _Walk:
    """One pass over the tokens: ``key value`` pairs, where a value may be a ``[ ... ]`` list.
    Only ``id`` of a node and ``source``/``target`` of an edge in the top-level graph are kept."""

    def __init__(self, path: Path, body: bytes):
        self.path, self.body = path, body
        self.parsed = _Parsed()

    def run(self) -> _Parsed:
        tokens = _tokens(self.path, self.body)
        stack: list[tuple[bytes, int]] = []  # open lists: (key, token position)
        key: bytes | None = None
        item: dict[bytes, bytes] = {}  # the id / source / target of the node or edge being read
        graphs = 0
        for k, token in enumerate(tokens):
            if key is None:
                if token[0] in _KEY_START:
                    key = token
                elif token == b"]":
                    if not stack:
                        self.fail("a ']' that closes no list", k)
                    closed, opened = stack.pop()
                    if len(stack) == 1 and stack[0][0] == b"graph":
                        self.finish_item(closed, item, opened)
                else:
                    self.fail(f"{show(token)} where a key was expected; {EXPECTED}", k)
                continue
            if token == b"[":
                if not stack and key == b"graph":
                    graphs += 1
                    if graphs > 1:
                        self.fail("a second top-level graph; a file holds one graph", k)
                if len(stack) == 1:
                    item = {}  # a node or edge begins; lists nested deeper (graphics) keep it
                stack.append((key, k))
            elif token == b"]" or token[0] in _KEY_START:
                self.fail(f"{show(token)} where the value of {show(key)} was expected; {EXPECTED}", k)
            elif len(stack) == 2 and stack[0][0] == b"graph":
                item[key] = token
            elif len(stack) == 1 and stack[0][0] == b"graph" and key == b"directed":
                self.parsed.directed = token == b"1"
            key = None
        self.check_complete(key, stack, graphs, len(tokens))
        return self.parsed

    def check_complete(self, key: bytes | None, stack: list[tuple[bytes, int]], graphs: int, count: int) -> None:
        if key is not None:
            self.fail(f"the file ends after the key {show(key)} without its value; the file is truncated", count - 1)
        if stack:
            opened = _line(self.body, stack[-1][1])
            self.fail(f"the file ends inside the list {show(stack[-1][0])} opened on line {opened}; the file is truncated", count - 1)
        if not graphs:
            raise GraphFileError(self.path, f"has no top-level graph [ ... ]; expected {EXPECTED}")

    def finish_item(self, closed: bytes, item: dict[bytes, bytes], opened: int) -> None:
        """Record the node or edge whose list just closed; other lists of the graph are skipped."""
        if closed == b"node":
            node = self.integer(item, b"id", "node", opened)
            if node in self.parsed.index:
                self.fail(f"node id {node} is declared a second time; every node needs its own id", opened)
            self.parsed.index[node] = len(self.parsed.index)
            self.parsed.node_weights.append(item.get(b"weight"))
        elif closed == b"edge":
            self.parsed.edge_weights.append(item.get(b"weight"))
            self.parsed.sources.append(self.integer(item, b"source", "edge", opened))
            self.parsed.targets.append(self.integer(item, b"target", "edge", opened))
            self.parsed.edge_tokens.append(opened)

    def integer(self, item: dict[bytes, bytes], key: bytes, kind: str, opened: int) -> int:
        value = item.get(key)
        if value is None:
            self.fail(f"a {kind} without {key.decode()}; expected {EXPECTED}", opened)
        if not _INTEGER.fullmatch(value):
            self.fail(
                f"{kind} {key.decode()} {value[:30].decode(errors='backslashreplace')} is not an integer of at most 18 digits", opened
            )
        return int(value)

    def fail(self, cause: str, token: int) -> NoReturn:
        raise GraphFileError(self.path, cause, _line(self.body, token))


def _line(body: bytes, token: int) -> int:
    """1-based line of the ``token``-th token; only errors need it, so it re-tokenizes."""
    match = next(itertools.islice(_TOKEN.finditer(body), token, None), None)
    return _line_at(body, match.start() if match else len(body))


def _line_at(body: bytes, offset: int) -> int:
    return body.count(b"\n", 0, max(offset, 0)) + 1
