"""What every format shares: opening a file with a clear error, writing one atomically (with
:func:`graphtransfer.io.write_atomically`), and turning parsed endpoints into a :class:`Graph`
with warnings for what was dropped."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from graphtransfer.errors import GraphFileError, GraphInputError, GraphInputWarning
from graphtransfer.graphs.graph import MAX_NODES, Graph, from_edges, with_ids
from graphtransfer.io import not_a_regular_file
from graphtransfer.io import write_atomically as write_atomically  # the one atomic writer, for every format


def check_is_file(path: Path) -> None:
    """Refuse a folder, a FIFO or device (:func:`graphtransfer.io.not_a_regular_file`) or a missing
    path before any reader touches it."""
    special = not_a_regular_file(path)
    if special:
        raise GraphFileError(path, special)
    if path.is_dir():
        raise GraphFileError(path, "is a folder, expected a graph file; name one of the files inside it")
    if not path.is_file():
        raise GraphInputError(f"{path}: no such file; give a path to a graph file or a sample set name")


def read_bytes(path: Path, expected: str) -> bytes:
    """The whole file, refused when it is empty (or only whitespace) or holds NUL bytes, which no
    text format has: a binary file read as text would otherwise fail somewhere far less clear.

    ``expected`` says what the format wants, e.g. ``"lines of 'u v' node id pairs"``.
    """
    check_is_file(path)
    try:
        body = path.read_bytes()
    except OSError as err:
        raise GraphFileError(path, f"cannot be read ({err.strerror}); check that it exists and is readable") from None
    if not body.strip():
        raise GraphFileError(path, f"is empty; expected {expected}")
    nul = body.find(b"\x00")
    if nul >= 0:
        line = body.count(b"\n", 0, nul) + 1
        raise GraphFileError(path, f"holds binary data (a NUL byte), not text; expected {expected}", line)
    return body


def check_node_count(path: Path, num_nodes: int, line: int | None = None) -> None:
    """A declared node count must be one graphtransfer can hold."""
    if num_nodes < 1:
        raise GraphFileError(path, f"declares {num_nodes} nodes; a graph needs at least one", line)
    if num_nodes > MAX_NODES:
        raise GraphFileError(path, f"declares {num_nodes:,} nodes; graphtransfer handles at most {MAX_NODES:,}", line)


def build_graph(
    path: Path,
    src: np.ndarray,
    dst: np.ndarray,
    num_nodes: int,
    *,
    repeats_expected: bool = False,
    node_ids: np.ndarray | None = None,
    edge_weight: np.ndarray | None = None,
    node_weight: np.ndarray | None = None,
) -> Graph:
    """The graph of these 0-based endpoints, warning about dropped self-loops, and about repeated
    edges unless the format lists each edge in both directions anyway (``repeats_expected``).
    ``node_ids`` ``(num_nodes,)`` are the file's own ids of the positions (see :class:`Graph`);
    ``edge_weight`` ``(len(src),)`` and ``node_weight`` ``(num_nodes,)`` the file's own weights,
    checked by :func:`check_weight_values` (every format's weights meet this one rule)."""
    for kind, weights in (("edge", edge_weight), ("node", node_weight)):
        if weights is not None:
            check_weight_values(path, np.asarray(weights), kind)
    graph, loops, repeats = from_edges(src, dst, num_nodes, path.name, edge_weight)
    graph = with_ids(graph, node_ids)
    if node_weight is not None:
        graph = replace(graph, node_weight=np.asarray(node_weight, dtype=np.float64))
    dropped = [f"{loops} self-loop(s)"] if loops else []
    if repeats and not repeats_expected:
        dropped.append(f"{repeats} duplicate edge(s)")
    if dropped:
        warnings.warn(f"{path}: dropped {' and '.join(dropped)}", GraphInputWarning, stacklevel=3)
    return graph


MAX_TOTAL_WEIGHT = float(np.finfo(np.float32).max)
"""the most a graph's weights of one kind may add up to: then every weight, and every sum of them a
task, a baseline or the policy's float32 inputs make, stays finite (1e308 per edge made inf
probabilities and overflowing path lengths)"""


def check_weight_values(path: Path, weights: np.ndarray, kind: str) -> None:
    """A file's ``kind`` ("edge" or "node") weights, in any format: numbers, finite, non-negative,
    adding up to at most :data:`MAX_TOTAL_WEIGHT`; a :class:`GraphFileError` naming the file, the
    weight and the fix otherwise. (Text formats name the line first, where they can.)"""
    if weights.dtype.kind not in "iuf":
        raise GraphFileError(path, f"{kind} weights are {weights.dtype}; expected numbers")
    values = weights.astype(np.float64, copy=False)
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        k = int(np.argmax(bad))
        listed = f"the {ordinal(k + 1)} listed"
        raise GraphFileError(path, f"{kind} weight {values[k]:g} ({listed}) is not a finite non-negative number; fix it")
    with np.errstate(over="ignore"):
        total = float(values.sum())
    if total > MAX_TOTAL_WEIGHT:
        shown = "more than float64 holds" if np.isinf(total) else f"{total:.3g}"
        raise GraphFileError(
            path,
            f"{kind} weights add up to {shown}, above {MAX_TOTAL_WEIGHT:.3g} (float32's largest), so sums of them overflow "
            f"(the largest weight is {values.max():.3g}); scale them down",
        )


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``21st``, ..."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n:,}{suffix}"


def one_based_ids(num_nodes: int) -> np.ndarray:
    """``(num_nodes,)`` int64 ``1..N``: the ids of formats that number nodes from 1 (METIS,
    DIMACS, Matrix Market), so that answers name nodes as the file does."""
    return np.arange(1, num_nodes + 1, dtype=np.int64)


def warn_if_ids_lost(graph: Graph, path: Path, format_name: str, keeps: str) -> None:
    """Warn when writing drops the graph's own node ids: ``keeps`` says which ids the format can
    hold (``"1..N"``, ``"integers"``); a graph without ids of its own loses nothing."""
    ids = graph.node_ids
    if ids is None:
        return
    if keeps == "1..N" and ids.dtype.kind in "iu" and np.array_equal(ids, one_based_ids(graph.num_nodes)):
        return
    if keeps == "integers" and ids.dtype.kind in "iu":
        return
    warnings.warn(
        f"{path}: {format_name} holds node ids {keeps} only, so the graph's own ids ({graph.describe_ids()}) are replaced by "
        f"positions; write .npz or GraphML to keep them",
        GraphInputWarning,
        stacklevel=3,
    )


def one_direction(graph: Graph) -> np.ndarray:
    """Each undirected edge once, ``lo < hi``: ``(2, |E|)``. :func:`from_edges` puts these first."""
    return graph.edge_index[:, : graph.num_edges]


def weights_of(path: Path, values: Sequence[bytes | str | None], kind: str) -> np.ndarray | None:
    """The weights a file gives its nodes or edges (``None`` where one has none) as float64
    ``(len(values),)``, or None when none has one, or only some (with a warning)."""
    given = sum(value is not None for value in values)
    if given == 0:
        return None
    if given < len(values):
        warnings.warn(
            f"{path}: {given} of {len(values)} {kind}s have a weight, so the weights are not used; give every {kind} a weight",
            GraphInputWarning,
            stacklevel=3,
        )
        return None
    try:
        return np.array([float(value) for value in values if value is not None], dtype=np.float64)  # every one given here
    except ValueError:
        bad = next(value for value in values if not _is_number(value))
        text = bad.decode(errors="backslashreplace") if isinstance(bad, bytes) else str(bad)
        raise GraphFileError(path, f"{kind} weight {text[:30]!r} is not a number") from None


def _is_number(value: bytes | str | None) -> bool:
    try:
        float(value)  # type: ignore[arg-type]  # None is a TypeError, caught
    except (TypeError, ValueError):
        return False
    return True
