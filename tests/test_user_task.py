"""A user's env as a task: the residual view, the pass budget, declared rules, refusals, and the
example MIS env through train -> transfer -> predict as a user runs it."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from examples.user_mis import DeclaredMISEnv, UserMISEnv
from graphtransfer.cli import app
from graphtransfer.envs.protocol import LEAVE, features_of
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, barabasi_albert, erdos_renyi, load_graph, write_edge_list
from graphtransfer.graphs.graph import from_edges
from graphtransfer.tasks.factory import as_task, make_env
from graphtransfer.tasks.mis.baselines import greedy_min_degree
from graphtransfer.tasks.mis.rules import independent_set_exact_actions

runner = CliRunner()
ROOT = Path(__file__).parents[1]


def path_graph(n: int) -> Graph:
    src = np.arange(n - 1)
    return from_edges(np.concatenate([src, src + 1]), np.concatenate([src + 1, src]), n, f"path-{n}")[0]


class NoActiveEnv(UserMISEnv):
    commit_action, defer_action = 1, 0


class WrongRulesEnv(UserMISEnv):
    rules = "independent_set"


class ShortEpisodesEnv(DeclaredMISEnv):
    """Cuts its episodes after 2 steps by a count of its own: no ``horizon`` attribute to set."""

    def __init__(self, graphs):
        super().__init__(graphs, horizon=2)
        self.cut_after = self.__dict__.pop("horizon")

    def step(self, action):
        self.horizon = self.cut_after  # only while the step runs
        try:
            return super().step(action)
        finally:
            del self.horizon


def test_declaring_active_nodes_shows_the_policy_the_graph_they_span():
    env = make_env(None, "examples.user_mis:DeclaredMISEnv", {}, [erdos_renyi(60, 4.0, 0)])
    obs, _ = env.reset(seed=0)
    env.step(np.r_[1, np.zeros(59, dtype=np.int64)])  # node 0 joins: it and its neighbours leave the residual graph
    obs, *_ = env.step(np.zeros(60, dtype=np.int64))
    active = env.unwrapped.active_nodes()
    edges = obs["edge_index"][:, : int(obs["num_edges"][0])]
    assert not active[0] and edges.size and (active[edges[0]] & active[edges[1]]).all()
    whole = UserMISEnv([erdos_renyi(60, 4.0, 0)]).reset(seed=0)[0]
    assert int(obs["num_edges"][0]) < int(whole["num_edges"][0])


def test_an_env_without_active_nodes_is_observed_as_it_is():
    env = make_env(None, "examples.user_mis:UserMISEnv", {}, [erdos_renyi(60, 4.0, 0)])
    assert type(env).__name__ == "UserMISEnv"


@pytest.mark.parametrize(
    ("env_class", "message"),
    [
        (NoActiveEnv, "NoActiveEnv declares commit_action and defer_action but no active_nodes(); the local-max decoding needs"),
        (WrongRulesEnv, "WrongRulesEnv.rules is str; declare a Rules, e.g. graphtransfer.tasks.independent_set"),
    ],
)
def test_an_incomplete_declaration_is_refused_in_one_line_that_says_what_is_missing(env_class, message):
    with pytest.raises(UsageError, match="^" + re.escape(message)):
        features_of(env_class([erdos_renyi(30, 3.0, 0)]))


def test_a_node_the_rules_leave_out_leaves_the_residual_view_and_the_env_waits_there():
    graph = path_graph(4)
    task = as_task(DeclaredMISEnv([graph]), "examples.user_mis:DeclaredMISEnv", {}, [graph], budget=10, own_episodes=False)
    task.reset(seed=0)
    exact = task.exact_actions(graph.edge_index, 4)
    assert exact.tolist() == [0, LEAVE, LEAVE, 0]  # the ends' neighbours are dominated; the ends wait, to join next pass
    task.step(exact)
    assert task.active_nodes().tolist() == [True, False, False, True]
    assert task.observed_edges().shape[1] == 0
    obs, _, terminated, truncated, _ = task.step(np.array([1, 0, 0, 1]))
    assert terminated and not truncated and task.solution().tolist() == [True, False, False, True]


def test_the_rules_exact_actions_are_the_built_in_tasks():
    graph = barabasi_albert(300, 2, 0)
    decided = independent_set_exact_actions(graph.edge_index, graph.num_nodes, np.ones(graph.num_nodes, dtype=bool), {})
    assert set(np.unique(decided)) <= {-1, 1, 2} and (decided == LEAVE).any()


def _cli(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The built-in MIS task and the declared user env, each trained the same few steps."""
    folder = tmp_path_factory.mktemp("user_task")
    common = ["--graphs", "small", "--steps", "4096", "--n-envs", "4", "--seed", "0"]
    _cli("train", "--task", "mis", *common, "--out", str(folder / "builtin"))
    _cli("train", "--env", "examples.user_mis:DeclaredMISEnv", *common, "--out", str(folder / "declared"))
    _cli("train", "--env", "examples.user_mis:UserMISEnv", *common, "--out", str(folder / "plain"))
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("make", [lambda: erdos_renyi(3000, 8.0, 3), lambda: barabasi_albert(3000, 3, 3)], ids=["er", "ba"])
def test_the_declared_env_transfers_and_predicts_the_built_in_tasks_set(trained, tmp_path, monkeypatch, make):
    monkeypatch.syspath_prepend(str(ROOT))
    write_edge_list(make(), tmp_path / "big.txt")
    graph = load_graph(tmp_path / "big.txt")
    position = {int(node): i for i, node in enumerate(graph.ids())}
    sizes = {}
    for name, env in (("builtin", None), ("declared", "examples.user_mis:DeclaredMISEnv")):
        env_args = ["--env", env] if env else []
        _cli("transfer", "--src", str(trained / name), "--dst", str(tmp_path / "big.txt"), "--out", str(tmp_path / name), *env_args)
        out = tmp_path / f"{name}.csv"
        printed = _cli("predict", "--model", str(tmp_path / name), "--graph", str(tmp_path / "big.txt"), "--out", str(out), *env_args)
        assert "valid solution: yes" in printed and "decoding; declare" not in printed
        rows = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.int64)
        chosen = np.zeros(graph.num_nodes, dtype=bool)
        chosen[[position[int(node)] for node in rows[rows[:, 1] == 1, 0]]] = True
        src, dst = graph.edge_index
        assert not (chosen[src] & chosen[dst]).any()
        sizes[name] = int(chosen.sum())
    assert sizes["declared"] >= 0.99 * sizes["builtin"]
    assert sizes["declared"] >= greedy_min_degree(graph).sum()


