"""The user's own envs: contract checks, the spaces.Graph adapter, and training from the CLI."""

import numpy as np
import pytest
from gymnasium import spaces
from typer.testing import CliRunner

from examples.coverage import CoverageEnv, GraphCoverageEnv
from graphtransfer.cli import app
from graphtransfer.envs.adapters import GraphObservationAdapter
from graphtransfer.envs.contract import check_contract
from graphtransfer.errors import UsageError
from graphtransfer.graphs import barabasi_albert, erdos_renyi, load_graphs, write_edge_list

runner = CliRunner()


def contract_space(**changes):
    keys = {
        "x": spaces.Box(0, 1, (10, 3), np.float32),
        "edge_index": spaces.Box(0, 9, (2, 20), np.int64),
        "num_nodes": spaces.Box(0, 10, (1,), np.int64),
        "num_edges": spaces.Box(0, 20, (1,), np.int64),
    }
    keys.update(changes)
    return spaces.Dict({k: v for k, v in keys.items() if v is not None})


def test_a_contract_space_passes():
    check_contract(contract_space())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"edge_index": None}, "observation has no key 'edge_index'"),
        (
            {"edge_index": spaces.Box(0, 9, (2, 20), np.float32)},
            "'edge_index' is Box shape (2, 20) dtype float32; expected a Box of shape (2, max_edges) and dtype int64",
        ),
        ({"x": spaces.Box(0, 1, (30,), np.float32)}, "'x' is Box shape (30,) dtype float32; expected a Box of shape (max_nodes, F)"),
        ({"num_nodes": spaces.Discrete(5)}, "'num_nodes' is Discrete"),
    ],
)
def test_contract_errors_name_the_key_what_was_found_and_expected(changes, message):
    with pytest.raises(UsageError, match="^my_env: .*" + message.replace("(", r"\(").replace(")", r"\)")):
        check_contract(contract_space(**changes), where="my_env")


def test_graph_space_adapter_pads_into_the_contract():
    graphs = [erdos_renyi(12, 3.0, 0), erdos_renyi(20, 3.0, 1)]
    adapted = GraphObservationAdapter(GraphCoverageEnv(graphs))
    plain = CoverageEnv(graphs)
    check_contract(adapted.observation_space)
    for seed in range(4):
        got, _ = adapted.reset(seed=seed)
        want, _ = plain.reset(seed=seed)
        for key in want:
            assert np.array_equal(got[key], want[key]), key


@pytest.mark.slow
@pytest.mark.parametrize("env_class", ["examples.coverage:CoverageEnv", "examples.coverage:GraphCoverageEnv"])
def test_user_env_trains_and_transfers_from_the_cli(tmp_path, monkeypatch, env_class):
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parents[1]))
    write_edge_list(barabasi_albert(1500, 3, 1), tmp_path / "big.txt")
    out = tmp_path / "model"
    trained = runner.invoke(
        app,
        [
            "train",
            "--env",
            env_class,
            "--env-kwargs",
            '{"budget": 3}',
            "--graphs",
            "small",
            "--steps",
            "256",
            "--n-envs",
            "4",
            "--out",
            str(out),
            "--no-progress",
        ],
    )
    assert trained.exit_code == 0, trained.output
    assert "node-choice head, MaskablePPO" in trained.output
    moved = runner.invoke(
        app, ["transfer", "--src", str(out), "--dst", str(tmp_path / "big.txt"), "--out", str(tmp_path / "big"), "--env", env_class]
    )
    assert moved.exit_code == 0, moved.output
    assert "missing 0, unexpected 0, resized 0" in moved.output
    predicted = runner.invoke(
        app,
        [
            "predict",
            "--model",
            str(tmp_path / "big"),
            "--graph",
            str(tmp_path / "big.txt"),
            "--out",
            str(tmp_path / "o.csv"),
            "--env",
            env_class,
        ],
    )
    assert predicted.exit_code == 0, predicted.output
    assert len((tmp_path / "o.csv").read_text().splitlines()) == 1 + 3  # header and one row per pick


def test_bad_env_specs_are_one_line_errors():
    for spec, message in [("nowhere.module:Env", "cannot import it"), ("NotAnId-v9", "not 'package.module:Class'")]:
        result = runner.invoke(app, ["train", "--env", spec, "--steps", "64"])
        assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.output


def test_env_kwargs_must_be_a_json_object():
    result = runner.invoke(app, ["train", "--env-kwargs", "[1, 2]"])
    assert result.exit_code == 2 and "is not a JSON object" in result.stderr


def test_small_graphs_feed_a_user_env():
    env = CoverageEnv(load_graphs("small"))
    obs, _ = env.reset(seed=0)
    check_contract(env.observation_space)
    assert obs["x"].shape == (60, 3)


@pytest.mark.slow
def test_the_seed_scale_example_trains_transfers_and_predicts_from_the_cli(tmp_path, monkeypatch):
    """examples/seed_scale.py's path from the README at a size that keeps CI fast: a fixed graph,
    (N, 2) features, a graph-level head; trained, moved to a 2.5x larger graph, predicted."""
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parents[1]))
    env = "examples.seed_scale:SignalEnv"
    write_edge_list(barabasi_albert(2_000, 2, 1), tmp_path / "train.txt")
    write_edge_list(barabasi_albert(5_000, 2, 2), tmp_path / "big.txt")
    common = ["--n-envs", "1", "--n-steps", "32", "--batch-size", "8", "--epochs", "4", "--width", "16", "--no-progress"]
    trained = runner.invoke(
        app, ["train", "--env", env, "--graphs", str(tmp_path / "train.txt"), "--steps", "64", *common, "--out", str(tmp_path / "m")]
    )
    assert trained.exit_code == 0, trained.output
    assert "signalenv (graph-level head, PPO) on 1 graphs of 2000-2000 nodes" in trained.output
    moved = runner.invoke(
        app, ["transfer", "--src", str(tmp_path / "m"), "--dst", str(tmp_path / "big.txt"), "--env", env, "--out", str(tmp_path / "big")]
    )
    assert moved.exit_code == 0, moved.output
    assert "missing 0, unexpected 0, resized 0" in moved.output
    out = tmp_path / "steps.csv"
    predicted = runner.invoke(
        app, ["predict", "--model", str(tmp_path / "big"), "--graph", str(tmp_path / "big.txt"), "--out", str(out), "--env", env]
    )
    assert predicted.exit_code == 0, predicted.output
    rows = out.read_text().splitlines()
    assert rows[0] == "step,reward" and len(rows) == 1 + 32  # one episode of 32 decisions
