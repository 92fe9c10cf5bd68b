"""``graphtransfer graphs info | convert | generate`` through Typer's CliRunner."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.graphs import read_graph, write_graph
from tests.conftest import graph_from_pairs

runner = CliRunner()


@pytest.fixture
def triangle_and_lone_node(tmp_path):
    path = tmp_path / "g.mtx"
    write_graph(graph_from_pairs([(0, 1), (1, 2), (0, 2)], 4), path)
    return path


@pytest.mark.parametrize("command", ["info", "convert", "generate"])
def test_every_graphs_command_has_help_with_an_example(command):
    result = runner.invoke(app, ["graphs", command, "--help"])
    assert result.exit_code == 0
    assert f"graphtransfer graphs {command}" in result.output


def test_info_reports_size_degrees_format_and_time(triangle_and_lone_node):
    result = runner.invoke(app, ["graphs", "info", str(triangle_and_lone_node)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1:7] == [
        "format    mtx (detected)",
        "nodes     4",
        "edges     3",
        "degree    min 0, mean 1.50, max 2",
        "isolated  1 nodes",
        "node ids  1..4 (1-based)",
    ]
    assert lines[7].startswith("parsed in ") and lines[7].endswith(" s")


def test_info_with_a_named_format_and_a_warning(tmp_path):
    path = tmp_path / "loops.dat"
    path.write_text("1 2\n2 2\n")
    result = runner.invoke(app, ["graphs", "info", str(path), "--format", "edgelist"])
    assert result.exit_code == 0
    assert "format    edgelist (given)" in result.stdout
    assert result.stderr == f"warning: {path}: dropped 1 self-loop(s)\n"


def test_info_on_a_bad_file_is_one_line_and_exit_2(tmp_path):
    path = tmp_path / "bad.graph"
    path.write_text("3 2\n2\n1 4\n2\n")
    result = runner.invoke(app, ["graphs", "info", str(path)])
    assert result.exit_code == 2
    assert result.stderr == f"error: {path}, line 3: neighbour 4 is outside 1..3\n"
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["info", "{tmp}/missing.txt"], "error: {tmp}/missing.txt: no such file; give a path to a graph file or a sample set name\n"),
        (["info", "{tmp}"], "error: {tmp}: is a folder, expected a graph file; name one of the files inside it\n"),
        (
            ["info", "{tmp}/g.mtx", "--format", "csv"],
            "error: format 'csv' is not known; choose one of edgelist, metis, dimacs, mtx, graphml, gml, npz, pyg, spec\n",
        ),
        (
            ["convert", "{tmp}/g.mtx", "{tmp}/g.json"],
            "error: format 'spec' can be read but not written; write one of edgelist, metis, dimacs, mtx, graphml, gml, npz, pyg\n",
        ),
        (
            ["convert", "{tmp}/g.mtx", "{tmp}/g.out"],
            "error: {tmp}/g.out: cannot tell the format from the extension '.out'; "
            "name one of edgelist, metis, dimacs, mtx, graphml, gml, npz, pyg\n",
        ),
        (
            ["generate", "--nodes", "100", "--m", "3", "--avg-degree", "6", "{tmp}/ba.npz"],
            "error: --m 3 and --avg-degree 6.0 both set the density; give one of them\n",
        ),
        (
            ["generate", "--generator", "watts_strogatz", "--nodes", "100", "{tmp}/ws.npz"],
            "error: unknown generator 'watts_strogatz'; "
            "expected one of ['barabasi_albert', 'delaunay', 'erdos_renyi', 'random_geometric']\n",
        ),
        (
            ["generate", "--nodes", "0", "{tmp}/ba.npz"],
            "error: generator 'barabasi_albert': num_nodes=0; expected an integer in 1..2,147,483,647\n",
        ),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(arguments, message, tmp_path, triangle_and_lone_node):
    result = runner.invoke(app, ["graphs", *(a.format(tmp=tmp_path) for a in arguments)])
    assert result.exit_code == 2
    assert result.stderr == message.format(tmp=tmp_path)
    assert "Traceback" not in result.output


def test_convert_detects_the_input_and_writes_by_extension(tmp_path, triangle_and_lone_node):
    result = runner.invoke(app, ["graphs", "convert", str(triangle_and_lone_node), str(tmp_path / "g.graph")])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"read {triangle_and_lone_node} (mtx): 4 nodes, 3 edges\nwrote {tmp_path / 'g.graph'} (metis)\n"
    assert read_graph(tmp_path / "g.graph").num_nodes == 4


def test_convert_to_an_edge_list_warns_about_isolated_nodes(tmp_path, triangle_and_lone_node):
    result = runner.invoke(app, ["graphs", "convert", str(triangle_and_lone_node), str(tmp_path / "g.dat"), "--to", "edgelist"])
    assert result.exit_code == 0
    assert "1 isolated node(s) have no line in an edge list" in result.stderr
    assert read_graph(tmp_path / "g.dat", "edgelist").num_nodes == 3


def test_generate_is_seeded_and_takes_either_density(tmp_path):
    first = runner.invoke(app, ["graphs", "generate", "--nodes", "500", "--m", "3", "--seed", "7", str(tmp_path / "a.npz")])
    again = runner.invoke(app, ["graphs", "generate", "--nodes", "500", "--avg-degree", "6", "--seed", "7", str(tmp_path / "b.npz")])
    assert first.exit_code == 0 and again.exit_code == 0, first.output + again.output
    assert "generated ba-n500-m3-s7: 500 nodes" in first.stdout
    assert (read_graph(tmp_path / "a.npz").edge_index == read_graph(tmp_path / "b.npz").edge_index).all()
    er = runner.invoke(app, ["graphs", "generate", "--generator", "erdos_renyi", "--nodes", "400", "--m", "2", str(tmp_path / "er.col")])
    assert er.exit_code == 0
    assert read_graph(tmp_path / "er.col").num_edges == 800  # average degree 2m = 4
