"""SNAP edge lists: one ``u v`` pair per line, ids any non-negative integers, ``#``/``%`` comments."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from graphtransfer.errors import GraphFileError, GraphInputWarning
from graphtransfer.graphs.formats.common import build_graph, one_direction, read_bytes, warn_if_ids_lost, write_atomically
from graphtransfer.graphs.formats.text import (
    Lines,
    blank_lines,
    check_ids,
    check_weights,
    first_bad_token,
    format_rows,
    parse_numbers,
    plural,
    scan_lines,
    show,
)
from graphtransfer.graphs.graph import Graph, sorted_unique

EXTENSIONS = (".txt", ".edges", ".el", ".tsv", ".csv", ".edgelist")
EXPECTED = "lines of 'u v' node id pairs"


def read_edge_list(path: str | Path) -> Graph:
    """Read a SNAP-style edge list: one ``u v`` pair per line, or ``u v weight`` (the third
    column, finite and non-negative, becomes the graph's ``edge_weight``; further columns, up to
    :data:`MAX_COLUMNS`, are ignored with a warning), any whitespace or commas, ``#`` or ``%`` comment lines, arbitrary non-negative
    integer ids. Nodes sit at positions ``0..N-1`` in increasing id order and the ids are kept as
    the graph's ``node_ids``. Self-loops and repeated edges are dropped with a warning that
    counts them.
    """
    path = Path(path)
    body = read_bytes(path, EXPECTED).replace(b",", b" ")
    lines = scan_lines(body)
    comments = lines.starting_with(b"#%")
    body, lines = blank_lines(body, lines, comments), lines.without(comments)
    columns = _columns(path, body, lines)
    numbers = parse_numbers(
        path, body, lines, np.int64 if columns == 2 else np.float64, "an integer node id" if columns == 2 else "a number"
    )
    rows = numbers.reshape(-1, columns)
    ids = rows[:, :2].ravel()
    check_ids(path, ids, lines, lambda k: (k // 2) * columns + k % 2, 0, None, "node id")
    if columns > 2:
        check_weights(path, numbers.reshape(-1, columns)[:, 2], lines, lambda k: k * columns + 2)
    node_ids, compact = _compact_ids(ids.astype(np.int64, copy=False))
    weights = rows[:, 2] if columns > 2 else None
    return build_graph(path, compact[0::2], compact[1::2], node_ids.size, node_ids=node_ids, edge_weight=weights)


def write_edge_list(graph: Graph, path: str | Path) -> None:
    """Write one ``u v`` line per undirected edge, in the graph's own integer ids, under a ``#``
    comment header, atomically.

    Isolated nodes have no line, so a graph that has them reads back with fewer nodes; names
    (string ids) cannot be written and are replaced by positions, with a warning.
    """
    isolated = int((graph.degrees() == 0).sum())
    if isolated:
        warnings.warn(
            f"{path}: {isolated} isolated node(s) have no line in an edge list and will not read back", GraphInputWarning, stacklevel=2
        )
    header = f"# {graph.name or 'graph'}\n# nodes: {graph.num_nodes} edges: {graph.num_edges}\n"
    warn_if_ids_lost(graph, Path(path), "an edge list", "integers")
    ids = graph.node_ids if graph.node_ids is not None and graph.node_ids.dtype.kind in "iu" else None
    ends = one_direction(graph) if ids is None else ids[one_direction(graph)]
    text = header + format_rows(ends.T)
    write_atomically(Path(path), lambda tmp: tmp.write_text(text))


def _columns(path: Path, body: bytes, lines: Lines) -> int:
    """Values per line, the same on every line: 2, or more when weights follow the ids."""
    data = np.flatnonzero(lines.counts)
    if not data.size:
        raise GraphFileError(path, f"has no edge lines, only comments; expected {EXPECTED}")
    columns = int(lines.counts[data[0]])
    uneven = data[lines.counts[data] != columns]
    if columns < 2:
        raise GraphFileError(path, f"has a line with one value; expected {EXPECTED}", int(data[0]) + 1)
    if columns > MAX_COLUMNS:
        raise GraphFileError(
            path,
            f"has {plural(columns, 'value')} on one line; an edge list has 'u v' or 'u v weight' (and at most {MAX_COLUMNS} "
            "columns) per line: are its line breaks missing?",
            int(data[0]) + 1,
        )
    if uneven.size:
        line = int(uneven[0])
        bad = first_bad_token(body[lines.starts[line] : lines.ends[line]], np.float64)
        if bad is not None:  # a damaged line is better named by what is wrong in it than by its length
            raise GraphFileError(path, f"{show(bad)} is not an integer node id", line + 1)
        raise GraphFileError(
            path,
            f"has {plural(int(lines.counts[line]), 'value')} where line {data[0] + 1} has {columns}; "
            "every line needs the same columns ('u v' or 'u v weight')",
            line + 1,
        )
    if columns > 3:
        warnings.warn(
            f"{path}: {'column 4' if columns == 4 else f'columns 4 to {columns}'} of every line ignored; only 'u v weight' is read",
            GraphInputWarning,
            stacklevel=3,
        )
    return columns


MAX_COLUMNS = 16
"""the most values an edge list's line may hold: SNAP's files have 2 to 4; a longer line is a file without line breaks"""


def _compact_ids(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Map the distinct ids to ``0..N-1`` keeping their order; a lookup table when ids are
    dense (much faster than sorting), a sort otherwise.

    Returns:
        ``(N,)`` the distinct ids in increasing order, and ``ids`` as positions among them.
    """
    top = int(ids.max())
    if top < 4 * ids.size:
        present = np.zeros(top + 1, dtype=bool)
        present[ids] = True
        new_id = np.cumsum(present) - 1
        return np.flatnonzero(present), new_id[ids]
    unique = sorted_unique(ids)
    return unique, np.searchsorted(unique, ids)
