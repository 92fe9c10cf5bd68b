"""Scanning text graph files in bulk with numpy: where each line is, how many tokens it holds, and
all numbers at once — with the exact line and token when something cannot be read.

A Python loop over a million lines costs about a second; these passes cost hundredths. Errors
are located afterwards, by bisection, so the fast path pays nothing for good messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from graphtransfer.errors import GraphFileError

_NEWLINE, _SPACE = ord("\n"), ord(" ")
# int64 saturates instead of failing on overflow; a float parse of an id is exact below 2^53.
_INT_LIMIT, _FLOAT_LIMIT = np.iinfo(np.int64).max, 2.0**53


@dataclass(frozen=True)
class Lines:
    """The lines of a text body, found in one vectorized pass.

    Shapes, all ``(L,)`` for ``L`` lines (the text after the last newline is a line, even if empty):
        starts, ends: byte offsets of each line, ``ends`` exclusive and before the newline.
        counts: whitespace-separated tokens on each line.
        first_at: byte offset of the line's first token (meaningless on a blank line).
        first: first byte of the line's first token, 0 on a blank line.
    """

    starts: np.ndarray
    ends: np.ndarray
    counts: np.ndarray
    first_at: np.ndarray
    first: np.ndarray

    def starting_with(self, chars: bytes) -> np.ndarray:
        """``(L,)`` bool: lines whose first token starts with one of ``chars``."""
        return np.isin(self.first, np.frombuffer(chars, dtype=np.uint8))

    def without(self, mask: np.ndarray) -> Lines:
        """The same lines with those in ``mask`` counted as blank (after :func:`blank_lines`)."""
        return replace(self, counts=np.where(mask, 0, self.counts), first=np.where(mask, 0, self.first))

    def line_of_token(self, index: int) -> int:
        """1-based line number of the ``index``-th token (0-based, over the whole body)."""
        return int(np.searchsorted(np.cumsum(self.counts), index, side="right")) + 1


def scan_lines(body: bytes) -> Lines:
    """Find every line and count its tokens (runs of non-whitespace bytes)."""
    text = np.frombuffer(body, dtype=np.uint8)
    space = (text == _SPACE) | ((text >= 9) & (text <= 13))  # the bytes C's isspace accepts
    token_start = ~space
    token_start[1:] &= space[:-1]
    newlines = np.flatnonzero(text == _NEWLINE)
    starts = np.concatenate([[0], newlines + 1])
    ends = np.concatenate([newlines, [text.size]])
    # tokens_before[i]: tokens starting before byte i; int32 halves the memory of this pass.
    tokens_before = np.zeros(text.size + 1, dtype=np.int32 if text.size < 2**31 else np.int64)
    np.cumsum(token_start, out=tokens_before[1:])
    counts = (tokens_before[ends] - tokens_before[starts]).astype(np.int64)
    filled = counts > 0
    first_at = starts.copy()
    first_at[filled] = np.flatnonzero(token_start)[tokens_before[starts[filled]]]
    first = np.zeros(starts.size, dtype=np.uint8)
    first[filled] = text[first_at[filled]]
    return Lines(starts, ends, counts, first_at, first)


def blank_lines(body: bytes, lines: Lines, mask: np.ndarray) -> bytes:
    """``body`` with the lines in ``mask`` overwritten by spaces, so that numpy can parse the rest
    in one call and every other line keeps its number."""
    if not mask.any():
        return body
    text = np.frombuffer(body, dtype=np.uint8).copy()
    # Mark each blanked range's start +1 and end -1; a running sum is then 1 exactly inside one.
    edges = np.zeros(text.size + 1, dtype=np.int8)
    edges[lines.starts[mask]] += 1
    edges[lines.ends[mask]] -= 1
    text[np.cumsum(edges[:-1], dtype=np.int8) > 0] = _SPACE
    return text.tobytes()


def parse_numbers(path: Path, body: bytes, lines: Lines, dtype: type, what: str) -> np.ndarray:
    """Every token of ``body`` as ``dtype``, ``(T,)`` in file order, where ``T = lines.counts.sum()``.

    ``what`` names a token as the format sees it (``"an integer node id"``) for the error raised
    on the first token numpy cannot read; integers too large for int64 are refused too.
    """
    expected = int(lines.counts.sum())
    if not expected:
        return np.empty(0, dtype=dtype)
    values: np.ndarray | None
    try:
        values = np.fromstring(body, dtype=dtype, sep=" ")
    except ValueError:
        values = None
    if values is None or values.size != expected:
        line = _first_unreadable_line(body, lines, dtype)
        row = body[lines.starts[line] : lines.ends[line]]
        raise GraphFileError(path, f"{show(first_bad_token(row, dtype) or row.strip())} is not {what}", line + 1)
    if dtype is np.int64 and values.max() == _INT_LIMIT:
        index = int(np.argmax(values == _INT_LIMIT))
        raise GraphFileError(path, f"{show(_token(body, lines, index))} is too large; expected {what}", lines.line_of_token(index))
    return values


def check_ids(path: Path, ids: np.ndarray, lines: Lines, token_of: Callable[[int], int], low: int, high: int | None, what: str) -> None:
    """Every id in ``ids`` must be a whole number in ``low..high`` (``high=None``: no upper bound);
    the first that is not is named with its line. ``token_of(k)`` is the token position of
    ``ids[k]`` in the body, for :meth:`Lines.line_of_token`. Float ids come from files with
    weight columns, parsed as floats as a whole."""
    if ids.dtype.kind == "f":
        fractional = (ids != np.floor(ids)) | (np.abs(ids) >= _FLOAT_LIMIT)
        if fractional.any():
            k = int(np.argmax(fractional))
            raise GraphFileError(path, f"{float(ids[k]):g} is not an integer {what}", lines.line_of_token(token_of(k)))
    outside = (ids < low) if high is None else (ids < low) | (ids > high)
    if outside.any():
        k = int(np.argmax(outside))
        line = lines.line_of_token(token_of(k))
        if high is None:
            raise GraphFileError(path, f"negative {what} {int(ids[k])}; ids must be non-negative integers", line)
        raise GraphFileError(path, f"{what} {int(ids[k])} is outside {low}..{high}", line)


def check_weights(
    path: Path, weights: np.ndarray, lines: Lines, token_of: Callable[[int], int], fix: str = "fix it, or drop the weight column"
) -> None:
    """Edge weights a file holds must be finite and non-negative, whether or not the task reads
    them: a NaN, an infinity or a negative weight is named with its line. ``token_of(k)`` is the
    token position of ``weights[k]``, as for :func:`check_ids`."""
    bad = ~np.isfinite(weights) | (weights < 0)
    if bad.any():
        k = int(np.argmax(bad))
        raise GraphFileError(
            path,
            f"edge weight {float(weights[k]):g} is not a finite non-negative number; {fix}",
            lines.line_of_token(token_of(k)),
        )


def format_rows(rows: np.ndarray, prefix: str = "") -> str:
    """``(R, C)`` integers as ``R`` lines of ``C`` space-separated numbers after ``prefix``; one
    %-format over all of them is several times faster than ``np.savetxt``, which goes row by row."""
    line = prefix + " ".join(["%d"] * rows.shape[1]) + "\n"
    return (line * rows.shape[0]) % tuple(rows.ravel().tolist())


def header_numbers(path: Path, body: bytes, lines: Lines, line: int, what: str) -> list[int]:
    """The non-negative integers of one header line (0-based ``line``), named in errors by ``what``."""
    tokens = body[lines.starts[line] : lines.ends[line]].split()
    for token in tokens:
        if not token.isdigit():
            raise GraphFileError(path, f"{show(token)} in the header is not a non-negative integer; expected {what}", line + 1)
        if len(token) > 18:
            raise GraphFileError(path, f"{show(token)} in the header is too large; expected {what}", line + 1)
    return [int(t) for t in tokens]


def first_bad_token(row: bytes, dtype: type) -> bytes | None:
    """The first token of ``row`` that numpy cannot read as ``dtype``, or None."""
    return next((t for t in row.split() if not _parses(t, dtype, 1)), None)


def plural(count: int, noun: str) -> str:
    """``1 value``, ``2 values``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def show(token: bytes) -> str:
    """A token as it appears in a message: quoted, undecodable bytes escaped, cut at 30 bytes."""
    return "'" + token[:30].decode(errors="backslashreplace") + "'"


