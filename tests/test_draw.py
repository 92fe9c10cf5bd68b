"""predict --draw: a small graph drawn coloured by the policy's decisions; the layout; the size limit."""

import numpy as np
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.config import RunConfig
from graphtransfer.graphs import erdos_renyi, write_graph
from graphtransfer.reporting.draw import MAX_DRAW_NODES, actions_summary, draw_solution, spring_layout
from graphtransfer.solve.inference import Solution
from graphtransfer.tasks import TASKS
from tests.conftest import graph_from_pairs

runner = CliRunner()
PNG = b"\x89PNG\r\n\x1a\n"


def test_predict_draws_the_graph_coloured_by_the_decisions(tiny_model, tmp_path):
    write_graph(erdos_renyi(60, 4.0, 3), tmp_path / "er-60.npz")
    command = ["predict", "--model", str(tiny_model("mis")), "--graph", str(tmp_path / "er-60.npz"), "--out", str(tmp_path / "s.csv")]
    result = runner.invoke(app, [*command, "--draw", str(tmp_path / "s.png")])
    assert result.exit_code == 0, result.output
    assert result.stdout.endswith(f"wrote {tmp_path / 's.png'}\n")
    assert (tmp_path / "s.png").read_bytes()[:8] == PNG


def test_a_graph_above_the_limit_is_refused_before_the_policy_runs(tiny_model, tmp_path):
    write_graph(erdos_renyi(MAX_DRAW_NODES + 1, 2.0, 0), tmp_path / "big.npz")
    command = ["predict", "--model", str(tiny_model("mis")), "--graph", str(tmp_path / "big.npz"), "--out", str(tmp_path / "s.csv")]
    result = runner.invoke(app, [*command, "--draw", str(tmp_path / "s.png")])
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: --draw: graph big.npz has {MAX_DRAW_NODES + 1:,} nodes; drawing is limited to {MAX_DRAW_NODES:,} nodes, "
        "drop --draw or draw a smaller graph\n"
    )
    assert not (tmp_path / "s.csv").exists()


def test_draw_takes_one_graph_not_a_folder(tiny_model, tmp_path):
    (tmp_path / "g").mkdir()
    write_graph(erdos_renyi(20, 3.0, 0), tmp_path / "g" / "er-20.npz")
    command = ["predict", "--model", str(tiny_model("mis")), "--graph", str(tmp_path / "g"), "--out", str(tmp_path / "o")]
    result = runner.invoke(app, [*command, "--draw", str(tmp_path / "s.png")])
    assert result.exit_code == 2
    assert result.stderr == "error: --draw draws one graph; name a single graph file with --graphs, not a folder\n"


def test_layout_is_deterministic_in_the_unit_square_and_keeps_neighbours_close():
    ring = graph_from_pairs([(i, (i + 1) % 30) for i in range(30)], 30, "ring30")
    pos = spring_layout(ring)
    assert np.array_equal(pos, spring_layout(ring))
    assert pos.min() >= 0 and pos.max() <= 1 and pos.shape == (30, 2)
    neighbours = np.linalg.norm(pos - np.roll(pos, 1, axis=0), axis=1)
    everyone = np.linalg.norm(pos[:, None] - pos[None], axis=2)[np.triu_indices(30, 1)]
    assert neighbours.max() < np.median(everyone)


def test_graph_level_actions_go_into_the_title(tmp_path, path5):
    rows = np.array([[0, 2, 3], [1, 2, 1], [2, 0, 0]])  # step, measure, infected
    assert actions_summary(rows, TASKS["epidemic"]) == "actions over 3 steps: lockdown x2, none x1 (first: lockdown)"
    solution = Solution(rows, -0.5, True, 3, 0.0, 0.0)
    draw_solution(path5, solution, RunConfig(task="epidemic", head="graph-level"), tmp_path / "e.png")
    assert (tmp_path / "e.png").read_bytes()[:8] == PNG
