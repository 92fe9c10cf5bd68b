"""PyG in and out: Data and Batch into predict, evaluate and the policies; Graph.to_pyg/from_pyg; the
observation space checked as a policy is built; the layers made from PyG's own classes (GATv2, GINE,
Transformer, a user's MessagePassing by --conv module:Class) trained, transferred 10x larger with
every tensor loaded, and exported to ONNX; gymnasium's and SB3's check_env on every built-in env."""

import re
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from stable_baselines3 import PPO
from stable_baselines3.common.env_checker import check_env as sb3_check_env
from torch_geometric.data import Batch, Data
from typer.testing import CliRunner

import graphtransfer.envs  # noqa: F401  (registers the built-in envs with gymnasium)
from graphtransfer import evaluate, predict
from graphtransfer.checkpoint import state_tensors
from graphtransfer.cli import app
from graphtransfer.envs.protocol import head_of
from graphtransfer.errors import UsageError
from graphtransfer.export import export_onnx
from graphtransfer.graphs import Graph, barabasi_albert, from_edges, random_geometric, write_graph
from graphtransfer.nn import NodePolicy, policy_for
from graphtransfer.nn.extractor import GNNExtractor
from graphtransfer.nn.user_conv import _NAMED
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.transferring.transfer import transfer

runner = CliRunner()
BUILT_IN_ENVS = sorted(env_id for env_id in gym.registry if env_id.startswith("graphtransfer/"))
DOC = (Path(__file__).resolve().parents[1] / "docs" / "guide" / "pyg.md").read_text()
DOC_PYTHON = re.findall(r"```python\n(.*?)```", DOC, re.S)
USER_LAYER = DOC_PYTHON[1]  # mylayers.py as the guide shows it


@pytest.fixture(autouse=True)
def no_layer_named():
    """Each test starts, as a fresh process does, with no user layer named."""
    _NAMED.clear()
    yield
    _NAMED.clear()


def train(out, task, conv, *extra):
    command = ["train", "--task", task, "--graphs", "small", "--steps", "64", "--n-envs", "2", "--n-steps", "16", "--batch-size", "16"]
    command += ["--layers", "2", "--width", "8", "--conv", conv, "--device", "cpu", "--no-progress", "--out", str(out), *extra]
    result = runner.invoke(app, command)
    assert result.exit_code == 0, result.output
    return out


def obs_to_data(obs: dict) -> Data:
    """One contract observation as the Data a PyG user writes: its real rows and columns, no padding."""
    nodes, edges = int(obs["num_nodes"][0]), int(obs["num_edges"][0])
    data = Data(x=torch.as_tensor(obs["x"][:nodes]), edge_index=torch.as_tensor(obs["edge_index"][:, :edges]))
    if "edge_attr" in obs:
        data.edge_attr = torch.as_tensor(obs["edge_attr"][:edges])
    return data


def batched(obs: dict) -> dict:
    return {key: torch.as_tensor(value)[None] for key, value in obs.items()}


# -- Graph <-> Data ---------------------------------------------------------------------------------


def test_a_graph_goes_to_pyg_and_back_with_its_ids_and_weights():
    graph, _, _ = from_edges(np.array([0, 1, 2]), np.array([1, 2, 3]), 4, "hand", np.array([1.5, 2.0, 3.0]))
    graph = Graph(graph.edge_index, 4, "hand", np.array([10, 20, 35, 99]), graph.edge_weight, np.array([1.0, 2.0, 3.0, 4.0]))
    data = graph.to_pyg()
    assert data.num_nodes == 4 and data.edge_index.shape == (2, 6)
    back = Graph.from_pyg(data)
    assert back.node_ids.tolist() == [10, 20, 35, 99] and back.node_weight.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert np.array_equal(back.edge_index, graph.edge_index) and np.array_equal(back.edge_weight, graph.edge_weight)


def test_from_pyg_reads_one_direction_drops_loops_and_refuses_a_batch_of_several():
    data = Data(edge_index=torch.tensor([[0, 1, 2, 2], [1, 2, 0, 2]]), num_nodes=4)  # one direction, a self-loop, node 3 alone
    graph = Graph.from_pyg(data)
    assert graph.num_nodes == 4 and graph.num_edges == 3 and graph.degrees().tolist() == [2, 2, 2, 0]
    with pytest.raises(UsageError, match="a Batch of 2 graphs; Graph.from_pyg takes one"):
        Graph.from_pyg(Batch.from_data_list([data, data]))


