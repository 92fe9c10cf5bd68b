"""Edges as actions: the edge heads' masks and size invariance, the matching and path tasks and
their baselines, and a user env with edge features trained, transferred and predicted by the CLI."""

import itertools

import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch_geometric.data import Batch, Data
from typer.testing import CliRunner

from examples.line_upgrade import LineUpgradeEnv
from graphtransfer.cli import app
from graphtransfer.config import ModelConfig
from graphtransfer.envs.contract import infer_head, observation_space
from graphtransfer.envs.protocol import head_of
from graphtransfer.errors import UsageError
from graphtransfer.graphs import barabasi_albert, edge_weights, erdos_renyi, write_edge_list
from graphtransfer.nn import build_policy
from graphtransfer.solve.inference import act, obs_to_tensors
from graphtransfer.solve.memory import check_memory
from graphtransfer.tasks import MatchingEnv, PathEnv, is_matching
from graphtransfer.tasks.matching.baselines import exact_blossom, greedy_by_gain, greedy_by_weight, path_growing
from graphtransfer.tasks.matching.step import SKIP, TAKE
from graphtransfer.tasks.path.baselines import dijkstra_route
from graphtransfer.tasks.path.env import route_query

from .brute_force import TINY_GRAPHS, endpoints

runner = CliRunner()
SMALL = ModelConfig(width=16, head_width=16)

HEADS = [(MatchingEnv, "edge-wise"), (LineUpgradeEnv, "edge-choice"), (PathEnv, "node-choice")]


@pytest.mark.parametrize(("env_class", "head"), HEADS)
def test_edge_and_neighbour_heads_load_strictly_into_a_model_for_a_10x_larger_graph(env_class, head):
    small, large = env_class([erdos_renyi(40, 3.0, 0)]), env_class([barabasi_albert(400, 3, 0)])
    assert head_of(small) == head
    trained = build_policy(head, SMALL, small.observation_space, small.action_space)
    moved = build_policy(head, SMALL, large.observation_space, large.action_space)
    moved.load_state_dict(trained.state_dict(), strict=True)
    for (name, a), (_, b) in zip(trained.named_parameters(), moved.named_parameters(), strict=True):
        assert torch.equal(a, b), name
    obs, _ = large.reset(seed=0)
    with torch.no_grad():
        moved(obs_to_tensors(obs, moved.device))  # and it runs there


@pytest.mark.parametrize("seed", range(4))
def test_edge_choice_never_picks_padding_or_masked_edges(seed):
    rng = np.random.default_rng(seed)
    env = LineUpgradeEnv([erdos_renyi(int(rng.integers(8, 20)), 3.0, seed), erdos_renyi(40, 3.0, seed + 1)])
    policy = build_policy("edge-choice", SMALL, env.observation_space, env.action_space)
    observations, masks = [], []
    for i in range(6):
        obs, _ = env.reset(seed=seed * 10 + i)
        for _ in range(int(rng.integers(0, 3))):
            obs, *_ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        observations.append(obs)
        masks.append(env.action_masks())
    batch = {k: torch.as_tensor(np.stack([o[k] for o in observations])) for k in observations[0]}
    masks = np.stack(masks)
    num_edges = batch["num_edges"].reshape(-1).numpy()
    for _ in range(20):
        actions = policy.get_distribution(batch, action_masks=masks).get_actions().numpy()
        assert masks[np.arange(len(actions)), actions].all()
        assert (policy.get_distribution(batch).get_actions().numpy() < num_edges).all()  # never padding, even unmasked


def test_edge_wise_padding_edges_never_act_nor_count():
    env = MatchingEnv([erdos_renyi(10, 3.0, 0), erdos_renyi(40, 3.0, 1)])
    policy = build_policy("edge-wise", SMALL, env.observation_space, env.action_space)
    obs, _ = env.reset(seed=0, options={"graph_index": 0})
    num_edges = int(obs["num_edges"][0])
    tensors = obs_to_tensors(obs, policy.device)
    distribution = policy.get_distribution(tensors)
    for deterministic in (True, False):
        assert not distribution.get_actions(deterministic=deterministic)[0, num_edges:].any()
    actions = distribution.get_actions()
    changed = actions.clone()
    changed[0, num_edges:] = 2
    assert torch.equal(distribution.log_prob(actions), distribution.log_prob(changed))


def test_edge_weights_are_symmetric_exact_and_independent_of_the_listing():
    graph = erdos_renyi(50, 4.0, 3)
    weights = edge_weights(graph)
    src, dst = graph.edge_index
    order = np.random.default_rng(0).permutation(src.size)
    assert weights.dtype == np.float32 and (weights > 0).all() and (weights <= 1).all()
    assert np.array_equal(weights[order], edge_weights(type(graph)(graph.edge_index[::-1][:, order], graph.num_nodes)))
    assert not np.array_equal(weights, edge_weights(graph, seed=1))


