"""Every bad graph input we know of gets a GraphInputError naming the file, the line and the cause.

tests/BAD_INPUTS.md is the table of these inputs and the real messages; this test fails when it
drifts. Regenerate it with:

    GRAPHTRANSFER_WRITE_BAD_INPUTS=1 .venv/bin/python -m pytest tests/test_bad_inputs.py
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from graphtransfer.errors import GraphFileError, GraphInputError
from graphtransfer.graphs import read_graph

TABLE = Path(__file__).with_name("BAD_INPUTS.md")
MTX = b"%%MatrixMarket matrix coordinate pattern general\n"
GRAPHML = b'<?xml version="1.0"?>\n<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n<graph edgedefault="undirected">\n'


class NotATensor:
    """Stands for any class a torch.save file could ask the unpickler to build."""


def npz_bytes(**arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def torch_bytes(content: object) -> bytes:
    buffer = io.BytesIO()
    torch.save(content, buffer)
    return buffer.getvalue()


@dataclass(frozen=True)
class Bad:
    """One bad input: a file name (its extension picks the format unless the content says
    otherwise), what it holds, and the line the message must name (None: no line applies)."""

    what: str
    name: str
    content: bytes | Callable[[], bytes] | None  # None: a folder of that name
    line: int | None = None
    format: str | None = None

    def make(self, folder: Path) -> Path:
        path = folder / self.name
        if self.content is None:
            path.mkdir()
        elif self.content in SPECIAL:
            SPECIAL[self.content](path)
        else:
            path.write_bytes(self.content() if callable(self.content) else self.content)
        return path


SPECIAL = {  # what stands in for a file, by the bytes naming it in a case
    b"<fifo>": lambda path: os.mkfifo(path),
    b"<link to /dev/zero>": lambda path: path.symlink_to("/dev/zero"),
    b"<link to /dev/urandom>": lambda path: path.symlink_to("/dev/urandom"),
}


def one_line_of_values(count: int) -> bytes:
    return b" ".join(b"%d" % i for i in range(count)) + b"\n"


CASES = [
    Bad("a folder where a file was expected", "graphs.txt", None),
    Bad("a FIFO (reading it would wait for a writer)", "pipe.txt", b"<fifo>"),
    Bad("a link to /dev/zero (reading it would never end)", "zero.txt", b"<link to /dev/zero>"),
    Bad("a link to /dev/urandom", "random.npz", b"<link to /dev/urandom>"),
    Bad("empty file", "empty.txt", b""),
    Bad("only whitespace", "blank.graph", b" \n\n"),
    Bad("only comments", "comments.txt", b"# nothing here\n"),
    Bad("binary garbage (NUL bytes)", "garbage.txt", bytes(range(256)), 1),
    Bad("binary garbage (no NUL)", "garbage2.txt", b"1 2\n\xff\xfe\x81\x9c\n", 2),
    Bad("edge list: non-integer id", "words.txt", b"1 2\n3 x\n", 2),
    Bad("edge list: fractional id", "fraction.txt", b"1 2\n1.5 3\n", 2),
    Bad("edge list: negative id", "negative.txt", b"1 2\n3 -4\n", 2),
    Bad("edge list: id beyond int64", "huge.txt", b"1 2\n99999999999999999999 1\n", 2),
    Bad("edge list: the largest uint64 id (was read as -1)", "u64.txt", b"0 1\n1 18446744073709551615\n", 2),
    Bad(
        "npz: edge_index of uint64 holding 2^64-1 (was called the negative id -1)",
        "u64-edges.npz",
        lambda: npz_bytes(edge_index=np.array([[0, 1], [1, 2**64 - 1]], dtype=np.uint64)),
    ),
    Bad(
        "PyTorch file: edge_index of uint64 holding 2^64-1 (was called the negative id -1)",
        "u64-edges.pt",
        lambda: torch_bytes({"edge_index": torch.tensor([[0, 1], [1, 2**64 - 1]], dtype=torch.uint64)}),
    ),
    Bad("edge list: truncated last line", "cut.txt", b"1 2\n2 3\n3", 3),
    Bad("edge list: ragged columns", "ragged.txt", b"1 2 0.5\n2 3\n", 2),
    Bad("edge list: fractional id beside weights", "weights.txt", b"1 2 0.5\n2.5 3 1\n", 2),
    Bad("edge list: NaN weight", "nan-weight.txt", b"0 1 1\n1 2 nan\n", 2),
    Bad("edge list: infinite weight", "inf-weight.txt", b"0 1 inf\n", 1),
    Bad("edge list: negative weight", "neg-weight.txt", b"0 1 0.5\n1 2 -2\n", 2),
    Bad("edge list: weights adding up past float32 (1e308 each)", "big-weights.txt", b"0 1 1e308\n1 2 1e308\n2 0 1e308\n"),
    Bad("edge list: 10 MB on one line (no line breaks)", "one-line.txt", lambda: one_line_of_values(1_500_000), 1),
    Bad("METIS: header not numbers", "words.graph", b"three 2\n2\n1 3\n2\n", 1),
    Bad("METIS: header with 5 values", "long.graph", b"3 2 0 1 7\n2\n1 3\n2\n", 1),
    Bad("METIS: fmt not 0/1 flags", "fmt.graph", b"3 2 2\n2\n1 3\n2\n", 1),
    Bad("METIS: fewer node lines than n (truncated)", "cut.graph", b"3 2\n2\n1 3", 3),
    Bad("METIS: more node lines than n", "extra.graph", b"2 1\n2\n1\n1\n", 4),
    Bad("METIS: m disagrees with the lists", "count.graph", b"3 5\n2\n1 3\n2\n", 1),
    Bad("METIS: neighbour beyond n", "range.graph", b"3 2\n2\n1 4\n2\n", 3),
    Bad("METIS: neighbour 0 (ids are 1-based)", "zero.graph", b"3 2\n0\n1 3\n2\n", 2),
    Bad("METIS: negative neighbour", "negative.graph", b"3 2\n-2\n1 3\n2\n", 2),
    Bad("METIS: non-integer neighbour", "words2.graph", b"3 2\n2\nx 3\n2\n", 3),
    Bad("METIS: edge weight missing (fmt 1)", "weights.graph", b"2 1 1\n2 5\n1\n", 3),
    Bad("METIS: negative edge weight (fmt 1)", "negative-weight.graph", b"3 2 1\n2 -4\n1 -4 3 1\n2 1\n", 2),
    Bad("METIS: zero nodes", "none.graph", b"0 0\n", 1),
    Bad("DIMACS: no p line", "nop.col", b"c only\ne 1 2\n"),
    Bad("DIMACS: p line not numbers", "badp.col", b"p edge x 3\n", 1),
    Bad("DIMACS: e line before p line", "order.col", b"e 1 2\np edge 3 1\n", 1),
    Bad("DIMACS: fewer e lines than M (truncated)", "cut.col", b"p edge 3 2\ne 1 2\n", 1),
    Bad("DIMACS: e line with one id", "short.col", b"p edge 3 1\ne 1\n", 2),
    Bad("DIMACS: node beyond N", "range.col", b"p edge 3 1\ne 1 4\n", 2),
    Bad("DIMACS: non-integer node", "words.col", b"p edge 3 1\ne 1 b\n", 2),
    Bad("DIMACS: unknown line", "letter.col", b"p edge 3 1\nx 1 2\n", 2),
    Bad("MTX: no banner", "nobanner.mtx", b"3 3 1\n1 2\n", 1),
    Bad("MTX: dense array layout", "dense.mtx", b"%%MatrixMarket matrix array real general\n2 2\n1\n0\n0\n1\n", 1),
    Bad("MTX: size line with 2 values", "size.mtx", MTX + b"3 3\n1 2\n", 2),
    Bad("MTX: fewer entries than declared (truncated)", "cut.mtx", MTX + b"3 3 2\n1 2\n", 4),
    Bad("MTX: row beyond rows", "range.mtx", MTX + b"3 3 1\n4 1\n", 3),
    Bad("MTX: index 0 (ids are 1-based)", "zero.mtx", MTX + b"3 3 1\n0 1\n", 3),
    Bad("MTX: entry with 3 values in a pattern matrix", "cols.mtx", MTX + b"3 3 1\n1 2 3\n", 3),
    Bad("MTX: fractional index", "fraction.mtx", b"%%MatrixMarket matrix coordinate real general\n3 3 1\n1.5 2 1.0\n", 3),
    Bad("GraphML: truncated document", "cut.graphml", GRAPHML + b'<node id="a"/>\n<node id="b"/>\n<edge source="a" tar', 6),
    Bad(
        "GraphML: edge to an undeclared node",
        "dangling.graphml",
        GRAPHML + b'<node id="a"/>\n<edge source="a" target="z"/>\n</graph></graphml>\n',
        5,
    ),
    Bad("GraphML: node without id", "noid.graphml", GRAPHML + b"<node/>\n</graph></graphml>\n", 4),
    Bad("GraphML: duplicate node id", "twice.graphml", GRAPHML + b'<node id="a"/>\n<node id="a"/>\n</graph></graphml>\n', 5),
    Bad(
        "GraphML: DOCTYPE (entity expansion)",
        "doctype.graphml",
        b'<?xml version="1.0"?>\n<!DOCTYPE graphml [<!ENTITY a "aaaa">]>\n<graphml/>\n',
        2,
    ),
    Bad("GraphML: another XML document", "other.graphml", b"<html><body/></html>\n", 1),
    Bad("GraphML: binary garbage", "garbage.graphml", b"<graphml>\xff\xfe\x00\x81</graphml>", 1),
    Bad("GML: truncated", "cut.gml", b"graph [\n  node [ id 1 ]\n  node [ id 2", 3),
    Bad("GML: edge to an undeclared node", "dangling.gml", b"graph [\n  node [ id 1 ]\n  edge [ source 1 target 9 ]\n]\n", 3),
    Bad("GML: node id not an integer", "label.gml", b'graph [\n  node [ id "a" ]\n]\n', 2),
    Bad("GML: node without id", "noid.gml", b'graph [\n  node [ label "a" ]\n]\n', 2),
    Bad("GML: string not closed", "quote.gml", b'graph [\n  node [ id 1 label "a ]\n]\n', 2),
    Bad("GML: stray ]", "stray.gml", b"graph [\n  node [ id 1 ]\n]\n]\n", 4),
    Bad("GML: no graph", "nograph.gml", b"Creator 1\n", None, "gml"),
    Bad(".npz: not a zip archive", "text.npz", b"0 1\n1 2\n"),
    Bad(".npz: truncated archive", "cut.npz", lambda: npz_bytes(edge_index=np.array([[0, 1], [1, 2]]))[:200]),
    Bad(".npz: no edge_index", "other.npz", lambda: npz_bytes(edges=np.array([[0, 1], [1, 2]]))),
    Bad(".npz: edge_index of shape (E, 2)", "transposed.npz", lambda: npz_bytes(edge_index=np.array([[0, 1], [1, 2], [2, 3]]))),
    Bad(".npz: float edge_index", "float.npz", lambda: npz_bytes(edge_index=np.array([[0.0, 1.0], [1.0, 2.0]]))),
    Bad(".npz: negative id", "negative.npz", lambda: npz_bytes(edge_index=np.array([[0, -1], [1, 2]]))),
    Bad(".npz: id beyond num_nodes", "range.npz", lambda: npz_bytes(edge_index=np.array([[0, 1], [1, 7]]), num_nodes=np.int64(3))),
    Bad(".npz: pickled objects", "pickled.npz", lambda: npz_bytes(edge_index=np.array([object()], dtype=object))),
    Bad(".npz: NaN edge weight", "nan.npz", lambda: npz_bytes(edge_index=np.array([[0, 1], [1, 2]]), edge_weight=np.array([1.0, np.nan]))),
    Bad(".npz: edge weights of 1e308", "big.npz", lambda: npz_bytes(edge_index=np.array([[0, 1], [1, 2]]), edge_weight=np.full(2, 1e308))),
    Bad(
        ".npz: NaN node weight",
        "nan-node.npz",
        lambda: npz_bytes(edge_index=np.array([[0, 1], [1, 2]]), node_weight=np.array([1.0, np.nan, 2.0])),
    ),
    Bad("PyTorch: not a torch file", "text.pt", b"0 1\n1 2\n"),
    Bad("PyTorch: truncated", "cut.pt", lambda: torch_bytes({"edge_index": torch.tensor([[0, 1], [1, 2]])})[:300]),
    Bad("PyTorch: dict without edge_index", "other.pt", lambda: torch_bytes({"x": torch.zeros(3, 2)})),
    Bad("PyTorch: an arbitrary pickled class", "class.pt", lambda: torch_bytes({"edge_index": NotATensor()})),
    Bad("PyTorch: float edge_index", "float.pt", lambda: torch_bytes(torch.tensor([[0.0, 1.0], [1.0, 2.0]]))),
    Bad("generator spec: invalid JSON", "broken.json", b'{"generator": "erdos_renyi",\n "num_nodes": }\n', 2),
    Bad("generator spec: unknown generator", "unknown.json", b'{"generator": "watts_strogatz", "num_nodes": 10}'),
    Bad("generator spec: bad parameter", "bad.json", b'{"generator": "erdos_renyi", "num_nodes": -5, "avg_degree": 3, "seed": 0}'),
    Bad("a format name that does not exist", "g.txt", b"1 2\n", None, "edges"),
]


def message_for(case: Bad, folder: Path) -> tuple[GraphInputError, str]:
    path = case.make(folder)
    with pytest.raises(GraphInputError) as caught:
        read_graph(path, case.format)
    return caught.value, str(caught.value).replace(f"{folder}/", "")


@pytest.mark.parametrize("case", CASES, ids=[c.what for c in CASES])
def test_bad_input_names_the_file_line_and_cause(case, tmp_path):
    error, message = message_for(case, tmp_path)
    if case.format != "edges":  # an unknown format name is about the argument, not the file
        assert message.startswith(case.name), message
    if case.line is not None:
        assert isinstance(error, GraphFileError) and error.line == case.line, message
        assert f", line {case.line}: " in message


def test_bad_inputs_table_is_current(tmp_path):
    rows = []
    for number, case in enumerate(CASES):
        folder = tmp_path / str(number)
        folder.mkdir()
        rows.append(f"| {case.what} | `{case.name}` | {_cell(message_for(case, folder)[1])} |")
    table = (
        "# Bad graph inputs and their messages\n\n"
        "Every input below is refused with a `GraphInputError` (exit code 2 on the command line). Generated by\n"
        "`GRAPHTRANSFER_WRITE_BAD_INPUTS=1 .venv/bin/python -m pytest tests/test_bad_inputs.py` from the real\n"
        "messages; `tests/test_bad_inputs.py` fails when this file is out of date.\n\n"
        "| input | file | message |\n|---|---|---|\n" + "\n".join(rows) + "\n"
    )
    if os.environ.get("GRAPHTRANSFER_WRITE_BAD_INPUTS"):
        TABLE.write_text(table)
    assert TABLE.read_text() == table, "tests/BAD_INPUTS.md is out of date; regenerate it (see this module's docstring)"


def _cell(text: str) -> str:
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def test_a_truncated_zip_member_is_refused_before_allocating(tmp_path):
    """A header that promises a huge array must not make the reader allocate it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        header = "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 10000000000000), }"
        archive.writestr(
            "edge_index.npy",
            b"\x93NUMPY\x01\x00" + len(header.ljust(117) + "\n").to_bytes(2, "little") + (header.ljust(117) + "\n").encode(),
        )
    (tmp_path / "huge.npz").write_bytes(buffer.getvalue())
    with pytest.raises(GraphFileError, match="declares shape"):
        read_graph(tmp_path / "huge.npz")