def test_the_guides_python_block_runs_as_written(capsys):
    exec(compile(DOC_PYTHON[0], "docs/guide/pyg.md", "exec"), {})
    assert capsys.readouterr().out.endswith("nodes in the set of 2000\n")


# -- Data into predict and evaluate -----------------------------------------------------------------


def test_predict_takes_a_pyg_data_and_answers_as_for_the_same_graph(tiny_model):
    graph = barabasi_albert(300, 3, seed=2)
    ids = 1000 + 7 * np.arange(graph.num_nodes)  # ids that are not rows
    graph = Graph(graph.edge_index, graph.num_nodes, "ba", ids)
    _, from_graph = predict(tiny_model("mis"), graph, rollouts=1)
    solved, from_data = predict(tiny_model("mis"), graph.to_pyg(), rollouts=1)
    assert np.array_equal(from_data.solution, from_graph.solution) and solved.node_ids.tolist() == ids.tolist()
    with pytest.raises(UsageError, match="predict solves one graph; this input holds 2"):
        predict(tiny_model("mis"), Batch.from_data_list([graph.to_pyg(), graph.to_pyg()]))


def test_evaluate_takes_a_batch_and_a_list_of_data(tiny_model):
    graphs = [barabasi_albert(60, 2, seed=s) for s in (1, 2)]
    _, rows = evaluate(tiny_model("mis"), Batch.from_data_list([g.to_pyg() for g in graphs]), rollouts=1)
    _, listed = evaluate(tiny_model("mis"), [g.to_pyg() for g in graphs], rollouts=1)
    assert [row.graph.num_nodes for row in rows] == [row.graph.num_nodes for row in listed] == [60, 60]
    assert [row.policy.objective for row in rows] == [row.policy.objective for row in listed]


# -- Data into the policies' forward ----------------------------------------------------------------


def test_a_node_policy_takes_a_data_and_a_batch_as_it_takes_the_padded_observation(tiny_model):
    loaded = policy_for_graphs(tiny_model("mis"), [barabasi_albert(80, 3, seed=1)])
    obs, _ = loaded.env.reset(seed=0)
    policy, data = loaded.policy, obs_to_data(obs)
    with torch.no_grad():
        padded, _, values = policy.node_outputs(batched(obs))
        from_data, _, data_values = policy.node_outputs(data)
        actions, _, _ = policy(data, deterministic=True)
        expected, _, _ = policy(batched(obs), deterministic=True)
        from_batch, _, _ = policy.node_outputs(Batch.from_data_list([data, data]))
    assert torch.allclose(from_data, padded[:, :80], atol=1e-6) and torch.allclose(data_values, values, atol=1e-6)
    assert torch.equal(actions, expected[:, :80])
    assert from_batch.shape == (2, 80, padded.shape[-1]) and torch.allclose(from_batch[1], padded[0, :80], atol=1e-6)


def test_a_graph_level_policy_takes_a_batch():
    env = gym.make("graphtransfer/Epidemic-v0").unwrapped
    obs, _ = env.reset(seed=0)
    policy = policy_for(env)(env.observation_space, env.action_space, lambda _: 0.0)
    with torch.no_grad():
        values = policy.predict_values(batched(obs))
        batch_values = policy.predict_values(Batch.from_data_list([obs_to_data(obs)] * 3))
    assert batch_values.shape == (3, 1) and torch.allclose(batch_values, values.expand(3, 1), atol=1e-6)


# -- the observation space checked at construction --------------------------------------------------

PYG_ONLY = spaces.Dict({"x": spaces.Box(0.0, 1.0, (6, 2), np.float32), "edge_index": spaces.Box(0, 5, (2, 10), np.int64)})


class PygOnlyEnv(gym.Env):
    """What a PyG user writes first: ``x`` and ``edge_index``, no counts."""

    observation_space = PYG_ONLY
    action_space = spaces.MultiDiscrete([2] * 6)

    def reset(self, *, seed=None, options=None):
        return PYG_ONLY.sample(), {}

    def step(self, action):
        return PYG_ONLY.sample(), 0.0, True, False, {}


