"""predict --polish SECONDS: the policy's solution searched further, both objectives reported."""

from dataclasses import replace

import numpy as np
import pytest
from typer.testing import CliRunner

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.cli import app
from graphtransfer.errors import UsageError
from graphtransfer.graphs import erdos_renyi, load_graph, write_npz
from graphtransfer.solve.polishing import check_polish_seconds, policy_starts, polish
from graphtransfer.solve.predict import predict
from graphtransfer.tasks import TASKS, cut_size, is_independent_set, is_vertex_cover
from graphtransfer.tasks.maxcut.baselines import greedy_one_flip
from graphtransfer.tasks.maxcut.search import tabu_cut
from graphtransfer.tasks.mis.baselines import greedy_min_degree
from graphtransfer.tasks.mis.kernel import mis_kernel, mvc_kernel
from graphtransfer.tasks.mvc.baselines import greedy_max_degree

runner = CliRunner()


@pytest.fixture
def graph_file(tmp_path):
    path = tmp_path / "er.npz"
    write_npz(erdos_renyi(1500, 8.0, 4), path)
    return path


def _chosen(csv_path) -> np.ndarray:
    return np.loadtxt(csv_path, delimiter=",", skiprows=1, dtype=np.int64)[:, 1].astype(bool)


@pytest.mark.parametrize(
    ("task", "valid", "better"), [("mis", is_independent_set, np.greater_equal), ("mvc", is_vertex_cover, np.less_equal)]
)
def test_polish_writes_a_valid_solution_at_least_as_good_as_the_policys(task, valid, better, tiny_model, graph_file, tmp_path):
    model, out = tiny_model(task), tmp_path / "polished.csv"
    result = runner.invoke(app, ["predict", "--model", str(model), "--graph", str(graph_file), "--out", str(out), "--polish", "1"])
    assert result.exit_code == 0, result.output
    graph = load_graph(graph_file)
    written = _chosen(out)
    assert valid(graph, written)
    _, alone = predict(model, graph)  # the same seed and decoding: the policy's own solution
    assert f"policy: objective {alone.objective:.6g}" in result.output
    assert f"objective {written.sum():.6g}\n" in result.output.split("local search")[1]
    assert better(written.sum(), alone.objective)


def test_polish_uses_its_budget_and_finds_more_than_the_policy_on_a_sparse_graph(tiny_model, graph_file, tmp_path):
    graph = load_graph(graph_file)
    _, alone = predict(tiny_model("mis"), graph)
    polished = polish(TASKS["mis"], graph, alone.solution, 1.5, seed=0)
    assert 1.5 <= polished.seconds < 1.5 + 1.0 and polished.iterations > 0
    assert polished.objective > alone.objective  # a 1,500-node sparse graph always has (1,2)-swaps left after a tiny policy
    assert is_independent_set(graph, polished.solution)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e9", "lots", ""])
def test_a_bad_polish_budget_is_a_one_line_error_before_anything_runs(value, graph_file, tmp_path):
    out = tmp_path / "s.csv"
    result = runner.invoke(app, ["predict", "--model", "nowhere", "--graph", str(graph_file), "--out", str(out), "--polish", value])
    assert result.exit_code == 2
    assert result.stderr == f"error: --polish {value!r} must be a number of seconds above 0 and at most 604800 (a week), e.g. --polish 10\n"
    assert not out.exists()


@pytest.mark.parametrize("value", [0, -2.0, float("nan"), float("inf"), 10**7, "5", None, True])
def test_the_library_refuses_a_bad_budget_by_value(value):
    with pytest.raises(UsageError, match="polish seconds"):
        check_polish_seconds(value)


def test_polish_refuses_a_task_without_a_search_and_a_folder_of_graphs(tiny_model, graph_file, tmp_path):
    out = tmp_path / "s.csv"
    model = str(tiny_model("path"))
    result = runner.invoke(app, ["predict", "--model", model, "--graph", str(graph_file), "--out", str(out), "--polish", "1"])
    assert result.exit_code == 2
    having = "mis, mvc, mvc-weighted, maxcut, matching"
    refusal = f"error: --polish: the task must declare search (built-in: {having}); path does not, drop --polish\n"
    assert result.stderr == refusal
    folder = runner.invoke(app, ["predict", "--model", model, "--graph", str(tmp_path), "--out", str(tmp_path / "o"), "--polish", "1"])
    assert folder.exit_code == 2 and "name a single graph file with --graphs, not a folder" in folder.stderr
    assert not out.exists() and not (tmp_path / "o").exists()