def brute_force_matching(graph) -> float:
    u, v = endpoints(graph)
    weights = edge_weights(graph)[graph.edge_index[0] < graph.edge_index[1]].astype(np.float64)
    best = 0.0
    for size in range(1, graph.num_nodes // 2 + 1):
        for chosen in itertools.combinations(range(u.size), size):
            nodes = np.concatenate([u[list(chosen)], v[list(chosen)]])
            if np.unique(nodes).size == nodes.size:
                best = max(best, float(weights[list(chosen)].sum()))
    return best


def test_matching_baselines_are_matchings_within_their_guarantees():
    for graph in TINY_GRAPHS[:16]:
        optimum = exact_blossom(graph).solution
        assert is_matching(graph, optimum)
        best = MatchingEnv.objective(graph, optimum)
        assert best == pytest.approx(brute_force_matching(graph), rel=1e-9)
        for solver in (greedy_by_weight, path_growing):
            found = solver(graph)
            assert is_matching(graph, found), solver.__name__
            assert best / 2 - 1e-9 <= MatchingEnv.objective(graph, found) <= best + 1e-9


@pytest.mark.parametrize(("priority", "greedy"), [("gain", greedy_by_gain), ("weight", greedy_by_weight)])
def test_taking_every_edge_each_step_is_the_priority_s_greedy_and_skipping_ends_unmatched(priority, greedy):
    for seed in range(3):
        graph = barabasi_albert(80, 3, seed)
        env = MatchingEnv([graph], horizon=256, priority=priority)
        env.reset(seed=0)
        returns, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(np.full(env.max_edges, TAKE))
            returns, done = returns + reward, terminated or truncated
        assert terminated and np.array_equal(env.solution(), greedy(graph))
        assert returns * graph.num_nodes == pytest.approx(MatchingEnv.objective(graph, env.solution()))
        env.reset(seed=0)
        _, reward, terminated, _, _ = env.step(np.full(env.max_edges, SKIP))
        assert terminated and reward == 0 and (env.solution() == -1).all()


def test_path_routes_the_graphs_query_and_returns_minus_the_length_ratio():
    graph = barabasi_albert(200, 2, 4)
    source, target = route_query(graph)
    shortest = dijkstra_route(graph)
    env = PathEnv([graph])
    assert env.feasible(graph, shortest) and shortest[0, 1] == source and shortest[-1, 1] == target
    env.reset(seed=5)  # any seed: the graph's own query
    assert (env.source, env.target) == (source, target)
    returns, done = 0.0, False
    for node in shortest[1:, 1]:
        assert env.action_masks()[node]
        assert set(np.flatnonzero(env.action_masks())) <= set(graph.edge_index[1, graph.edge_index[0] == env.current])
        _, reward, done, _, _ = env.step(node)
        returns += reward
    assert done and returns == pytest.approx(-1.0)
    assert PathEnv.objective(graph, env.solution()) == pytest.approx(PathEnv.objective(graph, shortest))
    env.reset()  # unseeded: a random query
    assert env.shortest > 0


def test_an_unfinished_route_is_not_feasible():
    graph = barabasi_albert(100, 2, 0)
    env = PathEnv([graph], horizon=1)
    env.reset(seed=0)
    _, _, terminated, truncated, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert truncated and not terminated and not env.feasible(graph, env.solution())


def cli(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.slow
@pytest.mark.parametrize("task", ["matching", "path"])
def test_edge_tasks_train_transfer_and_predict_from_the_cli(tmp_path, task):
    write_edge_list(barabasi_albert(600, 3, 1), tmp_path / "big.txt")
    common = ["--n-envs", "2", "--n-steps", "32", "--batch-size", "32", "--epochs", "2", "--width", "16", "--no-progress"]
    trained = cli("train", "--task", task, "--graphs", "small", "--steps", "128", *common, "--out", tmp_path / "m")
    assert f"{task} ({ {'matching': 'edge-wise', 'path': 'node-choice'}[task] } head" in trained
    moved = cli("transfer", "--src", tmp_path / "m", "--dst", tmp_path / "big.txt", "--out", tmp_path / "big", "--max-passes", "1000")
    assert "missing 0, unexpected 0, resized 0" in moved
    predicted = cli(
        "predict", "--model", tmp_path / "big", "--graph", tmp_path / "big.txt", "--out", tmp_path / "o.csv", "--max-passes", "1000"
    )
    assert "valid solution: yes" in predicted
    rows = (tmp_path / "o.csv").read_text().splitlines()
    assert rows[0] == ("node,mate" if task == "matching" else "step,node")
    if task == "path":  # a route cut short by the pass limit is reported as such
        cut = runner.invoke(
            app,
            [
                "predict",
                "--model",
                str(tmp_path / "big"),
                "--graph",
                str(tmp_path / "big.txt"),
                "--out",
                str(tmp_path / "cut.csv"),
                "--max-passes",
                "1",
            ],
        )
        assert cut.exit_code == 1 and "stopped at the pass limit, raise --max-passes" in cut.stderr


def line_upgrade_env(tmp_path, monkeypatch) -> str:
    """The example env's ``--env`` name, importable from the repository root, and a 1,500-node
    graph to transfer it to at ``tmp_path / "big.txt"``."""
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parents[1]))
    write_edge_list(barabasi_albert(1500, 3, 1), tmp_path / "big.txt")
    return "examples.line_upgrade:LineUpgradeEnv"