def test_an_env_with_nothing_declared_says_which_member_enables_which_decoding(trained, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    write_edge_list(erdos_renyi(500, 6.0, 1), tmp_path / "g.txt")
    printed = _cli(
        "predict", "--model", str(trained / "plain"), "--graph", str(tmp_path / "g.txt"), "--out", str(tmp_path / "s.csv"),
        "--env", "examples.user_mis:UserMISEnv",
    )  # fmt: skip
    advice = (
        r"drawn decoding; declare commit_action and defer_action with active_nodes\(\) for the local-max decoding; "
        r"rules \(graphtransfer.tasks.independent_set\) for exact rules, the kernel, a finishing rule and --polish"
    )
    assert re.search(advice, printed)


def test_max_passes_holds_for_an_env_without_a_horizon_and_no_training_horizon_stops_a_solve(trained, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.config import Decoding
    from graphtransfer.solve.predict import predict_graph

    checkpoint = read_checkpoint(trained / "declared", "examples.user_mis:DeclaredMISEnv")
    short = replace(checkpoint, config=replace(checkpoint.config, env=f"{__name__}:ShortEpisodesEnv"))
    graph = erdos_renyi(2000, 8.0, 2)
    plain = Decoding(rollouts=1, reductions=False)
    whole, _ = predict_graph(short, graph, plain)
    assert whole.passes > 2 and whole.finished is not None and whole.finished.undecided == 0
    cut, _ = predict_graph(short, graph, Decoding(rollouts=1, reductions=False, max_passes=2))
    assert cut.passes == 2 and cut.finished is not None and cut.finished.undecided > 0


def test_two_hop_local_maxima_interact_only_through_open_nodes():
    import torch

    from graphtransfer.nn.local_max import local_max_commits

    graph = path_graph(5)  # 0 - 1 - 2 - 3 - 4
    edges = torch.from_numpy(graph.edge_index)
    scores = torch.tensor([5.0, 1.0, 0.0, 2.0, 4.0])
    assert local_max_commits(scores, edges, 5).tolist() == [True, False, False, False, True]
    assert local_max_commits(scores, edges, 5, hops=2).tolist() == [True, False, False, False, True]
    scores = torch.tensor([5.0, 1.0, 4.0, 0.0, 3.0])  # 2 is two hops from 0 (through 1), 4 from 2 (through 3)
    assert local_max_commits(scores, edges, 5).tolist() == [True, False, True, False, True]
    assert local_max_commits(scores, edges, 5, hops=2).tolist() == [True, False, False, False, False]
    open_nodes = torch.tensor([True, False, True, True, True])  # 1 is settled: 0 and 2 no longer interact
    assert local_max_commits(scores, edges, 5, hops=2, through=open_nodes).tolist() == [True, False, True, False, False]


def test_a_node_choice_env_with_step_many_decodes_in_few_passes_near_its_one_pick_decoding(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from examples.dominating_set import DominatingSetEnv

    _cli("train", "--env", "examples.dominating_set:DominatingSetEnv", "--graphs", "small", "--steps", "2048", "--out", str(tmp_path / "m"))
    write_edge_list(barabasi_albert(3000, 3, 2), tmp_path / "g.txt")
    graph = load_graph(tmp_path / "g.txt")
    found = {}
    for label, decoding in (("many", []), ("one", ["--decoding", "drawn", "--commit-fraction", "0.000001"])):
        out = tmp_path / f"{label}.csv"
        printed = _cli("predict", "--model", str(tmp_path / "m"), "--graph", str(tmp_path / "g.txt"), "--out", str(out),
                       "--env", "examples.dominating_set:DominatingSetEnv", "--rollouts", "1", *decoding)  # fmt: skip
        passes = int(re.search(r"objective \d+ in (\d+) passes", printed).group(1))
        rows = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.int64)
        position = {int(node): i for i, node in enumerate(graph.ids())}
        chosen = np.zeros(graph.num_nodes, dtype=bool)
        chosen[[position[int(node)] for node in rows[rows[:, 1] == 1, 0]]] = True
        assert DominatingSetEnv.feasible(graph, chosen)
        found[label] = (int(chosen.sum()), passes)
    assert found["one"][1] == found["one"][0] and found["many"][1] <= 60  # one pick per pass against a few dozen passes
    assert found["many"][0] <= 1.03 * found["one"][0]
