"""DIMACS graphs (the coloring and clique challenges): ``c`` comments, one ``p edge N M`` line, then
``e u v`` lines with 1-based node ids."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from graphtransfer.errors import GraphFileError
from graphtransfer.graphs.formats.common import (
    build_graph,
    check_node_count,
    one_based_ids,
    one_direction,
    read_bytes,
    warn_if_ids_lost,
    write_atomically,
)
from graphtransfer.graphs.formats.text import Lines, blank_lines, check_ids, format_rows, parse_numbers, plural, scan_lines
from graphtransfer.graphs.graph import Graph

EXTENSIONS = (".col", ".dimacs", ".clq")
EXPECTED = "DIMACS lines: 'c' comments, 'p edge N M', then 'e u v' edges"
_PROBLEMS = (b"edge", b"edges", b"col")


def read_dimacs(path: str | Path) -> Graph:
    """Read a DIMACS graph. ``M`` must equal the number of ``e`` lines; an edge listed in both
    directions, as some instances do, is kept once without a warning."""
    path = Path(path)
    body = read_bytes(path, EXPECTED)
    lines = scan_lines(body)
    _check_line_letters(path, body, lines)
    num_nodes, num_edges, problem_line = _problem(path, body, lines)
    edges = lines.starting_with(b"e")
    rows = np.flatnonzero(edges)
    if rows.size and rows[0] < problem_line:
        raise GraphFileError(path, f"an 'e' line before the 'p' line (line {problem_line + 1}); the 'p' line comes first", int(rows[0]) + 1)
    if rows.size != num_edges:
        raise GraphFileError(
            path,
            f"the 'p' line declares {num_edges} edges but the file has {plural(rows.size, 'edge line')}; "
            "the file is truncated or M is wrong",
            problem_line + 1,
        )
    short = rows[lines.counts[rows] != 3]
    if short.size:
        raise GraphFileError(
            path, f"an 'e' line holds {plural(int(lines.counts[short[0]]) - 1, 'node id')}; expected 'e u v'", int(short[0]) + 1
        )
    body, lines = _edge_numbers_only(body, lines, edges)
    ends = parse_numbers(path, body, lines, np.int64, "an integer node id")
    check_ids(path, ends, lines, lambda k: k, 1, num_nodes, "node id")
    return build_graph(path, ends[0::2] - 1, ends[1::2] - 1, num_nodes, repeats_expected=True, node_ids=one_based_ids(num_nodes))


def write_dimacs(graph: Graph, path: str | Path) -> None:
    """Write ``p edge N M`` and one ``e u v`` line per undirected edge, atomically."""
    warn_if_ids_lost(graph, Path(path), "DIMACS", "1..N")
    text = f"c {graph.name or 'graph'}\np edge {graph.num_nodes} {graph.num_edges}\n" + format_rows(one_direction(graph).T + 1, prefix="e ")
    write_atomically(Path(path), lambda tmp: tmp.write_text(text))


def _check_line_letters(path: Path, body: bytes, lines: Lines) -> None:
    """Every line that is not blank starts with ``c``, or with ``p`` or ``e`` standing alone."""
    filled = lines.counts > 0
    padded = np.append(np.frombuffer(body, dtype=np.uint8), np.uint8(ord(" ")))
    follower = padded[np.minimum(lines.first_at + 1, padded.size - 1)]
    letter_alone = (follower == ord(" ")) | ((follower >= 9) & (follower <= 13))
    wrong = filled & ~(lines.starting_with(b"c") | (lines.starting_with(b"pe") & letter_alone))
    if wrong.any():
        line = int(np.argmax(wrong))
        word = body[lines.first_at[line] :].split(maxsplit=1)[0][:20].decode(errors="backslashreplace")
        raise GraphFileError(path, f"a line starting with {word!r}; expected {EXPECTED}", line + 1)


def _problem(path: Path, body: bytes, lines: Lines) -> tuple[int, int, int]:
    """``(N, M, 0-based line)`` of the one ``p edge N M`` line."""
    problems = np.flatnonzero(lines.starting_with(b"p"))
    if not problems.size:
        raise GraphFileError(path, f"has no 'p edge N M' line; expected {EXPECTED}")
    if problems.size > 1:
        raise GraphFileError(path, f"a second 'p' line (the first is line {problems[0] + 1}); a file holds one graph", int(problems[1]) + 1)
    line = int(problems[0])
    words = body[lines.starts[line] : lines.ends[line]].split()
    sizes = words[2:]
    if len(words) != 4 or words[1] not in _PROBLEMS or not all(w.isdigit() and len(w) <= 18 for w in sizes):
        shown = b" ".join(words)[:60].decode(errors="backslashreplace")
        raise GraphFileError(path, f"problem line {shown!r} is not 'p edge N M' with non-negative integers N and M", line + 1)
    num_nodes, num_edges = int(sizes[0]), int(sizes[1])
    check_node_count(path, num_nodes, line + 1)
    return num_nodes, num_edges, line


def _edge_numbers_only(body: bytes, lines: Lines, edges: np.ndarray) -> tuple[bytes, Lines]:
    """The body with comment and ``p`` lines and each ``e`` letter blanked, so that only the
    ``u v`` pairs are left for one bulk parse, every line keeping its number."""
    text = np.frombuffer(blank_lines(body, lines, (lines.counts > 0) & ~edges), dtype=np.uint8).copy()
    text[lines.first_at[edges]] = ord(" ")
    return text.tobytes(), replace(lines, counts=np.where(edges, lines.counts - 1, 0))
