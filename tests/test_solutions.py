"""Solutions a user can join back to their data and trust: the graph's own node ids in the CSV,
every MIS solution complete and maximal, and a warning when the policy ran out of passes."""

import csv
import io

import numpy as np
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.graphs import read_graph
from graphtransfer.solve.predict import solution_rows
from tests.brute_force import is_maximal_independent

runner = CliRunner()


def test_predict_writes_the_graphs_own_ids(tiny_model, tmp_path):
    graph = tmp_path / "snap.txt"
    graph.write_text("# a SNAP file whose ids are not 0..N-1\n10\t20\n20\t30\n30\t40\n40\t100\n100\t10\n")
    out = tmp_path / "s.csv"
    result = runner.invoke(app, ["predict", "--model", str(tiny_model("mis")), "--graph", str(graph), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "node ids 10..100, not contiguous" in result.output
    rows = [line.split(",") for line in out.read_text().splitlines()]
    assert rows[0] == ["node", "decision"]
    assert sorted(int(node) for node, _ in rows[1:]) == [10, 20, 30, 40, 100]
    chosen = {int(node) for node, decision in rows[1:] if decision == "1"}
    ring = {(10, 20), (20, 30), (30, 40), (40, 100), (100, 10)}
    assert not any((a in chosen and b in chosen) for a, b in ring)  # independent in the file's own ids
    assert len(chosen) == 2  # maximal on a 5-ring


def test_a_pass_limit_warns_and_the_rule_completes_a_maximal_set(tiny_model, tmp_path):
    graph_file = tmp_path / "g.txt"
    rng = np.random.default_rng(0)
    pairs = {tuple(sorted(p)) for p in rng.integers(0, 300, size=(1200, 2)).tolist() if p[0] != p[1]}
    graph_file.write_text("".join(f"{a} {b}\n" for a, b in sorted(pairs)))
    out = tmp_path / "s.csv"
    result = runner.invoke(
        app, ["predict", "--model", str(tiny_model("mis")), "--graph", str(graph_file), "--out", str(out), "--max-passes", "1"]
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("warning: the pass limit (1 passes) was reached with ")
    assert "greedy minimum degree completed them" in result.stderr
    assert "policy decided " in result.output and "the finishing rule added " in result.output
    graph = read_graph(graph_file)
    decisions = np.array([int(line.split(",")[1]) for line in out.read_text().splitlines()[1:]], dtype=bool)
    assert is_maximal_independent(graph, decisions)


def _matching_rows(csv) -> dict[str, str]:
    """A predict CSV of ``node,mate`` rows as ``{node id: mate id}`` ('' where unmatched)."""
    lines = csv.read_text().splitlines()
    assert lines[0] == "node,mate"
    return dict(line.split(",") for line in lines[1:])


def test_a_matching_names_every_mate_by_the_graphs_own_ids(tiny_model, tmp_path):
    """The mates are the file's ids (here 10, 20, ...; none is a position 0..5), both ways round,
    along the file's edges; an unmatched node's mate is empty. Also for uint64 ids above int64."""
    from graphtransfer.graphs import from_edges
    from graphtransfer.graphs.formats.npz import write_npz
    from graphtransfer.graphs.graph import with_ids

    pairs = [(10, 20), (20, 30), (30, 40), (40, 100), (100, 10), (30, 7), (7, 8)]  # seven nodes: one stays unmatched
    (tmp_path / "snap.txt").write_text("".join(f"{a} {b}\n" for a, b in pairs))
    positions = {10: 0, 20: 1, 30: 2, 40: 3, 100: 4, 7: 5, 8: 6}
    big = np.array([2**64 - 1, 2**63, 5, 2**64 - 7, 9, 11, 2**63 + 1], dtype=np.uint64)  # kept exactly, as names
    ring, _, _ = from_edges(*np.array([[positions[a], positions[b]] for a, b in pairs]).T, 7)
    write_npz(with_ids(ring, big), tmp_path / "u64.npz")
    for graph, ids in (("snap.txt", list(positions)), ("u64.npz", big.tolist())):
        out = tmp_path / f"{graph}.csv"
        result = runner.invoke(
            app, ["predict", "--model", str(tiny_model("matching")), "--graph", str(tmp_path / graph), "--out", str(out)]
        )
        assert result.exit_code == 0, result.output
        mates = _matching_rows(out)
        assert sorted(mates) == sorted(map(str, ids))
        edges = {frozenset((str(ids[positions[a]]), str(ids[positions[b]]))) for a, b in pairs}
        matched = {node: mate for node, mate in mates.items() if mate}
        assert matched, "the tiny policy matched nothing: the test would check no mate"
        for node, mate in matched.items():
            assert mates[mate] == node and frozenset((node, mate)) in edges, (graph, node, mate)
        assert len(matched) < len(mates)  # the odd node out has an empty cell
        assert "-1" not in mates.values()


def test_solution_rows_quote_names_that_need_it_and_write_numbers_plainly():
    """Names with a comma or a quote are quoted as the csv module quotes them; integer ids and
    positions, which never need it, are written without looking at each cell."""
    solution = np.array([1, 0, 1], dtype=bool)
    named = solution_rows(solution, "node,in_set", np.array(["a,b", 'say "x"', "c"]))
    assert list(csv.reader(io.StringIO(named))) == [["a,b", "1"], ['say "x"', "0"], ["c", "1"]]
    assert solution_rows(solution, "node,in_set", np.array([10, 20, 30])) == "10,1\n20,0\n30,1\n"
    assert solution_rows(solution, "node,in_set") == "0,1\n1,0\n2,1\n"
