"""mvc-weighted's search (``eval --polish``, ``predict --polish``): the lightest cover on tiny graphs
(brute force, hashed and float weights), never heavier than its start, minimal; the weighted merge;
refusals; predict --polish through the CLI; a user's env reaches it by declaring the rules."""

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, erdos_renyi, random_geometric, write_npz
from graphtransfer.graphs.weights import node_weights
from graphtransfer.tasks import TASKS, Task, WeightedMVCEnv, is_vertex_cover, weighted_cover
from graphtransfer.tasks.mis.local_search import merge_sets
from graphtransfer.tasks.mvc.baselines import greedy_weight_degree
from graphtransfer.tasks.mvc.weighted_search import heavy_set_search, improve_weighted_cover, search_light_cover, search_weighted_cover

from .brute_force import TINY_GRAPHS, min_weight_vertex_cover
from .conftest import graph_from_pairs

runner = CliRunner()


def with_weights(graph: Graph, weights) -> Graph:
    return Graph(graph.edge_index, graph.num_nodes, graph.name, node_weight=np.asarray(weights, dtype=np.float64))


def is_minimal_cover(graph: Graph, cover: np.ndarray) -> bool:
    """A cover none of whose nodes can leave: each has a neighbour outside it."""
    src, dst = graph.edge_index
    has_outside = np.bincount(src[~cover[dst]], minlength=graph.num_nodes) > 0
    return is_vertex_cover(graph, cover) and bool(has_outside[cover].all())


@pytest.mark.parametrize("graph", list(TINY_GRAPHS), ids=lambda g: g.name)
def test_the_search_finds_the_lightest_cover_on_tiny_graphs(graph):
    weights = node_weights(graph)
    for start in (greedy_weight_degree(graph), np.ones(graph.num_nodes, dtype=bool)):
        cover = improve_weighted_cover(graph, start, seconds=5)
        assert is_minimal_cover(graph, cover) or graph.num_edges == 0
        assert weights[cover].sum() == min_weight_vertex_cover(graph, weights)


@pytest.mark.parametrize("seed", range(6))
def test_a_files_float_weights_are_the_ones_searched(seed):
    rng = np.random.default_rng(seed)
    graph = with_weights(erdos_renyi(11, 4.0, seed), rng.choice([1e-3, 0.5, 2.5, 1e3], size=11))
    cover = search_light_cover(graph, seconds=5)
    assert is_vertex_cover(graph, cover)
    assert graph.node_weight[cover].sum() == pytest.approx(min_weight_vertex_cover(graph, graph.node_weight))


def test_the_search_never_returns_a_heavier_cover_and_improves_greedys():
    graph = random_geometric(3000, 6.0, 2)
    weights = node_weights(graph)
    start = greedy_weight_degree(graph)
    cover, perturbations = search_weighted_cover(graph, start, seconds=1.0, seed=1)
    assert perturbations > 100 and is_minimal_cover(graph, cover)
    assert weights[cover].sum() < weights[start].sum()
    polished_again, _ = search_weighted_cover(graph, cover, seconds=0.3, seed=2)
    assert weights[polished_again].sum() <= weights[cover].sum()


def test_a_stalled_search_is_reproducible_for_a_seed():
    graph = erdos_renyi(200, 5.0, 4)
    start = ~greedy_weight_degree(graph)
    first, _ = heavy_set_search(graph, start, seconds=600, seed=3, max_stall=500)
    again, _ = heavy_set_search(graph, start, seconds=600, seed=3, max_stall=500)
    assert first.tolist() == again.tolist()


def test_the_weighted_merge_takes_the_heavier_side_of_each_region():
    graph = graph_from_pairs([(0, 1), (2, 3)], 4)  # two separate edges
    weights = np.array([5.0, 1.0, 1.0, 5.0])
    first, second = np.array([True, False, True, False]), np.array([False, True, False, True])
    indptr, indices = graph.csr()
    assert merge_sets(indptr, indices, first, second, weights).tolist() == [True, False, False, True]
    assert merge_sets(indptr, indices, first, second).tolist() == first.tolist()  # by size: a tie, the first's


