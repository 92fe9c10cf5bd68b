"""METIS graphs: a header ``n m [fmt [ncon]]``, then line ``i`` lists the 1-based neighbours of
node ``i``, optionally with a node size, node weights and edge weights. Edge weights become the
graph's ``edge_weight`` and the first node weight its ``node_weight``; node sizes are ignored."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphtransfer.errors import GraphFileError, GraphInputWarning
from graphtransfer.graphs.formats.common import build_graph, check_node_count, one_based_ids, read_bytes, warn_if_ids_lost, write_atomically
from graphtransfer.graphs.formats.text import (
    Lines,
    blank_lines,
    check_ids,
    check_weights,
    header_numbers,
    parse_numbers,
    plural,
    scan_lines,
)
from graphtransfer.graphs.graph import Graph, sorted_unique

EXTENSIONS = (".graph", ".metis")
EXPECTED = "a METIS header 'n m [fmt [ncon]]' and then one line of 1-based neighbours per node"


def read_metis(path: str | Path) -> Graph:
    """Read a METIS graph; ``%`` lines are comments, a blank line is a node without neighbours.

    The header's ``m`` must match the body (every edge listed from both ends). ``fmt`` is up to
    three 0/1 flags — node sizes, node weights, edge weights — and ``ncon`` counts node weights.
    """
    path = Path(path)
    body = read_bytes(path, EXPECTED)
    lines = scan_lines(body)
    comments = lines.starting_with(b"%")
    body, lines = blank_lines(body, lines, comments), lines.without(comments)
    filled = np.flatnonzero(lines.counts)
    if not filled.size:
        raise GraphFileError(path, f"has only comments; expected {EXPECTED}")
    header_line = int(filled[0])
    layout = _layout(path, header_numbers(path, body, lines, header_line, "'n m [fmt [ncon]]'"), header_line)
    num_nodes, num_edges, prefix, stride = layout.num_nodes, layout.num_edges, layout.prefix, layout.stride
    rows = _node_lines(path, lines, comments, header_line, num_nodes)
    counts = lines.counts[rows]
    misshapen = (counts < prefix) | ((counts - prefix) % stride != 0)
    if misshapen.any():
        k = int(np.argmax(misshapen))
        raise GraphFileError(path, f"node {k + 1} has {plural(int(counts[k]), 'value')}; {layout.describe()}", int(rows[k]) + 1)
    numbers = parse_numbers(path, body, lines, np.int64, "an integer")
    first_token = int(lines.counts[header_line])
    owner, is_neighbour = _neighbour_entries(counts, prefix, stride)
    neighbours, token = numbers[first_token:][is_neighbour], np.flatnonzero(is_neighbour) + first_token
    check_ids(path, neighbours, lines, lambda k: int(token[k]), 1, num_nodes, "neighbour")
    if stride == 2:  # each neighbour's edge weight follows it
        check_weights(
            path,
            numbers[first_token:][token - first_token + 1],
            lines,
            lambda k: int(token[k]) + 1,
            "METIS edge weights are positive integers",
        )
    if neighbours.size != 2 * num_edges:
        raise GraphFileError(
            path,
            f"the header declares {num_edges} edges, so {2 * num_edges} neighbour entries, but the node lines hold "
            f"{neighbours.size}; METIS lists every edge from both ends, so set m to {neighbours.size // 2} or fix the lists",
            header_line + 1,
        )
    values = numbers[first_token:]
    edge_weight = values[np.flatnonzero(is_neighbour) + 1] if stride == 2 else None
    node_weight = None
    if prefix > layout.flags.startswith("1"):  # a node weight follows the optional size
        node_weight = values[np.cumsum(counts) - counts + int(layout.flags.startswith("1"))]
    src, dst = owner[is_neighbour], neighbours - 1
    graph = build_graph(
        path,
        src,
        dst,
        num_nodes,
        repeats_expected=True,
        node_ids=one_based_ids(num_nodes),
        edge_weight=edge_weight,
        node_weight=node_weight,
    )
    if graph.num_edges != num_edges:
        symmetric = _distinct_entries(src, dst, num_nodes) == 2 * graph.num_edges  # every edge listed from both ends
        why = (
            "the lists repeat some neighbours or list self-loops"
            if symmetric
            else "the lists are not symmetric (some edge is listed from one end only)"
        )
        warnings.warn(f"{path}: {why}; read {graph.num_edges} edges, the header declares {num_edges}", GraphInputWarning, stacklevel=2)
    return graph


def _distinct_entries(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> int:
    """How many distinct ``(node, neighbour)`` entries the lists hold, self-loops left out."""
    keep = src != dst
    return int(sorted_unique(src[keep] * num_nodes + dst[keep]).size)


def write_metis(graph: Graph, path: str | Path) -> None:
    """Write the header ``n m`` and one line of 1-based neighbours per node, atomically."""
    warn_if_ids_lost(graph, Path(path), "METIS", "1..N")
    indptr, indices = graph.csr()
    names = list(map(str, (indices + 1).tolist()))
    rows = (" ".join(names[a:b]) for a, b in zip(indptr[:-1].tolist(), indptr[1:].tolist(), strict=True))
    text = f"{graph.num_nodes} {graph.num_edges}\n" + "\n".join(rows) + "\n"
    write_atomically(Path(path), lambda tmp: tmp.write_text(text))


@dataclass(frozen=True)
class _Layout:
    """What the header says: sizes, and where the neighbours sit on a node line."""

    num_nodes: int
    num_edges: int
    flags: str  # fmt as three 0/1 flags: node sizes, node weights, edge weights
    prefix: int  # values before the first neighbour: a size and the node weights
    stride: int  # values per neighbour: 2 when an edge weight follows each

    def describe(self) -> str:
        per_neighbour = "neighbour, edge weight pairs" if self.stride == 2 else "neighbours"
        return f"with fmt {self.flags} a node line holds {self.prefix} leading value(s) and then {per_neighbour}"


def _layout(path: Path, header: list[int], line: int) -> _Layout:
    if not 2 <= len(header) <= 4:
        raise GraphFileError(path, f"the header has {len(header)} values; expected 'n m [fmt [ncon]]'", line + 1)
    num_nodes, num_edges = header[:2]
    check_node_count(path, num_nodes, line + 1)
    flags = f"{header[2]:03d}" if len(header) > 2 else "000"
    if len(flags) != 3 or set(flags) - {"0", "1"}:
        raise GraphFileError(path, f"fmt {header[2]} is not up to three 0/1 flags; expected e.g. 0, 1, 10, 11 or 111", line + 1)
    has_size, has_weights, has_edge_weights = (flag == "1" for flag in flags)
    node_weights = (header[3] if len(header) > 3 else 1) if has_weights else 0
    return _Layout(num_nodes, num_edges, flags, has_size + node_weights, 1 + has_edge_weights)


def _neighbour_entries(counts: np.ndarray, prefix: int, stride: int) -> tuple[np.ndarray, np.ndarray]:
    """Which values of the node lines are neighbours, given ``counts`` ``(n,)`` values per line.

    Returns ``owner`` ``(T,)``, the node whose line holds each value, and ``(T,)`` bool marking the
    neighbours: after ``prefix`` leading values, every ``stride``-th value.
    """
    owner = np.repeat(np.arange(counts.size), counts)
    position = np.arange(owner.size) - np.repeat(np.cumsum(counts) - counts, counts)  # place on its line
    return owner, (position >= prefix) & ((position - prefix) % stride == 0)


def _node_lines(path: Path, lines: Lines, comments: np.ndarray, header_line: int, num_nodes: int) -> np.ndarray:
    """``(n,)`` indices of the lines that hold each node's neighbours: the ``n`` lines after the
    header that are not comments, blank ones included; anything after them must be blank."""
    after = np.flatnonzero(~comments)
    after = after[after > header_line]
    if after.size < num_nodes:
        raise GraphFileError(
            path,
            f"ends after {after.size} of the {num_nodes} node lines the header (line {header_line + 1}) declares; "
            "the file is truncated or n is wrong",
            lines.counts.size,
        )
    extra = after[num_nodes:][lines.counts[after[num_nodes:]] > 0]
    if extra.size:
        raise GraphFileError(
            path,
            f"is past the {num_nodes} node lines the header (line {header_line + 1}) declares; n is wrong or lines were added",
            int(extra[0]) + 1,
        )
    return after[:num_nodes]
