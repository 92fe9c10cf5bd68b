"""Each format family read from small hand-written files, format detection, and writing."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphtransfer.errors import GraphInputError, GraphInputWarning
from graphtransfer.graphs import detect_format, read_graph, write_graph
from tests.conftest import graph_from_pairs

MTX_HEADER = "%%MatrixMarket matrix coordinate {} {}\n"


def edges(graph) -> set[tuple[int, int]]:
    """Each undirected edge once, as (low, high)."""
    return {(u, v) for u, v in graph.edge_index.T.tolist() if u < v}


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_metis_with_comments_weights_and_an_isolated_node(tmp_path):
    # fmt 011: two node weights (ncon 2), then neighbour / edge-weight pairs; node 4 has no edges.
    path = write(
        tmp_path, "g.graph", "% a triangle and a lone node\n4 3 011 2\n5 6 2 10 3 20\n7 8 1 10 3 30\n% inside\n9 9 1 20 2 30\n0 0\n"
    )
    graph = read_graph(path)
    assert graph.num_nodes == 4
    assert edges(graph) == {(0, 1), (0, 2), (1, 2)}


def test_metis_blank_line_is_a_node_without_neighbours(tmp_path):
    graph = read_graph(write(tmp_path, "g.graph", "3 1\n2\n1\n\n"))
    assert graph.num_nodes == 3 and edges(graph) == {(0, 1)}


def test_metis_lists_that_are_not_symmetric_warn(tmp_path):
    # Node 1 lists 2 and 3, node 2 lists 3, node 3 lists 2: four entries as m = 2 asks, three edges.
    with pytest.warns(GraphInputWarning, match="not symmetric.*read 3 edges, the header declares 2"):
        graph = read_graph(write(tmp_path, "g.graph", "3 2\n2 3\n3\n2\n"))
    assert edges(graph) == {(0, 1), (0, 2), (1, 2)}


def test_dimacs_both_directions_and_col_problem(tmp_path):
    path = write(tmp_path, "g.col", "c a path\nc of three nodes\np col 3 3\ne 1 2\ne 2 1\ne 2 3\n")
    graph = read_graph(path)
    assert graph.num_nodes == 3 and edges(graph) == {(0, 1), (1, 2)}


def test_mtx_general_real_matrix_drops_the_diagonal_with_a_warning(tmp_path):
    body = "% comment\n3 4 5\n1 1 1.0\n1 2 -0.5\n2 1 -0.5e0\n\n3 4 2\n2 3 1\n"
    with pytest.warns(GraphInputWarning, match="1 self-loop"):
        graph = read_graph(write(tmp_path, "g.mtx", MTX_HEADER.format("real", "general") + body))
    assert graph.num_nodes == 4  # max(rows, cols)
    assert edges(graph) == {(0, 1), (2, 3), (1, 2)}


def test_mtx_symmetric_pattern(tmp_path):
    graph = read_graph(write(tmp_path, "g.mtx", MTX_HEADER.format("pattern", "symmetric") + "3 3 2\n2 1\n3 2\n"))
    assert edges(graph) == {(0, 1), (1, 2)}


def test_graphml_with_prefixes_keys_and_data(tmp_path):
    text = """<?xml version="1.0" encoding="UTF-8"?>
<g:graphml xmlns:g="http://graphml.graphdrawing.org/xmlns">
  <g:key id="w" for="edge" attr.name="weight" attr.type="double"/>
  <g:graph edgedefault="directed">
    <g:node id="b"><g:data key="w">1</g:data></g:node>
    <g:edge source="b" target="a"><g:data key="w">2.5</g:data></g:edge>
    <g:node id="a"/>
    <g:edge source="a" target="b"/>
    <g:node id="c"/>
  </g:graph>
</g:graphml>
"""
    with pytest.warns(GraphInputWarning, match="1 of 2 edges have a weight, so the weights are not used"):
        graph = read_graph(write(tmp_path, "g.graphml", text))
    assert graph.num_nodes == 3  # ids in document order: b=0, a=1, c=2; the reverse edge is the same edge
    assert edges(graph) == {(0, 1)}


def test_gml_with_labels_nested_lists_and_comments(tmp_path):
    text = """Creator "hand"