@pytest.mark.parametrize("seconds", [0, -1.0, float("nan"), float("inf"), True, "5", None])
def test_a_bad_budget_is_refused(seconds):
    graph = erdos_renyi(30, 4.0, 0)
    with pytest.raises(UsageError, match="seconds=.*must be a positive number"):
        search_weighted_cover(graph, np.ones(30, dtype=bool), seconds)


def test_a_start_that_is_no_cover_or_of_the_wrong_size_and_nan_weights_are_refused():
    graph = graph_from_pairs([(0, 1), (1, 2)], 3)
    with pytest.raises(UsageError, match="edge 0-1 has no endpoint in it"):
        search_weighted_cover(graph, np.array([False, False, True]), 1.0)
    with pytest.raises(UsageError, match=r"cover has shape \(2,\); expected \(3,\)"):
        improve_weighted_cover(graph, np.array([True, True]), 1.0)
    with pytest.raises(UsageError, match="must be 3 finite numbers"):
        search_weighted_cover(with_weights(graph, [1.0, np.nan, 2.0]), np.ones(3, dtype=bool), 1.0)


def test_mvc_weighted_and_a_user_env_declaring_the_rules_have_the_search():
    class UserWeightedCoverEnv(WeightedMVCEnv):  # as a user's env declares it: the rules, nothing else
        improve = search = None
        rules = weighted_cover

    user = Task.of(UserWeightedCoverEnv, "user-weighted-cover")
    for task in (TASKS["mvc-weighted"], user):
        assert task.search is search_weighted_cover and task.improve is improve_weighted_cover
        assert "local-search" in task.baselines


def test_predict_polish_writes_a_lighter_cover_than_the_policys(tiny_model, tmp_path):
    graph = random_geometric(2000, 6.0, 5)
    graph_file = tmp_path / "g.npz"
    write_npz(graph, graph_file)
    plain, polished = tmp_path / "plain.csv", tmp_path / "polished.csv"
    model = str(tiny_model("mvc-weighted"))
    assert runner.invoke(app, ["predict", "--model", model, "--graph", str(graph_file), "--out", str(plain)]).exit_code == 0
    result = runner.invoke(app, ["predict", "--model", model, "--graph", str(graph_file), "--out", str(polished), "--polish", "1"])
    assert result.exit_code == 0, result.output
    weights = node_weights(graph)
    covers = [np.loadtxt(f, delimiter=",", skiprows=1, dtype=np.int64) for f in (plain, polished)]
    chosen = [np.zeros(graph.num_nodes, dtype=bool) for _ in covers]
    for mask, rows in zip(chosen, covers, strict=True):
        mask[rows[rows[:, 1] == 1, 0]] = True
    assert is_vertex_cover(graph, chosen[1])
    assert weights[chosen[1]].sum() < weights[chosen[0]].sum()


def test_a_users_weighted_cover_env_declaring_the_rules_polishes_its_cover(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1]))
    from examples.weighted_cover import WeightedCoverEnv

    env = ["--env", "examples.weighted_cover:WeightedCoverEnv"]
    trained = runner.invoke(app, ["train", *env, "--graphs", "small", "--steps", "1024", "--no-progress", "--out", str(tmp_path / "m")])
    assert trained.exit_code == 0, trained.output
    graph = random_geometric(2000, 6.0, 7)
    write_npz(graph, tmp_path / "g.npz")
    weights, covers = node_weights(graph), {}
    for label, extra in (("policy", []), ("polished", ["--polish", "1"])):
        out = tmp_path / f"{label}.csv"
        result = runner.invoke(
            app, ["predict", "--model", str(tmp_path / "m"), *env, "--graph", str(tmp_path / "g.npz"), "--out", str(out), *extra]
        )
        assert result.exit_code == 0, result.output
        rows = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.int64)
        covers[label] = np.zeros(graph.num_nodes, dtype=bool)
        covers[label][rows[rows[:, 1] == 1, 0]] = True
        assert WeightedCoverEnv.feasible(graph, covers[label])
    assert weights[covers["polished"]].sum() < weights[covers["policy"]].sum()
    evaluated = runner.invoke(
        app, ["eval", "--model", str(tmp_path / "m"), *env, "--graphs", str(tmp_path / "g.npz"), "--polish", "--rollouts", "1"]
    )
    assert evaluated.exit_code == 0, evaluated.output
    assert "local-search" in evaluated.output and "polished" in evaluated.output