def test_every_policy_class_and_the_extractor_refuse_an_observation_without_counts_as_policy_for_does():
    with pytest.raises(UsageError) as from_policy_for:
        policy_for(PygOnlyEnv())
    message = str(from_policy_for.value)
    assert message.startswith("env: observation has no key 'num_nodes'") and "\n" not in message
    with pytest.raises(UsageError) as from_extractor:
        GNNExtractor(PYG_ONLY)
    assert str(from_extractor.value) == message
    for head in ("node-wise", "node-choice", "edge-wise", "edge-choice", "graph-level"):
        policy_class = graphtransfer.nn.policy.POLICIES[graphtransfer.envs.protocol.Head(head)]
        with pytest.raises(UsageError) as from_class:
            policy_class(PYG_ONLY, spaces.Discrete(6) if "choice" in head else spaces.MultiDiscrete([2] * 6), lambda _: 0.0)
        assert str(from_class.value) == message, head
    with pytest.raises(UsageError, match="^env: observation has no key 'num_nodes'"):
        PPO(NodePolicy, PygOnlyEnv())


# -- the layers from PyG's own classes ---------------------------------------------------------------

LAYERS = [("mis", "gatv2"), ("mis", "transformer"), ("matching", "gine"), ("matching", "gatv2")]


@pytest.mark.parametrize(("task", "conv"), LAYERS, ids=[f"{task}-{conv}" for task, conv in LAYERS])
def test_a_layer_trains_transfers_10x_larger_with_every_tensor_loaded_and_exports_to_onnx(tmp_path, task, conv):
    """Trained on 20-60-node graphs, loaded strictly into a model for a 600-node graph; GINE and the
    matching GATv2 read each edge's features in their messages (no mean edge term)."""
    model = train(tmp_path / "model", task, conv)
    destination = tmp_path / "big.npz"
    write_graph(random_geometric(600, 6.0, seed=3), destination)
    result = transfer(model, destination, folder=tmp_path / "big", log=lambda _: None, device="cpu")
    report = result.report
    assert not report.missing and not report.unexpected and not report.resized
    policy = policy_for_graphs(result.folder, [random_geometric(600, 6.0, seed=3)]).policy
    assert sorted(report.loaded) == sorted(state_tensors(policy)) and len(report.loaded) > 10
    assert report.summary() == f"tensors loaded {len(report.loaded)}, missing 0, unexpected 0, resized 0"
    extractor = policy.features_extractor
    assert type(extractor.convs[0]).__name__ == {"gatv2": "GATv2Conv", "gine": "GINEConv", "transformer": "TransformerConv"}[conv]
    assert extractor.reads_edges == (task == "matching") and (extractor.edge_encoders is None)
    written = export_onnx(result.folder, tmp_path / "policy.onnx")
    assert written.max_difference <= 1e-4 and written.checked_nodes == (300, 2_000)


def test_gine_on_an_env_without_edge_features_is_one_line_naming_gin(tmp_path):
    result = runner.invoke(
        app, ["train", "--task", "mis", "--graphs", "small", "--steps", "8", "--conv", "gine", "--out", str(tmp_path / "m")]
    )
    assert result.exit_code == 2 and result.stderr == (
        "error: conv gine reads each edge's features (edge_attr) in its messages; this env's observations have none: use gin\n"
    )


@pytest.mark.parametrize("conv", ["gatv2", "gine", "transformer"])
def test_a_node_budget_gives_the_same_embeddings_for_layers_run_as_pyg_classes(conv):
    """Chunks of targets, each with the edges into it and their sources as one subgraph: the same
    numbers as the whole graph (GATv2's self-loops and attention softmax included)."""
    graph = random_geometric(90, 5.0, seed=4)
    edges = graph.edge_index.shape[1]
    space = spaces.Dict(
        {
            "x": spaces.Box(-1.0, 1.0, (90, 3), np.float32),
            "edge_index": spaces.Box(0, 89, (2, edges), np.int64),
            "num_nodes": spaces.Box(0, 90, (1,), np.int64),
            "num_edges": spaces.Box(0, edges, (1,), np.int64),
            "edge_attr": spaces.Box(-1.0, 1.0, (edges, 2), np.float32),
        }
    )
    torch.manual_seed(0)
    extractor = GNNExtractor(space, conv=conv, num_layers=3, width=8)
    obs = {
        "x": torch.rand(1, 90, 3),
        "edge_index": torch.as_tensor(graph.edge_index)[None],
        "num_nodes": torch.tensor([[90]]),
        "num_edges": torch.tensor([[edges]]),
        "edge_attr": torch.rand(1, edges, 2),
    }
    with torch.no_grad():
        whole, _ = extractor.node_embeddings(obs)
        extractor.max_nodes_per_batch = 16
        chunked, _ = extractor.node_embeddings(obs)
    assert torch.allclose(whole, chunked, atol=1e-5)