def test_polish_never_replaces_an_existing_file_without_force_nor_the_graph(tiny_model, graph_file, tmp_path):
    out = tmp_path / "mine.csv"
    out.write_text("my own work\n")
    model = str(tiny_model("mis"))
    result = runner.invoke(app, ["predict", "--model", model, "--graph", str(graph_file), "--out", str(out), "--polish", "1"])
    assert result.exit_code == 2 and "--force" in result.stderr
    assert out.read_text() == "my own work\n"
    before = graph_file.read_bytes()
    onto = runner.invoke(
        app, ["predict", "--model", model, "--graph", str(graph_file), "--out", str(graph_file), "--polish", "1", "--force"]
    )
    assert onto.exit_code == 2 and graph_file.read_bytes() == before


def test_policy_starts_are_distinct_independent_sets_largest_first_with_a_score_per_node(tiny_model):
    graph = erdos_renyi(600, 8.0, 3)
    starts = policy_starts(read_checkpoint(tiny_model("mis")), graph, rollouts=6, seed=2, count=3, scores=True)
    sizes = [int(s.sum()) for s in starts.sets]
    assert 1 <= len(starts.sets) <= 3 and sizes == sorted(sizes, reverse=True)
    assert all(is_independent_set(graph, s) for s in starts.sets)
    assert len({s.tobytes() for s in starts.sets}) == len(starts.sets)
    _, best = predict(tiny_model("mis"), graph, rollouts=6, seed=2)
    assert sizes[0] == best.objective  # the first start is predict's own answer
    assert starts.scores.shape == (graph.num_nodes,) and np.isfinite(starts.scores).all()
    assert starts.scores.std() > 0  # the policy tells nodes apart


@pytest.mark.parametrize(("task", "kernel_of"), [("mis", mis_kernel), ("mvc", mvc_kernel)])
def test_polish_on_a_kernel_made_before_keeps_its_solutions_valid_and_never_worse(task, kernel_of, graph_file):
    # predict hands --polish the kernel its policy solved; MVC's lifts covers, the search lifts sets
    graph = load_graph(graph_file)
    kernel = kernel_of(graph)
    assert kernel is not None and kernel.decided > 0
    start = greedy_min_degree(graph) if task == "mis" else greedy_max_degree(graph)
    polished = polish(TASKS[task], graph, start, 0.5, seed=0, kernel=kernel)
    if task == "mis":
        assert is_independent_set(graph, polished.solution) and polished.objective >= start.sum()
    else:
        assert is_vertex_cover(graph, polished.solution) and polished.objective <= start.sum()
    assert polished.iterations > 0


def test_polish_on_a_maxcut_model_runs_its_search_and_beats_one_flip_and_tabu(tiny_model, tmp_path):
    # a tiny PPO policy's cut is well below one-flip's; its search must pass it, and the tabu search, on a small graph
    graph_path, out = tmp_path / "er300.npz", tmp_path / "cut.csv"
    write_npz(erdos_renyi(300, 6.0, 5), graph_path)
    model = str(tiny_model("maxcut"))
    result = runner.invoke(app, ["predict", "--model", model, "--graph", str(graph_path), "--out", str(out), "--polish", "1"])
    assert result.exit_code == 0, result.output
    graph = load_graph(graph_path)
    sides = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.int64)[:, 1]
    assert set(np.unique(sides)) <= {0, 1} and sides.size == graph.num_nodes
    cut = cut_size(graph, sides)
    assert f"search steps): objective {cut:.6g}\n" in result.output
    _, alone = predict(model, graph)
    assert f"policy: objective {alone.objective:.6g}" in result.output
    assert cut >= alone.objective and cut >= cut_size(graph, greedy_one_flip(graph)) and cut >= cut_size(graph, tabu_cut(graph, 1.0))


def test_the_library_polish_scores_by_the_tasks_objective_and_refuses_what_cannot_search():
    graph = erdos_renyi(200, 6.0, 1)
    start = np.zeros(graph.num_nodes, dtype=np.int8)  # every edge uncut
    polished = polish(TASKS["maxcut"], graph, start, 0.3, seed=0)
    assert polished.objective == cut_size(graph, polished.solution) > 0 and polished.iterations > 0
    with pytest.raises(
        UsageError, match=r"^--polish: the task must declare search \(built-in: mis, mvc, mvc-weighted, maxcut, matching\); path does not"
    ):
        polish(TASKS["path"], graph, start, 0.3)
    unscored = replace(TASKS["maxcut"], objective=None)
    with pytest.raises(UsageError, match=r"^--polish: the task must declare objective .*; maxcut does not, drop --polish$"):
        polish(unscored, graph, start, 0.3)
    for seconds in (0, -1.0, float("nan"), float("inf"), 1e9):
        with pytest.raises(UsageError, match="polish seconds"):
            polish(TASKS["maxcut"], graph, start, seconds)