def _parses(chunk: bytes, dtype: type, expected: int) -> bool:
    """True when numpy reads exactly ``expected`` numbers from ``chunk``: besides a bad token,
    a count mismatch catches a lone sign that numpy glues to the next number ("- 1")."""
    try:
        return np.fromstring(chunk, dtype=dtype, sep=" ").size == expected
    except ValueError:
        return False


def _first_unreadable_line(body: bytes, lines: Lines, dtype: type) -> int:
    """0-based index of the first line numpy cannot read, found by halving the range of lines
    that holds it; each half is parsed in bulk, so the whole search costs about one full parse."""
    good, bad = 0, lines.counts.size  # lines[:good] parse; the first failing line is before bad
    while bad - good > 1:
        mid = (good + bad) // 2
        chunk = body[lines.starts[good] : lines.ends[mid - 1]]
        expected = int(lines.counts[good:mid].sum())
        if expected == 0 or _parses(chunk, dtype, expected):
            good = mid
        else:
            bad = mid
    return good


def _token(body: bytes, lines: Lines, index: int) -> bytes:
    """The ``index``-th token of the body."""
    line = lines.line_of_token(index) - 1
    before = int(lines.counts[:line].sum())
    return body[lines.starts[line] : lines.ends[line]].split()[index - before]
