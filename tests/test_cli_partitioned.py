"""``predict --ray-address ... --partitions K``: one graph solved in parts on a local Ray instance,
and the option's bad uses, each one line on stderr and exit 2 before anything is written."""

import numpy as np
import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.graphs import erdos_renyi, write_graph

ray = pytest.importorskip("ray")
runner = CliRunner()


@pytest.fixture
def graph_file(tmp_path):
    path = tmp_path / "er.npz"
    write_graph(erdos_renyi(300, 6, seed=4), path)
    return path


def predict(model, graph, out, *extra):
    return runner.invoke(app, ["predict", "--model", str(model), "--graph", str(graph), "--out", str(out), *extra])


@pytest.mark.slow
def test_predict_in_parts_on_a_local_ray_writes_a_maximal_independent_set(tiny_model, graph_file, tmp_path):
    out = tmp_path / "set.csv"
    result = predict(tiny_model("mis"), graph_file, out, "--ray-address", "local", "--partitions", "3")
    assert result.exit_code == 0, result.output
    assert "3 parts on Ray" in result.stdout and "valid solution: yes" in result.stdout
    assert not ray.is_initialized()  # the instance it started is gone
    rows = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.int64)
    graph = erdos_renyi(300, 6, seed=4)
    chosen = np.zeros(graph.num_nodes, dtype=bool)
    chosen[rows[:, 0]] = rows[:, 1] == 1
    source, target = graph.edge_index
    covered = chosen.copy()
    covered[target[chosen[source]]] = True
    assert len(rows) == graph.num_nodes and not (chosen[source] & chosen[target]).any() and covered.all()
    assert f"objective {chosen.sum()} in" in result.stdout


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--partitions", "2"], "error: --partitions solves one graph on a Ray cluster: give --ray-address too"),
        (["--ray-address", "local", "--partitions", "0"], "error: --partitions 0: expected a whole number of parts from 1 to the graph's"),
        (["--ray-address", "local", "--partitions", "-3"], "error: --partitions -3: expected a whole number"),
        (["--ray-address", "local", "--partitions", "1000000000000"], "error: --partitions 1000000000000: expected a whole number"),
        (["--ray-address", "local", "--partitions", "2", "--polish", "5"], "error: --partitions runs the local-max decoding alone"),
        (["--ray-address", "local", "--partitions", "2", "--decoding", "drawn"], "drop --decoding"),
        (["--ray-address", "local", "--partitions", "2", "--max-passes", "3"], "drop --max-passes"),
        (["--ray-address", "local", "--partitions", "2", "--rollouts", "4"], "drop --rollouts"),
        (["--ray-address", "local", "--partitions", "2", "--node-order", "given"], "drop --node-order"),
    ],
)
def test_a_bad_use_of_partitions_is_one_line_and_exit_2_and_writes_nothing(tiny_model, graph_file, tmp_path, extra, message):
    out = tmp_path / "set.csv"
    result = predict(tiny_model("mis"), graph_file, out, *extra)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and message in result.stderr and result.stderr.count("\n") == 1
    assert not out.exists() and not ray.is_initialized()


@pytest.mark.parametrize("value", ["nan", "2.5", "two"])
def test_a_part_count_that_is_not_an_integer_is_refused_without_a_traceback(tiny_model, graph_file, tmp_path, value):
    result = predict(tiny_model("mis"), graph_file, tmp_path / "set.csv", "--ray-address", "local", "--partitions", value)
    assert result.exit_code == 2 and "--partitions" in result.stderr and "Traceback" not in result.output


def test_a_model_of_another_task_is_refused(tiny_model, graph_file, tmp_path):
    result = predict(tiny_model("mvc"), graph_file, tmp_path / "set.csv", "--ray-address", "local", "--partitions", "2")
    assert result.exit_code == 2
    assert (
        result.stderr == "error: --partitions: the task must declare partitioned_solve (built-in: mis); mvc does not, drop --partitions\n"
    )


def test_a_folder_of_graphs_is_refused(tiny_model, graph_file, tmp_path):
    result = predict(tiny_model("mis"), graph_file.parent, tmp_path / "out", "--ray-address", "local", "--partitions", "2")
    assert result.exit_code == 2 and result.stderr.startswith("error: --partitions splits one graph; --graphs names a folder")


def test_an_existing_solution_is_kept_without_force(tiny_model, graph_file, tmp_path):
    out = tmp_path / "set.csv"
    out.write_text("mine\n")
    result = predict(tiny_model("mis"), graph_file, out, "--ray-address", "local", "--partitions", "2")
    assert result.exit_code == 2 and "--force" in result.stderr
    assert out.read_text() == "mine\n"
