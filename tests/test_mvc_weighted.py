"""mvc-weighted: node weights from the graph, the weighted greedy and MILP against brute force,
and the env's objective and rewards."""

import numpy as np
import pytest

from graphtransfer.graphs import barabasi_albert, load_graphs
from graphtransfer.graphs.weights import MAX_WEIGHT, node_weights
from graphtransfer.tasks import TASKS, WeightedMVCEnv
from graphtransfer.tasks.mvc.baselines import greedy_weight_degree

from .brute_force import TINY_GRAPHS, is_vertex_cover, min_weight_vertex_cover
from .conftest import graph_from_pairs


def harmonic(n):
    return sum(1 / k for k in range(1, n + 1))


@pytest.mark.parametrize("graph", TINY_GRAPHS, ids=lambda g: g.name)
def test_exact_milp_finds_the_brute_force_optimum_and_greedy_stays_within_its_bound(graph):
    weights = node_weights(graph)
    optimum = min_weight_vertex_cover(graph, weights)
    exact = TASKS["mvc-weighted"].exact["milp"](graph)
    assert exact.optimal and is_vertex_cover(graph, exact.solution)
    assert weights[exact.solution].sum() == optimum == WeightedMVCEnv.objective(graph, exact.solution)
    for name, baseline in TASKS["mvc-weighted"].baselines.items():
        cover = baseline(graph)
        assert is_vertex_cover(graph, cover), name
        assert weights[cover].sum() >= optimum, name
    greedy = weights[greedy_weight_degree(graph)].sum()
    assert greedy <= harmonic(max(graph.degrees().max(), 1)) * optimum + 1e-9


def test_greedy_pays_least_per_covered_edge():
    star = graph_from_pairs([(0, 1), (0, 2), (0, 3)], 4, "star4")  # centre 0 covers three edges
    assert greedy_weight_degree(star, np.array([10.0, 1, 1, 1])).tolist() == [False, True, True, True]  # 1 per edge < 10 / 3
    assert greedy_weight_degree(star, np.array([2.0, 1, 1, 1])).tolist() == [True, False, False, False]  # 2 / 3 per edge < 1


def test_node_weights_are_integers_fixed_by_the_node_id_and_the_seed():
    weights = node_weights(barabasi_albert(5_000, 3, seed=1))
    assert np.array_equal(weights[:400], node_weights(barabasi_albert(400, 2, seed=9)))  # any graph: the same weight per id
    assert not np.array_equal(weights, node_weights(barabasi_albert(5_000, 3, seed=1), seed=1))
    assert np.array_equal(weights, weights.round()) and set(np.unique(weights)) == set(range(1, MAX_WEIGHT + 1))
    assert np.bincount(weights.astype(int))[1:].min() > 400  # about 500 each: uniform


def test_an_episode_returns_minus_the_covers_weight_over_the_total():
    graphs = load_graphs("small")[:2]
    env = WeightedMVCEnv(graphs)
    obs, _ = env.reset(seed=0, options={"graph_index": 1})
    assert obs["x"].shape == (env.max_nodes, 6)
    total, done, rng = 0.0, False, np.random.default_rng(0)
    while not done:
        _, reward, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        total, done = total + reward, terminated or truncated
    cover = env.solution()
    assert is_vertex_cover(graphs[1], cover)
    weights = node_weights(graphs[1])
    assert total == pytest.approx(-weights[cover].sum() / weights.sum())
    assert env.objective(graphs[1], cover) == weights[cover].sum()


def test_a_weighted_model_trains_and_predicts_a_cover_whose_weight_it_reports(tmp_path):
    from typer.testing import CliRunner

    from graphtransfer.cli import app
    from graphtransfer.graphs import write_graph

    runner = CliRunner()
    graph = barabasi_albert(500, 3, seed=2)
    write_graph(graph, tmp_path / "ba500.npz")
    tiny = ["--steps", "64", "--n-envs", "2", "--n-steps", "16", "--batch-size", "16", "--layers", "2", "--width", "16", "--no-progress"]
    trained = runner.invoke(app, ["train", "--task", "mvc-weighted", *tiny, "--out", str(tmp_path / "m")])
    assert trained.exit_code == 0, trained.output
    out = tmp_path / "cover.csv"
    predicted = runner.invoke(app, ["predict", "--model", str(tmp_path / "m"), "--graph", str(tmp_path / "ba500.npz"), "--out", str(out)])
    assert predicted.exit_code == 0, predicted.output
    cover = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.int64)[:, 1].astype(bool)
    assert is_vertex_cover(graph, cover)
    assert f"objective {node_weights(graph)[cover].sum():.6g} in" in predicted.output