# a comment line
graph [
  directed 0
  node [ id 10 label "ten [x]" graphics [ x 1.5 y 2 ] ]
  node [ id 20 ]
  node [ id 30 ]
  edge [ source 10 target 20 graphics [ width 2 ] ]
  edge [ target 30 source 20 ]
]
"""
    graph = read_graph(write(tmp_path, "g.gml", text))
    assert graph.num_nodes == 3 and edges(graph) == {(0, 1), (1, 2)}


def test_pytorch_dict_tensor_and_pyg_data(tmp_path):
    edge_index = torch.tensor([[0, 1], [1, 2]])
    torch.save({"edge_index": edge_index, "num_nodes": 5}, tmp_path / "dict.pt")
    torch.save({"edge_index": edge_index, "x": torch.zeros(4, 3)}, tmp_path / "features.pt")
    torch.save(edge_index, tmp_path / "tensor.pt")
    assert read_graph(tmp_path / "dict.pt").num_nodes == 5
    assert read_graph(tmp_path / "features.pt").num_nodes == 4  # the rows of x
    assert read_graph(tmp_path / "tensor.pt").num_nodes == 3
    from torch_geometric.data import Data

    torch.save(Data(edge_index=edge_index, num_nodes=6), tmp_path / "data.pt")
    graph = read_graph(tmp_path / "data.pt")
    assert graph.num_nodes == 6 and edges(graph) == {(0, 1), (1, 2)}


def test_content_outweighs_the_extension(tmp_path):
    assert detect_format(write(tmp_path, "a.txt", MTX_HEADER.format("pattern", "general") + "2 2 1\n1 2\n")) == "mtx"
    assert detect_format(write(tmp_path, "b.dat", "c hi\np edge 2 1\ne 1 2\n")) == "dimacs"
    assert detect_format(write(tmp_path, "c.txt", 'Creator "x"\ngraph [ node [ id 1 ] ]\n')) == "gml"
    assert detect_format(write(tmp_path, "d", "<graphml/>")) == "graphml"
    assert detect_format(write(tmp_path, "e.dat", "1 2\n")) == "edgelist"
    graph = graph_from_pairs([(0, 1)], 2)
    write_graph(graph, tmp_path / "f.npz")
    write_graph(graph, tmp_path / "g.pt")
    (tmp_path / "f.npz").rename(tmp_path / "f.bin")
    (tmp_path / "g.pt").rename(tmp_path / "g.bin")
    assert (detect_format(tmp_path / "f.bin"), detect_format(tmp_path / "g.bin")) == ("npz", "pyg")


def test_metis_is_told_by_extension_or_by_name(tmp_path):
    text = "3 2\n2\n1 3\n2\n"
    assert detect_format(write(tmp_path, "g.graph", text)) == "metis"
    path = write(tmp_path, "g.txt", text)
    assert edges(read_graph(path, "metis")) == {(0, 1), (1, 2)}
    with pytest.raises(GraphInputError, match="line 2: has 1 value where line 1 has 2"):
        read_graph(path)  # read as the edge list its extension suggests


def test_writing_needs_a_known_writable_format(tmp_path, path5):
    with pytest.raises(GraphInputError, match="cannot tell the format.*'.xyz'"):
        write_graph(path5, tmp_path / "g.xyz")
    with pytest.raises(GraphInputError, match="format 'spec' can be read but not written"):
        write_graph(path5, tmp_path / "g.json")
    assert write_graph(path5, tmp_path / "g.xyz", "metis") == "metis"
    assert np.array_equal(read_graph(tmp_path / "g.xyz", "metis").edge_index, path5.edge_index)


def test_a_failed_write_leaves_the_old_file(tmp_path, path5, monkeypatch):
    target = tmp_path / "g.mtx"
    target.write_text("old")

    def broken(text, *args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr("pathlib.Path.write_text", broken)
    with pytest.raises(GraphInputError, match="g.mtx: cannot be written \\(disk full\\)"):
        write_graph(path5, target)
    monkeypatch.undo()
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["g.mtx"]


@pytest.mark.parametrize("name", ["damaged.pt", "damaged.npz", "damaged.bin"])
def test_a_zip_whose_directory_claims_an_unknown_version_is_a_graph_input_error(tmp_path, name):
    """Found by the fuzz test: zipfile raises NotImplementedError ("zip file version 6.4") for it."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("edges.npy", b"not really numpy")
    data = bytearray(buffer.getvalue())
    directory = data.index(b"PK\x01\x02")
    data[directory + 6 : directory + 8] = (64).to_bytes(2, "little")  # version needed to extract: 6.4
    path = tmp_path / name
    path.write_bytes(bytes(data))
    with pytest.raises(GraphInputError):
        read_graph(path)


MTX_REAL = "%%MatrixMarket matrix coordinate real symmetric\n4 4 3\n2 1 0.5\n3 2 {middle}\n4 3 2\n"


def test_a_real_matrix_s_values_are_its_edge_weights(tmp_path):
    graph = read_graph(write(tmp_path, "w.mtx", MTX_REAL.format(middle="1.5")))
    assert sorted(graph.edge_weight[: graph.num_edges].tolist()) == [0.5, 1.5, 2.0]


@pytest.mark.parametrize("middle, why", [("nan", "line 4 holds nan"), ("-1", "line 4 holds -1"), ("1e308", "add up to more than")])
def test_matrix_values_that_are_no_weights_are_left_out_with_a_warning_that_says_why(tmp_path, middle, why):
    """A Laplacian's negative entries, a NaN: the matrix still reads as a graph, with hashed weights, and the warning names the value."""
    with pytest.warns(GraphInputWarning, match=f"w.mtx: the real matrix's values are not used as edge weights \\(.*{why}"):
        graph = read_graph(write(tmp_path, "w.mtx", MTX_REAL.format(middle=middle)))
    assert graph.edge_weight is None and graph.num_edges == 3


def test_edge_list_columns_past_the_weight_are_said_to_be_ignored(tmp_path):
    with pytest.warns(GraphInputWarning, match="columns 4 to 5 of every line ignored; only 'u v weight' is read"):
        graph = read_graph(write(tmp_path, "g.txt", "0 1 1 7 7\n1 2 2 8 8\n"))
    assert graph.edge_weight is not None and graph.num_edges == 2
