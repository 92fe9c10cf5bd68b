"""eval and predict over a folder of graphs on worker processes and on Ray: the serial results, in order."""

import json
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.graphs import barabasi_albert, erdos_renyi, write_graph

runner = CliRunner()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("graphs")
    for graph, name in ((erdos_renyi(70, 4.0, 2), "er-70"), (barabasi_albert(40, 2, 4), "ba-40"), (erdos_renyi(30, 4.0, 1), "er-30")):
        write_graph(graph, path / f"{name}.npz")
    return path


def evaluated(model, folder, out, *extra) -> list[dict]:
    """The --json records of an eval run, without the fields that time or measure the process."""
    result = runner.invoke(
        app, ["eval", "--model", str(model), "--graphs", str(folder), "--rollouts", "2", "--no-deterministic", "--json", str(out), *extra]
    )
    assert result.exit_code == 0, result.output
    records = json.loads(out.read_text())
    for record in records:
        del record["peak_rss_mib"]
        for entry in [*record["decodings"].values(), *record["baselines"].values()]:
            del entry["seconds"]
            entry.pop("reduced_seconds", None)  # the kernel's seconds: decodings only
    return records


@pytest.fixture(scope="module")
def serial(tiny_model, folder, tmp_path_factory):
    return evaluated(tiny_model("mis"), folder, tmp_path_factory.mktemp("serial") / "eval.json")


@pytest.mark.slow
def test_eval_on_two_worker_processes_gives_the_serial_results_in_order(tiny_model, folder, serial, tmp_path):
    assert [r["graph"] for r in serial] == ["ba-40.npz", "er-30.npz", "er-70.npz"]
    assert evaluated(tiny_model("mis"), folder, tmp_path / "eval.json", "--workers", "2") == serial


@pytest.mark.slow
def test_eval_through_a_local_ray_instance_gives_the_serial_results_in_order(tiny_model, folder, serial, tmp_path):
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        assert evaluated(tiny_model("mis"), folder, tmp_path / "eval.json", "--ray-address", "auto") == serial
        assert ray.is_initialized()  # a Ray instance the caller started is left running
    finally:
        ray.shutdown()


@pytest.mark.slow
def test_predict_over_a_folder_writes_one_csv_per_graph_the_same_on_workers(tiny_model, folder, tmp_path):
    model = str(tiny_model("mvc"))
    for out, extra in ((tmp_path / "serial", []), (tmp_path / "workers", ["--workers", "2"])):
        result = runner.invoke(app, ["predict", "--model", model, "--graph", str(folder), "--out", str(out), *extra])
        assert result.exit_code == 0, result.output
        assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["ba-40.npz", "er-30.npz", "er-70.npz"]
    single = tmp_path / "er-70.csv"
    assert runner.invoke(app, ["predict", "--model", model, "--graph", str(folder / "er-70.npz"), "--out", str(single)]).exit_code == 0
    for name in ("ba-40.csv", "er-30.csv", "er-70.csv"):
        assert (tmp_path / "serial" / name).read_text() == (tmp_path / "workers" / name).read_text()
    assert np.loadtxt(single, delimiter=",", skiprows=1).shape == (70, 2)
    assert single.read_text() == (tmp_path / "workers" / "er-70.csv").read_text()


@pytest.mark.slow
def test_a_workers_error_is_one_line_and_an_exit_code(tiny_model, folder, tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHTRANSFER_MEMORY_LIMIT_MB", "1")  # the workers inherit it and refuse every graph
    result = runner.invoke(
        app, ["predict", "--model", str(tiny_model("mis")), "--graph", str(folder), "--out", str(tmp_path / "o"), "--workers", "2"]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith("error: graph ba-40.npz: running the policy needs about") and result.stderr.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_ray_address_without_ray_says_how_to_install_it(tiny_model, folder, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # what an environment without Ray gives: import ray fails
    result = runner.invoke(app, ["eval", "--model", str(tiny_model("mis")), "--graphs", str(folder), "--ray-address", "auto"])
    assert result.exit_code == 2
    assert result.stderr == "error: --ray-address needs Ray, which is not installed; install it with: pip install 'graphtransfer[ray]'\n"


def test_workers_with_a_single_graph_is_refused(tiny_model, folder, tmp_path):
    command = ["predict", "--model", str(tiny_model("mis")), "--graph", str(folder / "er-30.npz"), "--out", str(tmp_path / "s.csv")]
    result = runner.invoke(app, [*command, "--workers", "2"])
    assert result.exit_code == 2
    assert result.stderr == "error: --workers and --ray-address spread a folder of graphs over workers; --graphs names a single graph\n"