@pytest.mark.slow
def test_the_line_upgrade_example_trains_transfers_and_predicts_from_the_cli(tmp_path, monkeypatch):
    """examples/line_upgrade.py: edge features and an edge-choice action in a user's own env."""
    env = line_upgrade_env(tmp_path, monkeypatch)
    common = ["--n-envs", "2", "--n-steps", "32", "--batch-size", "32", "--epochs", "2", "--width", "16", "--no-progress"]
    trained = cli("train", "--env", env, "--graphs", "small", "--steps", "128", *common, "--out", tmp_path / "m")
    assert "lineupgradeenv (edge-choice head, MaskablePPO)" in trained
    moved = cli("transfer", "--src", tmp_path / "m", "--dst", tmp_path / "big.txt", "--env", env, "--out", tmp_path / "big")
    assert "missing 0, unexpected 0, resized 0" in moved
    cli("predict", "--model", tmp_path / "big", "--graph", tmp_path / "big.txt", "--out", tmp_path / "o.csv", "--env", env)
    rows = (tmp_path / "o.csv").read_text().splitlines()
    assert rows[0] == "step,reward" and len(rows) == 1 + 4  # one row per reinforced line


def test_the_head_follows_from_edge_action_spaces_with_nodes_first():
    space = observation_space(10, 30, 2)
    assert infer_head(space, spaces.MultiDiscrete([3] * 30)) == "edge-wise"
    assert infer_head(space, spaces.Discrete(30)) == "edge-choice"
    assert infer_head(space, spaces.Discrete(10)) == "node-choice"
    assert infer_head(observation_space(10, 10, 2), spaces.Discrete(10)) == "node-choice"  # ambiguous: declare head


def test_the_memory_guard_counts_the_edge_heads_per_edge_tensors(monkeypatch):
    monkeypatch.setenv("GRAPHTRANSFER_MEMORY_LIMIT_MB", "1500")
    check_memory(250_000, 2_000_000, ModelConfig(), "graph large.json")  # a node head fits
    with pytest.raises(UsageError, match=r"^graph large.json: running the policy needs about 1\d{3} MiB"):
        check_memory(250_000, 2_000_000, ModelConfig(), "graph large.json", edge_head=True)


def test_act_on_pyg_data_with_edge_attr_gives_the_padded_observations_actions():
    env = MatchingEnv([erdos_renyi(30, 3.0, 0), erdos_renyi(45, 3.0, 1)])
    policy = build_policy("edge-wise", SMALL, env.observation_space, env.action_space)
    graphs, expected = [], []
    for index in (0, 1):
        obs, _ = env.reset(seed=index, options={"graph_index": index})
        n, e = int(obs["num_nodes"][0]), int(obs["num_edges"][0])
        tensors = {k: torch.as_tensor(v) for k, v in obs.items()}
        graphs.append(Data(x=tensors["x"][:n], edge_index=tensors["edge_index"][:, :e], edge_attr=tensors["edge_attr"][:e]))
        expected.append(act(policy, obs_to_tensors(obs, policy.device), deterministic=True)[0, :e])
    assert torch.equal(act(policy, graphs[0], deterministic=True), expected[0])
    batched = act(policy, Batch.from_data_list(graphs), deterministic=True)
    for row, want in enumerate(expected):
        assert torch.equal(batched[row, : want.numel()], want)


@pytest.mark.slow
def test_dqn_trains_the_edge_choice_example_and_its_q_network_transfers(tmp_path, monkeypatch):
    """``--algo dqn`` on an edge-choice env: a Q-value per edge from a shared head, strict load
    into the env of a larger graph, predict there."""
    from graphtransfer.checkpoint import load_policy_into_env, read_checkpoint
    from graphtransfer.graphs import load_graphs
    from graphtransfer.nn.qnetwork import EdgeQPolicy
    from graphtransfer.tasks.factory import inference_env

    env = line_upgrade_env(tmp_path, monkeypatch)
    steps = ["--steps", "96", "--n-envs", "2", "--batch-size", "16", "--width", "16", "--no-progress", "--set", "dqn.learning_starts=32"]
    trained = cli("train", "--env", env, "--graphs", "small", "--algo", "dqn", *steps, "--out", tmp_path / "m")
    assert "lineupgradeenv (edge-choice head, DQN)" in trained
    checkpoint = read_checkpoint(tmp_path / "m", env=env)
    policy, report = load_policy_into_env(checkpoint, inference_env(checkpoint.config, load_graphs(tmp_path / "big.txt")[0]))
    assert isinstance(policy, EdgeQPolicy) and report.ok and len(report.loaded) == len(checkpoint.tensors)
    cli("predict", "--model", tmp_path / "m", "--graph", tmp_path / "big.txt", "--out", tmp_path / "o.csv", "--env", env)
    assert len((tmp_path / "o.csv").read_text().splitlines()) == 1 + 4  # one row per reinforced line
