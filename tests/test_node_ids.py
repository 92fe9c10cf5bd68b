"""The graph's own node ids: read from every format that has them, kept through writing and
conversion where the format can hold them, and a warning where it cannot."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.errors import GraphFileError, GraphInputWarning
from graphtransfer.graphs import Graph, convert_graph, from_edges, read_graph, summarize_file, write_graph
from graphtransfer.graphs.graph import induced_subgraph, with_ids


def id_edges(graph: Graph) -> set[frozenset]:
    """Each undirected edge once, named by the graph's own ids."""
    ids = graph.ids().tolist()
    return {frozenset((ids[u], ids[v])) for u, v in graph.edge_index.T.tolist()}


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


SNAP = "# ids that are not 0..N-1\n10 20\n20 30\n30 40\n40 100\n"
SNAP_EDGES = {frozenset(pair) for pair in [(10, 20), (20, 30), (30, 40), (40, 100)]}


def test_edge_list_keeps_its_ids(tmp_path):
    graph = read_graph(write(tmp_path, "g.txt", SNAP))
    assert graph.node_ids.tolist() == [10, 20, 30, 40, 100]
    assert graph.original_id(4) == 100
    assert id_edges(graph) == SNAP_EDGES


def test_ids_that_are_the_positions_are_not_stored(tmp_path):
    graph = read_graph(write(tmp_path, "g.txt", "0 1\n1 2\n"))
    assert graph.node_ids is None
    assert graph.ids().tolist() == [0, 1, 2]


@pytest.mark.parametrize("suffix", [".txt", ".gml", ".graphml", ".npz", ".pt"])
def test_integer_ids_survive_a_round_trip(tmp_path, suffix):
    graph = read_graph(write(tmp_path, "g.txt", SNAP))
    write_graph(graph, tmp_path / f"out{suffix}")
    again = read_graph(tmp_path / f"out{suffix}")
    assert sorted(again.ids().tolist()) == [10, 20, 30, 40, 100]
    assert id_edges(again) == SNAP_EDGES


def test_gml_keeps_declared_ids_in_declaration_order(tmp_path):
    text = "graph [\n node [ id 7 ]\n node [ id 3 ]\n node [ id -2 ]\n edge [ source 7 target -2 ]\n edge [ source 3 target 7 ]\n]\n"
    graph = read_graph(write(tmp_path, "g.gml", text))
    assert graph.node_ids.tolist() == [7, 3, -2]
    assert id_edges(graph) == {frozenset((7, -2)), frozenset((3, 7))}


def test_graphml_names_survive_graphml_and_npz(tmp_path):
    text = (
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph edgedefault="undirected">'
        '<node id="paris"/><node id="lyon"/><node id="07"/><edge source="paris" target="lyon"/><edge source="07" target="paris"/>'
        "</graph></graphml>"
    )
    graph = read_graph(write(tmp_path, "g.graphml", text))
    assert graph.node_ids.tolist() == ["paris", "lyon", "07"]  # "07" is a name: as an integer it would read back as "7"
    expected = {frozenset(("paris", "lyon")), frozenset(("07", "paris"))}
    for suffix in (".graphml", ".npz"):
        write_graph(graph, tmp_path / f"out{suffix}")
        assert id_edges(read_graph(tmp_path / f"out{suffix}")) == expected


def test_graphml_integer_ids_are_integers(tmp_path):
    text = (
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns"><graph>'
        '<node id="5"/><node id="9"/><edge source="5" target="9"/></graph></graphml>'
    )
    graph = read_graph(write(tmp_path, "g.graphml", text))
    assert graph.node_ids.dtype == np.int64 and graph.node_ids.tolist() == [5, 9]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("g.graph", "3 2\n2\n1 3\n2\n"),
        ("g.col", "p edge 3 2\ne 1 2\ne 2 3\n"),
        ("g.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n3 2\n"),
    ],
)
def test_one_based_formats_report_one_based_ids_and_round_trip(tmp_path, name, text):
    graph = read_graph(write(tmp_path, name, text))
    assert graph.node_ids.tolist() == [1, 2, 3]
    assert id_edges(graph) == {frozenset((1, 2)), frozenset((2, 3))}
    assert graph.describe_ids() == "1..3 (1-based)"
    out = tmp_path / f"out{name[1:]}"
    write_graph(graph, out)  # no warning: 1..N is what these formats hold
    assert id_edges(read_graph(out)) == id_edges(graph)


@pytest.mark.parametrize("suffix", [".graph", ".col", ".mtx"])
def test_writing_ids_a_format_cannot_hold_warns(tmp_path, suffix):
    graph = read_graph(write(tmp_path, "g.txt", SNAP))
    with pytest.warns(GraphInputWarning, match=r"graph's own ids \(10..100, not contiguous\) are replaced by positions"):
        write_graph(graph, tmp_path / f"out{suffix}")


def test_names_in_an_edge_list_warn_and_write_positions(tmp_path):
    graph = with_ids(from_edges(np.array([0]), np.array([1]), 2)[0], np.array(["a", "b"]))
    with pytest.warns(GraphInputWarning, match="holds node ids integers only"):
        write_graph(graph, tmp_path / "out.txt")
    assert read_graph(tmp_path / "out.txt").node_ids is None


def test_conversion_keeps_ids_through_npz_and_graphml(tmp_path):
    source = write(tmp_path, "g.txt", SNAP)
    convert_graph(source, tmp_path / "g.npz")
    convert_graph(tmp_path / "g.npz", tmp_path / "g.graphml")
    graph, _, _ = convert_graph(tmp_path / "g.graphml", tmp_path / "back.txt")
    assert id_edges(graph) == SNAP_EDGES
    assert id_edges(read_graph(tmp_path / "back.txt")) == SNAP_EDGES


def test_npz_with_repeated_ids_is_refused(tmp_path):
    path = tmp_path / "g.npz"
    np.savez(path, edge_index=np.array([[0], [1]]), num_nodes=np.int64(2), node_ids=np.array([4, 4]))
    with pytest.raises(GraphFileError, match=r"node_ids holds 1 repeated id\(s\)"):
        read_graph(path)


def test_info_describes_the_ids(tmp_path):
    assert summarize_file(write(tmp_path, "g.txt", SNAP)).ids == "10..100, not contiguous"
    assert summarize_file(write(tmp_path, "h.txt", "0 1\n")).ids == "0..1"


def test_a_subgraph_keeps_the_ids_of_its_nodes(tmp_path):
    graph = read_graph(write(tmp_path, "g.txt", SNAP))
    sub, positions = induced_subgraph(graph, np.array([False, True, True, True, False]))
    assert positions.tolist() == [1, 2, 3]
    assert id_edges(sub) == {frozenset((20, 30)), frozenset((30, 40))}


def test_graphs_info_prints_the_ids(tmp_path):
    result = CliRunner().invoke(app, ["graphs", "info", str(write(tmp_path, "g.txt", SNAP))])
    assert result.exit_code == 0, result.output
    assert "node ids  10..100, not contiguous" in result.output