# -- a user's MessagePassing class by --conv module:Class --------------------------------------------


def test_a_users_layer_trains_and_transfers_from_the_cli_and_its_model_needs_conv_to_load(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "mylayers.py").write_text(USER_LAYER)
    model = train(tmp_path / "gate", "mis", "mylayers:Gate")
    write_graph(random_geometric(600, 6.0, seed=3), tmp_path / "big.npz")
    _NAMED.clear()  # as a new process: nothing named
    command = ["transfer", "--src", str(model), "--dst", "big.npz", "--out", str(tmp_path / "big"), "--device", "cpu"]
    refused = runner.invoke(app, command)
    assert refused.exit_code == 2 and refused.stderr == (
        f"error: {model}: the model's layer is the user's 'mylayers:Gate', and it was not named; loading a model folder never "
        "imports code it names, so pass --conv mylayers:Gate (in Python: graphtransfer.use_conv('mylayers:Gate')) if you trust "
        "that layer\n"
    )
    result = runner.invoke(app, [*command, "--conv", "mylayers:Gate"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == f"source {model}: tensors loaded 20, missing 0, unexpected 0, resized 0"
    _NAMED.clear()
    predicting = ["predict", "--model", str(tmp_path / "big"), "--graph", "big.npz", "--out", "s.csv"]
    assert runner.invoke(app, predicting).exit_code == 2 and not (tmp_path / "s.csv").exists()
    assert runner.invoke(app, [*predicting, "--conv", "mylayers:Gate"]).exit_code == 0


def test_a_conv_named_for_a_model_of_a_built_in_layer_is_refused_not_ignored(tiny_model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "mylayers.py").write_text(USER_LAYER)
    command = ["predict", "--model", str(tiny_model("mis")), "--graph", "small", "--out", "s.csv", "--conv", "mylayers:Gate"]
    result = runner.invoke(app, command)
    assert result.exit_code == 2 and not (tmp_path / "s.csv").exists()
    assert result.stderr == "error: --conv mylayers:Gate: this model's layer is sage, not a layer of yours; leave --conv out\n"


def test_a_model_folder_naming_a_layer_never_imports_it(tiny_model, tmp_path, monkeypatch):
    """A config.json edited to name module:Class as its layer: refused before anything is imported."""
    import json
    import shutil
    import sys

    monkeypatch.chdir(tmp_path)
    (tmp_path / "evil.py").write_text("import pathlib\npathlib.Path('ran').write_text('x')\nclass Layer: pass\n")
    folder = tmp_path / "edited"
    shutil.copytree(tiny_model("mis"), folder)
    meta = json.loads((folder / "config.json").read_text())
    meta["config"]["model"]["conv"] = "evil:Layer"
    (folder / "config.json").write_text(json.dumps(meta))
    result = runner.invoke(app, ["predict", "--model", str(folder), "--graph", "small", "--out", "s.csv"])
    assert result.exit_code == 2 and "pass --conv evil:Layer" in result.stderr
    assert not (tmp_path / "ran").exists() and "evil" not in sys.modules


def test_a_conv_that_is_no_message_passing_class_is_one_line(tmp_path):
    result = runner.invoke(app, ["train", "--graphs", "small", "--conv", "json:dumps", "--out", str(tmp_path / "m")])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --conv json:dumps: is <function dumps") and "not a subclass of" in result.stderr


# -- check_env on every built-in env -----------------------------------------------------------------


def test_there_are_seven_built_in_envs():
    assert len(BUILT_IN_ENVS) == 7, BUILT_IN_ENVS


@pytest.mark.parametrize("env_id", BUILT_IN_ENVS)
def test_every_built_in_env_passes_gymnasiums_and_sb3s_check_env(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # their advice on unbounded Boxes and 2-D observations, not failures
        gymnasium_check_env(gym.make(env_id, graphs="small").unwrapped, skip_render_check=True)
        sb3_check_env(gym.make(env_id, graphs="small"))


def test_a_path_step_outside_the_mask_stays_put_and_costs_a_whole_route():
    env = gym.make("graphtransfer/Path-v0").unwrapped
    env.reset(seed=0)
    before, outside = env.current, int(np.flatnonzero(~env.action_masks()[: env.graph.num_nodes])[0])
    _, reward, terminated, _, _ = env.step(outside)
    assert env.current == before and reward == -1.0 and not terminated
    assert head_of(env).value == "node-choice"
