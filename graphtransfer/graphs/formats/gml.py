"""GML (Graph Modelling Language): ``graph [ node [ id 1 ] edge [ source 1 target 2 ] ]``, read by
one regular expression and a small state machine; only node ids and edge endpoints of the
top-level ``graph`` matter, every other key (labels, graphics, nested lists) is skipped."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from graphtransfer.errors import GraphFileError, GraphInputWarning
from graphtransfer.graphs.formats.common import build_graph, check_node_count, read_bytes
from graphtransfer.graphs.graph import Graph

EXTENSIONS = (".gml",)
EXPECTED = "GML such as 'graph [ node [ id 1 ] node [ id 2 ] edge [ source 1 target 2 ] ]'"
# Above this size a warning suggests converting once; parsing runs at roughly 10 MB/s.
SLOW_BYTES = 100 * 2**20
_TOKEN = re.compile(
    rb"""\s*(?:
        (?P<key>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<number>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
      | (?P<string>"[^"]*")
      | (?P<open>\[)
      | (?P<close>\])
      | (?P<comment>\#[^\n]*)
      | (?P<bad>\S)
    )""",
    re.VERBOSE,
)
_INTEGER = re.compile(rb"[+-]?\d+")  # up to 19 characters: larger ids are refused, not parsed


@dataclass
class _Parsed:
    """What the walk keeps: node ids in order, and each edge's endpoints and byte offset."""

    index: dict[int, int] = field(default_factory=dict)
    sources: list[int] = field(default_factory=list)
    targets: list[int] = field(default_factory=list)
    edge_offsets: list[int] = field(default_factory=list)
    directed: bool = False


def read_gml(path: str | Path) -> Graph:
    """Read a GML graph. Node ids must be integers; they are mapped to ``0..N-1`` in the order the
    nodes are declared, and an edge to an undeclared node is an error."""
    path = Path(path)
    body = read_bytes(path, EXPECTED)
    if len(body) > SLOW_BYTES:
        warnings.warn(
            f"{path}: {len(body) / 2**20:.0f} MiB of GML takes about {len(body) / 10e6:.0f} s to parse; convert it once "
            f"(graphtransfer graphs convert {path} {path.with_suffix('.npz')}) and read the .npz",
            GraphInputWarning,
            stacklevel=2,
        )
    parsed = _walk(path, body)
    check_node_count(path, len(parsed.index))
    index = parsed.index
    src = np.fromiter((index.get(s, -1) for s in parsed.sources), dtype=np.int64, count=len(parsed.sources))
    dst = np.fromiter((index.get(t, -1) for t in parsed.targets), dtype=np.int64, count=len(parsed.targets))
    unknown = (src < 0) | (dst < 0)
    if unknown.any():
        k = int(np.argmax(unknown))
        node = parsed.sources[k] if src[k] < 0 else parsed.targets[k]
        raise GraphFileError(path, f"an edge to node {node}, which no node [ id {node} ] declares; declare every node", _line(body, parsed.edge_offsets[k]))
    return build_graph(path, src, dst, len(index), repeats_expected=parsed.directed)


def _walk(path: Path, body: bytes) -> _Parsed:
    """One pass over the tokens: ``key value`` pairs, where a value may be a ``[ ... ]`` list."""
    parsed = _Parsed()
    stack: list[tuple[bytes, int]] = []  # open lists: (key, byte offset)
    key: bytes | None = None
    item: dict[bytes, bytes] = {}  # id / source / target of the node or edge being read
    graphs = 0

    def fail(cause: str, offset: int) -> None:
        raise GraphFileError(path, cause, _line(body, offset))

    for token in _TOKEN.finditer(body):
        kind, text, offset = token.lastgroup, token.group(token.lastgroup), token.start(token.lastgroup)
        if kind == "comment":
            continue
        if key is None:
            if kind == "key":
                key = text
            elif kind == "close":
                if not stack:
                    fail("a ']' that closes no list", offset)
                closed, opened = stack.pop()
                if len(stack) == 1 and stack[0][0] == b"graph":
                    _finish_item(path, body, parsed, closed, item, opened)
            else:
                fail(f"{_show(text)} where a key was expected; {EXPECTED}", offset)
            continue
        if kind == "open":
            if not stack and key == b"graph":
                graphs += 1
                if graphs > 1:
                    fail("a second top-level graph; a file holds one graph", offset)
            if len(stack) == 1:
                item = {}  # a node or edge begins; lists nested deeper (graphics) keep it
            stack.append((key, offset))
        elif kind in ("number", "string"):
            if len(stack) == 2 and stack[0][0] == b"graph":
                item[key] = text
            elif len(stack) == 1 and stack[0][0] == b"graph" and key == b"directed":
                parsed.directed = text == b"1"
        else:
            fail(f"{_show(text)} where the value of {_show(key)} was expected; {EXPECTED}", offset)
        key = None
    if key is not None:
        fail(f"the file ends after the key {_show(key)} without its value; the file is truncated", len(body) - 1)
    if stack:
        fail(f"the file ends inside the list {_show(stack[-1][0])} opened on line {_line(body, stack[-1][1])}; the file is truncated", len(body) - 1)
    if not graphs:
        fail(f"has no top-level graph [ ... ]; expected {EXPECTED}", 0)
    return parsed


def _finish_item(path: Path, body: bytes, parsed: _Parsed, closed: bytes, item: dict[bytes, bytes], opened: int) -> None:
    """Record the node or edge whose list just closed; other lists of the graph are skipped."""
    if closed == b"node":
        node = _integer(path, body, item, b"id", "node", opened)
        if node in parsed.index:
            raise GraphFileError(path, f"node id {node} is declared a second time; every node needs its own id", _line(body, opened))
        parsed.index[node] = len(parsed.index)
    elif closed == b"edge":
        parsed.sources.append(_integer(path, body, item, b"source", "edge", opened))
        parsed.targets.append(_integer(path, body, item, b"target", "edge", opened))
        parsed.edge_offsets.append(opened)


def _integer(path: Path, body: bytes, item: dict[bytes, bytes], key: bytes, kind: str, opened: int) -> int:
    value = item.get(key)
    if value is None:
        raise GraphFileError(path, f"a {kind} without {key.decode()}; expected {EXPECTED}", _line(body, opened))
    if not _INTEGER.fullmatch(value) or len(value) > 19:
        raise GraphFileError(path, f"{kind} {key.decode()} {_show(value)} is not an integer node id", _line(body, opened))
    return int(value)


def _line(body: bytes, offset: int) -> int:
    return body.count(b"\n", 0, max(offset, 0)) + 1


def _show(text: bytes) -> str:
    return repr(text[:30].decode(errors="backslashreplace"))
