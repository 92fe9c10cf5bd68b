"""Matching's local search (eval's and predict's --polish): valid matchings, never lighter than
their start, the optimum on tiny graphs, and a tiny trained policy with it at 0.98x the optimum."""

import numpy as np
import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.errors import UsageError
from graphtransfer.graphs import barabasi_albert, erdos_renyi, load_graph, random_geometric, write_npz
from graphtransfer.solve.predict import predict
from graphtransfer.tasks import MatchingEnv, is_matching
from graphtransfer.tasks.matching.baselines import exact_blossom, exact_milp, greedy_by_weight
from graphtransfer.tasks.matching.search import improve_matching, local_search_matching, search_matching

from .brute_force import TINY_GRAPHS
from .conftest import graph_from_pairs

runner = CliRunner()


def _none(graph) -> np.ndarray:
    return np.full(graph.num_nodes, -1, dtype=np.int64)


def test_the_descent_alone_ends_at_the_optimum_of_a_path():
    # path 0-1-2-3 with the outer edges matched: the one other matching is the middle edge, a move
    # centred on (1, 2) that frees 0 and 3; made exactly when it outweighs the outer two
    graph = graph_from_pairs([(0, 1), (1, 2), (2, 3)], 4, "path4")
    start = np.array([1, 0, 3, 2])
    found = improve_matching(graph, start)
    assert is_matching(graph, found)
    assert MatchingEnv.objective(graph, found) == pytest.approx(MatchingEnv.objective(graph, exact_blossom(graph).solution))


@pytest.mark.parametrize("graph", list(TINY_GRAPHS), ids=lambda g: g.name)
def test_the_search_finds_the_optimum_of_tiny_graphs_from_nothing(graph):
    found, _ = search_matching(graph, _none(graph), 0.1, seed=1)
    assert is_matching(graph, found)
    assert MatchingEnv.objective(graph, found) == pytest.approx(MatchingEnv.objective(graph, exact_blossom(graph).solution))


@pytest.mark.parametrize("make", [erdos_renyi, random_geometric], ids=["er", "rgg"])
def test_the_search_never_loses_weight_and_beats_greedy(make):
    graph = make(800, 5.0, 2)
    greedy = greedy_by_weight(graph)
    descended = improve_matching(graph, greedy)
    searched, kicks = local_search_matching(graph, greedy, 0.5, seed=0)
    weights = [MatchingEnv.objective(graph, m) for m in (greedy, descended, searched)]
    assert is_matching(graph, descended) and is_matching(graph, searched)
    assert weights[0] < weights[1] <= weights[2] and kicks > 0
    assert weights[2] >= 0.98 * MatchingEnv.objective(graph, exact_milp(graph).solution)


def test_hubs_and_graphs_without_edges():
    hub = barabasi_albert(300, 3, 0)
    assert is_matching(hub, search_matching(hub, _none(hub), 0.2)[0])
    lonely = erdos_renyi(5, 0.0, 0)
    assert search_matching(lonely, _none(lonely), 0.05)[0].tolist() == [-1] * 5


@pytest.mark.parametrize("seconds", [0, -1.0, float("nan"), float("inf"), True, "1"])
def test_a_bad_budget_is_refused_by_value(seconds):
    graph = erdos_renyi(20, 3.0, 0)
    with pytest.raises(UsageError, match=r"seconds=.* must be a positive number"):
        local_search_matching(graph, _none(graph), seconds)


def test_a_start_that_is_not_a_matching_is_refused():
    graph = graph_from_pairs([(0, 1), (1, 2), (2, 3)], 4, "path4")
    for mate in ([1, 0, 0, -1], [2, -1, 0, -1], [1, 0, -1]):  # node 2 claims a taken mate; 0-2 is no edge; a short array
        with pytest.raises(UsageError, match="mate must be a matching of path4"):
            search_matching(graph, np.array(mate), 0.1)


def test_a_tiny_policy_with_predict_polish_reaches_098_of_the_optimum(tiny_model, tmp_path):
    graph_path, out = tmp_path / "er400.npz", tmp_path / "matching.csv"
    write_npz(erdos_renyi(400, 5.0, 7), graph_path)
    model = str(tiny_model("matching"))
    result = runner.invoke(app, ["predict", "--model", model, "--graph", str(graph_path), "--out", str(out), "--polish", "1"])
    assert result.exit_code == 0, result.output
    graph = load_graph(graph_path)
    rows = np.genfromtxt(out, delimiter=",", skip_header=1, filling_values=-1, dtype=np.int64)
    mate = np.full(graph.num_nodes, -1, dtype=np.int64)
    mate[rows[:, 0]] = rows[:, 1]
    weight, best = MatchingEnv.objective(graph, mate), MatchingEnv.objective(graph, exact_milp(graph).solution)
    assert is_matching(graph, mate) and f"search steps): objective {weight:.6g}\n" in result.output
    _, alone = predict(model, graph)
    assert alone.objective < 0.98 * best <= weight  # the tiny policy alone falls short; with its search it does not
