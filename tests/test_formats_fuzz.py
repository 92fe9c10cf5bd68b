"""Property tests: random graphs survive every writer and reader; randomly damaged files give a
valid graph or a GraphInputError, never another exception (nor a traceback on the command line)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtransfer.errors import GraphInputError
from graphtransfer.graphs import FORMATS, Graph, from_edges, read_graph, write_graph
from graphtransfer.graphs.graph import MAX_NODES

FUZZED = ["edgelist", "metis", "dimacs", "mtx", "graphml", "gml", "npz", "pyg"]
KEEP_ISOLATED = [name for name in FUZZED if name != "edgelist"]  # an edge list has no line for them
# Text a mutation may insert: signs, fractions, huge numbers, comment and format markers, binary.
TOKENS = [
    b"-1",
    b"0",
    b"x",
    b"1.5",
    b"99999999999999999999",
    b"1e3",
    b"nan",
    b"\n",
    b" ",
    b"#",
    b"%",
    b"c",
    b"e",
    b"p",
    b"[",
    b"]",
    b'"',
    b"<",
    b"/>",
    b"&",
    b"\x00",
    b"\xff",
    b"7",
    b"12345",
]


def assert_valid(graph: Graph) -> None:
    """What every reader promises: int64 ``(2, 2|E|)``, ids in range, simple and symmetric."""
    edge_index, n = graph.edge_index, graph.num_nodes
    assert isinstance(graph, Graph) and 1 <= n <= MAX_NODES
    assert edge_index.dtype == np.int64 and edge_index.ndim == 2 and edge_index.shape[0] == 2 and edge_index.shape[1] % 2 == 0
    if edge_index.size:
        assert edge_index.min() >= 0 and edge_index.max() < n
    assert (edge_index[0] != edge_index[1]).all()
    forward, backward = edge_index[0] * n + edge_index[1], edge_index[1] * n + edge_index[0]
    assert np.array_equal(np.sort(forward), np.sort(backward))
    assert np.unique(forward).size == forward.size


@st.composite
def graphs(draw, min_nodes: int = 1) -> Graph:
    num_nodes = draw(st.integers(min_nodes, 24))
    pairs = draw(st.lists(st.tuples(st.integers(0, num_nodes - 1), st.integers(0, num_nodes - 1)), max_size=60))
    pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    graph, _, _ = from_edges(pairs[:, 0], pairs[:, 1], num_nodes, "drawn")
    return graph


def edge_set(graph: Graph) -> set[tuple[int, int]]:
    return set(map(tuple, graph.edge_index.T.tolist()))


@pytest.mark.parametrize("name", KEEP_ISOLATED)
@settings(max_examples=25, deadline=None)
@given(graph=graphs())
def test_written_graphs_read_back_exactly(name, graph, tmp_path_factory):
    path = tmp_path_factory.mktemp(name) / f"g{FORMATS[name].extensions[0]}"
    write_graph(graph, path)
    back = read_graph(path)
    assert back.num_nodes == graph.num_nodes
    if name in ("graphml", "gml"):  # ids are mapped in document order, which our writers keep as 0..N-1
        assert edge_set(back) == edge_set(graph)
    else:
        assert np.array_equal(np.sort(back.edge_index, axis=1), np.sort(graph.edge_index, axis=1))


@st.composite
def damaged(draw, original: bytes) -> bytes:
    """``original`` after one to three random truncations, byte flips, insertions, or deleted or
    repeated lines."""
    data = original
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["truncate", "flip", "insert", "delete line", "repeat line"]))
        if kind == "truncate":
            data = data[:at]
        elif kind == "flip" and data:
            at = min(at, len(data) - 1)
            data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
        elif kind == "insert":
            data = data[:at] + draw(st.sampled_from(TOKENS)) + data[at:]
        else:
            lines = data.split(b"\n")
            i = min(at, len(lines) - 1)
            lines[i : i + 1] = [] if kind == "delete line" else [lines[i], lines[i]]
            data = b"\n".join(lines)
    return data


@pytest.fixture(scope="module")
def valid_files(tmp_path_factory) -> dict[str, bytes]:
    """One small valid file per format, its bytes; the edge list and METIS ones with comments."""
    folder = tmp_path_factory.mktemp("valid")
    pairs = np.array([(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (4, 5)], dtype=np.int64)
    graph, _, _ = from_edges(pairs[:, 0], pairs[:, 1], 7, "fuzz")
    files = {}
    for name in FUZZED:
        path = folder / f"g{FORMATS[name].extensions[0]}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # node 6 is isolated on purpose; the edge list alone cannot keep it
            write_graph(graph, path)
        files[name] = path.read_bytes()
    files["metis"] = b"% comment\n" + files["metis"]
    return files


@pytest.mark.parametrize("name", FUZZED)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_damaged_files_give_a_graph_or_a_graph_input_error(name, data, valid_files, tmp_path_factory):
    path = tmp_path_factory.mktemp("damaged") / f"g{FORMATS[name].extensions[0]}"
    path.write_bytes(data.draw(damaged(valid_files[name])))
    for chosen in (None, name):  # detected from the content, and forced
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                graph = read_graph(path, chosen)
            except GraphInputError as err:
                assert str(err).startswith(str(path)) or "format" in str(err)
                continue
        assert_valid(graph)


@pytest.mark.parametrize("name", FUZZED)
@settings(max_examples=40, deadline=None)
@given(content=st.binary(max_size=200) | st.text(alphabet='0123456789 -\n#%[]"<>/=epcgrahidx', max_size=200).map(str.encode))
def test_arbitrary_bytes_give_a_graph_or_a_graph_input_error(name, content, tmp_path_factory):
    path = tmp_path_factory.mktemp("arbitrary") / f"g{FORMATS[name].extensions[0]}"
    path.write_bytes(content)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            graph = read_graph(path, name)
        except GraphInputError:
            return
    assert_valid(graph)
