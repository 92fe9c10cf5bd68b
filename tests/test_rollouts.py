"""The best of several seeded rollouts: how many ``auto`` runs, which one wins, and the CLI's ``--rollouts``."""

import math
import re

import numpy as np
import pytest
from typer.testing import CliRunner

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.cli import app
from graphtransfer.config import (
    AUTO_PATIENCE,
    HASTY_FROM_NODES,
    HASTY_PATIENCE,
    LEAVE_OUT_PATIENCE,
    LOCAL_MAX_DENSE_PATIENCE,
    LOCAL_MAX_PATIENCE,
    LOCAL_MAX_SPARSE_DEGREE,
    PATIENT_BELOW_NODES,
    ROLLOUT_PASS_BUDGET,
    SAMPLED_ROLLOUT_DEGREE,
    Decoding,
)
from graphtransfer.errors import UsageError
from graphtransfer.graphs import barabasi_albert, erdos_renyi, write_edge_list
from graphtransfer.graphs.generators import delaunay
from graphtransfer.graphs.graph import from_edges
from graphtransfer.solve.inference import leave_out_candidates, local_max_patience, solve
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.solve.predict import predict_graph, write_solution
from graphtransfer.solve.rollouts import (
    best_of_rollouts,
    rollout_count,
    rollout_patience,
    rollout_plan,
    rollouts_within_passes,
    solve_one,
)
from graphtransfer.tasks import TASKS
from graphtransfer.tasks.mis.kernel import mis_kernel
from tests.brute_force import is_maximal_independent

runner = CliRunner()


@pytest.mark.parametrize(
    ("nodes", "directed_edges", "count"),
    [
        (20, 80, 64),
        (468, 3_000, 64),
        (1_000, 4_000, 30),  # sparse: the node budget
        (1_000, 200_000, 20),  # average degree 200: the edge budget
        (10_000, 40_000, 3),
        (10_000, 640_000, 3),
        (10_000, 2_000_000, 2),
        (15_001, 60_000, 1),
        (100, 5_000_000, 1),  # edges alone can bring it to one
        (250_151, 2_000_000, 1),  # the make demo graph: one rollout, as before
        (1_000_000, 4_000_000, 1),
        (100_000_000, 10**10, 1),
        (1, 0, 1),  # no edges (a kernel decided whole): every rollout would be the same
        (5_000, 0, 1),
    ],
)
def test_auto_runs_as_many_rollouts_as_fit_the_work_budget(nodes, directed_edges, count):
    assert rollout_count("auto", nodes, directed_edges) == count


def test_the_work_budget_gives_small_graphs_several_rollouts_and_huge_ones_one():
    small = [rollout_count("auto", n, n * degree) for n in (100, 1_000, 10_000) for degree in (4, 16, 64, 200)]
    assert min(small) > 1
    assert {rollout_count("auto", n, n * degree) for n in (10**5, 10**6, 10**7) for degree in (4, 16, 64)} == {1}


@pytest.mark.parametrize(
    ("count", "first_passes", "within"),
    [
        (30, 14, 30),  # 1,000 nodes, average degree 4: the node budget, as before
        (30, 24, 30),  # average degree 16
        (30, 50, 30),  # random geometric, average degree 56
        (30, 86, 17),  # Erdős–Rényi, average degree 64: one candidate a pass
        (27, 129, 11),  # Barabási–Albert, average degree 143: 27 rollouts of 129 passes before
        (20, 32, 20),  # average degree 200: the edge budget
        (3, 114, 3),  # 10,000 nodes, average degree 64
        (64, 1_600, 1),  # more passes than the budget: the first rollout alone
        (1, 0, 1),
    ],
)
def test_auto_stops_when_the_rollouts_passes_would_pass_the_budget(count, first_passes, within):
    assert rollouts_within_passes(count, first_passes) == within
    assert within * first_passes <= ROLLOUT_PASS_BUDGET or within == 1


def test_auto_counts_the_first_rollouts_passes_and_a_count_given_runs_in_full(tiny_model, monkeypatch):
    """A dense graph's rollouts take many passes each, so auto runs fewer than its node budget allows
    (the pass budget made small here, so that a small graph shows it in a few rollouts)."""
    monkeypatch.setattr("graphtransfer.solve.rollouts.ROLLOUT_PASS_BUDGET", 40)
    graph = erdos_renyi(120, 40.0, 3)
    loaded = policy_for_graphs(tiny_model("mis"), [graph])
    first = solve_one(loaded.policy, loaded.env, Decoding(rollouts=1), TASKS["mis"].finish)
    count = rollout_count("auto", graph.num_nodes, graph.edge_index.shape[1])
    expected = 40 // first.passes
    assert 1 < expected < count == 64
    assert best_of_rollouts(loaded.policy, loaded.env, count, finish=TASKS["mis"].finish).rollouts == expected
    given = Decoding(rollouts=expected + 1)
    assert best_of_rollouts(loaded.policy, loaded.env, expected + 1, given, TASKS["mis"].finish).rollouts == expected + 1


@pytest.mark.parametrize(
    ("nodes", "patient"),
    [
        (1_000, True),  # auto's many rollouts are patient too
        (15_001, True),  # the smallest graph auto gives one rollout
        (PATIENT_BELOW_NODES - 1, True),
        (PATIENT_BELOW_NODES, False),  # from here on the default's
        (250_000, False),  # make demo's graph
        (1_000_000, False),
    ],
)
def test_auto_is_patient_below_a_size_on_sparse_graphs_and_dense_graphs_keep_their_floor(nodes, patient):
    """The share of the Caro-Wei bound under auto: below PATIENT_BELOW_NODES nodes the default's
    divided by AUTO_PATIENCE (0.02 on sparse graphs), down to a floor that follows the degree and is
    the dense graphs' share from LOCAL_MAX_SPARSE_DEGREE on; from the size on, the default's."""
    assert LOCAL_MAX_PATIENCE / AUTO_PATIENCE == pytest.approx(0.02)
    expected = {4: 0.02, 8: 0.02, 12: LOCAL_MAX_DENSE_PATIENCE * (12 / 16) ** 2, 24: LOCAL_MAX_DENSE_PATIENCE, 64: LOCAL_MAX_DENSE_PATIENCE}
    default = {4: LOCAL_MAX_PATIENCE, 8: LOCAL_MAX_PATIENCE, 12: LOCAL_MAX_PATIENCE, 24: 0.1, 64: LOCAL_MAX_DENSE_PATIENCE}
    for degree in expected:
        obs = {"num_nodes": [nodes], "num_edges": [degree * nodes]}
        share = local_max_patience(obs, rollout_patience("auto", nodes))
        assert share == pytest.approx(expected[degree] if patient else default[degree]), degree
        assert share == pytest.approx(local_max_patience(obs, AUTO_PATIENCE) if patient else local_max_patience(obs))


@pytest.mark.parametrize("degree", [0.0, 2.0, 4.0, 8.0, 12.0, 16.0, 24.0, 48.0, 64.0, 200.0])
@pytest.mark.parametrize("patience", [1.0, 3.0])
def test_the_floor_that_follows_the_degree_leaves_patience_one_and_three_as_they_were(degree, patience):
    """Before the floor followed the degree it was LOCAL_MAX_DENSE_PATIENCE on every graph; at the
    default's patience and at three times it the shares are the same as then."""
    share = LOCAL_MAX_PATIENCE * min(1.0, LOCAL_MAX_SPARSE_DEGREE / max(degree, 1e-9))
    before = max(LOCAL_MAX_DENSE_PATIENCE, share / patience)
    assert local_max_patience({"num_nodes": [1000], "num_edges": [int(degree * 1000)]}, patience) == pytest.approx(before)


def test_mvcs_leave_out_candidates_are_patient_on_sparse_graphs_and_dense_ones_keep_the_default():
    """MVC's candidates to stay out of the cover under the same patience, floored at its own dense
    share (LEAVE_OUT_PATIENCE) scaled by the square of degree / 16: unchanged from degree 16 on."""
    caro_wei = {4: 10_000 / 5, 8: 10_000 / 9, 64: 10_000 / 65}  # regular graphs of 10,000 nodes: the bound is n / (degree + 1)
    for degree, bound in caro_wei.items():
        src = np.repeat(np.arange(10_000), degree)
        obs = {"num_nodes": [10_000], "num_edges": [src.size], "edge_index": np.stack([src, src])}
        obs["edge_index"][1] = (src + np.tile(np.arange(1, degree + 1), 10_000)) % 10_000
        default, patient = leave_out_candidates(obs, None), leave_out_candidates(obs, None, AUTO_PATIENCE)
        assert default == math.ceil(LEAVE_OUT_PATIENCE * bound)
        share = {4: LEAVE_OUT_PATIENCE / AUTO_PATIENCE, 8: LEAVE_OUT_PATIENCE / 4, 64: LEAVE_OUT_PATIENCE}[degree]
        assert patient == math.ceil(share * bound)


def test_patience_finds_a_smaller_cover_than_the_default_with_the_built_in_mvc_model_on_a_mesh():
    graph = delaunay(3_000, 0)
    loaded = policy_for_graphs(read_checkpoint("mvc"), [graph])
    default = solve(loaded.policy, loaded.env, seed=0)
    patient = solve(loaded.policy, loaded.env, seed=0, patience=AUTO_PATIENCE)
    assert patient.feasible and patient.objective < default.objective and patient.passes > 2 * default.passes


@pytest.mark.parametrize(
    ("rollouts", "nodes", "patience"),
    [
        ("auto", 20_000, AUTO_PATIENCE),
        ("auto", 10_000, AUTO_PATIENCE),  # several rollouts: patient as well, the pass budget runs fewer
        ("auto", PATIENT_BELOW_NODES, 1.0),
        (1, 20_000, 1.0),  # a count given: the default decoding, as many times as asked
        (4, 20_000, 1.0),
        ("auto", HASTY_FROM_NODES - 1, 1.0),
        ("auto", HASTY_FROM_NODES, HASTY_PATIENCE),  # from here on hasty, whatever --rollouts says
        (1, HASTY_FROM_NODES, HASTY_PATIENCE),
        ("auto", 10_000_000, HASTY_PATIENCE),
    ],
)
def test_only_auto_below_a_size_is_patient_and_the_largest_graphs_are_hasty(rollouts, nodes, patience):
    assert rollout_patience(rollouts, nodes) == patience


@pytest.mark.parametrize("degree", [4.0, 8.0, 16.0, 64.0, 200.0])
def test_haste_takes_more_candidates_for_mis_and_leaves_mvc_at_its_default(degree):
    """Below a patience of 1, MIS's share of the Caro-Wei bound is the degree's share divided by it
    (1.6x at HASTY_PATIENCE), not below the floor for the degree, so never below the default's; MVC's
    candidates to stay out keep the default's."""
    obs = {"num_nodes": [3_000_000], "num_edges": [int(degree * 3_000_000)]}
    share = LOCAL_MAX_PATIENCE * min(1.0, LOCAL_MAX_SPARSE_DEGREE / degree)
    floor = LOCAL_MAX_DENSE_PATIENCE * min(1.0, degree / LOCAL_MAX_SPARSE_DEGREE) ** 2
    assert HASTY_PATIENCE < 1
    assert local_max_patience(obs, HASTY_PATIENCE) == pytest.approx(max(floor, share / HASTY_PATIENCE))
    assert local_max_patience(obs, HASTY_PATIENCE) > local_max_patience(obs) or degree >= 48  # the floor binds there
    src = np.repeat(np.arange(1_000), int(degree))
    edges = {"num_nodes": [1_000], "num_edges": [src.size], "edge_index": np.stack([src, (src + 1) % 1_000])}
    assert leave_out_candidates(edges, None, HASTY_PATIENCE) == leave_out_candidates(edges, None)


def test_a_hasty_rollout_decides_a_graph_in_fewer_passes_and_stays_a_maximal_set():
    """The trade HASTY_PATIENCE makes on the largest graphs, on a small one (ER, 20,000 nodes of degree
    8; the built-in MIS model): fewer passes, a maximal independent set."""
    graph = erdos_renyi(20_000, 8.0, 0)
    loaded = policy_for_graphs(read_checkpoint("mis"), [graph])
    default = solve(loaded.policy, loaded.env, seed=0, finish=TASKS["mis"].finish)
    hasty = solve(loaded.policy, loaded.env, seed=0, finish=TASKS["mis"].finish, patience=HASTY_PATIENCE)
    assert hasty.feasible and hasty.passes < default.passes
    assert is_maximal_independent(graph, hasty.solution.astype(bool))


def test_patience_finds_a_larger_set_than_the_default_with_the_built_in_model_on_a_mesh():
    """The reason for AUTO_PATIENCE, on a graph unlike the training graphs (a Delaunay mesh of 3,000
    nodes; the built-in MIS model): one patient rollout finds more than one default rollout, and
    auto's (patient) rollouts at least as much as the default's best of as many."""
    graph = delaunay(3_000, 0)
    loaded = policy_for_graphs(read_checkpoint("mis"), [graph])
    default = solve(loaded.policy, loaded.env, seed=0, finish=TASKS["mis"].finish)
    patient = solve(loaded.policy, loaded.env, seed=0, finish=TASKS["mis"].finish, patience=AUTO_PATIENCE)
    assert patient.feasible and patient.objective > default.objective
    assert patient.passes > 2 * default.passes


def test_predict_makes_autos_one_rollout_patient_and_a_count_or_a_commit_fraction_given_does_not(tiny_model, monkeypatch):
    """Under auto (the node budget made small here, so that one rollout runs and its passes can be
    compared) predict's rollout is patient, more passes than the default's;
    --rollouts 1 and a --commit-fraction given decode as they say."""
    monkeypatch.setattr("graphtransfer.solve.rollouts.ROLLOUT_NODE_BUDGET", 400)
    graph = erdos_renyi(300, 12.0, 1)  # no node of degree <= 2: predict solves this graph itself, not a kernel
    assert mis_kernel(graph) is None
    model = tiny_model("mis")
    loaded = policy_for_graphs(model, [graph])
    default = solve(loaded.policy, loaded.env, seed=0, finish=TASKS["mis"].finish)
    patient = solve(loaded.policy, loaded.env, seed=0, finish=TASKS["mis"].finish, patience=AUTO_PATIENCE)
    assert patient.passes > default.passes
    auto, _ = predict_graph(model, graph, Decoding(kernel_every=0))  # one stretch of passes, as solve runs them
    assert (auto.passes, auto.objective, auto.rollouts) == (patient.passes, patient.objective, 1)
    assert predict_graph(model, graph, Decoding(rollouts=1, kernel_every=0))[0].passes == default.passes
    given = solve(loaded.policy, loaded.env, seed=0, commit_fraction=0.05, finish=TASKS["mis"].finish)
    assert predict_graph(model, graph, Decoding(commit_fraction=0.05, kernel_every=0))[0].passes == given.passes


@pytest.mark.parametrize("bad", [0, -1, 2.5, "8", True, 10**9])
def test_a_rollout_count_below_one_or_not_a_whole_number_is_refused(bad):
    with pytest.raises(UsageError, match="must be 'auto' or a whole number from 1 \\(a single rollout\\) to 4096"):
        rollout_count(bad, 100, 400)


def test_the_default_decoding_alternates_with_its_sampled_ranking_and_a_chosen_one_only_changes_seed():
    plan = rollout_plan(Decoding(seed=7), 4, "local-max")
    assert [(p.seed, p.method) for p in plan] == [(7, None), (8, "local-max-sampled"), (9, None), (10, "local-max-sampled")]
    assert {p.method for p in rollout_plan(Decoding(method="local-max"), 3, "local-max")} == {"local-max"}
    assert [p.seed for p in rollout_plan(Decoding(seed=2**32 - 1), 2, "drawn")] == [2**32 - 1, 0]  # seeds stay 32-bit
    assert {p.rollouts for p in plan} == {1}


def test_a_commit_fraction_composes_with_the_alternation():
    """--commit-fraction used to turn the alternation off silently; now both decodings take their candidates from it."""
    plan = rollout_plan(Decoding(commit_fraction=0.01), 3, "local-max")
    assert [(p.method, p.commit_fraction) for p in plan] == [(None, 0.01), ("local-max-sampled", 0.01), (None, 0.01)]


def test_dense_graphs_rollouts_are_all_local_max():
    """Above SAMPLED_ROLLOUT_DEGREE the sampled ranking's noise outweighs the policy's, so no rollout samples it."""
    assert {p.method for p in rollout_plan(Decoding(), 6, "local-max", degree=SAMPLED_ROLLOUT_DEGREE)} == {None, "local-max-sampled"}
    assert {p.method for p in rollout_plan(Decoding(), 6, "local-max", degree=SAMPLED_ROLLOUT_DEGREE + 0.1)} == {None}
    assert [p.seed for p in rollout_plan(Decoding(seed=5), 3, "local-max", degree=64.0)] == [5, 6, 7]


def test_the_best_of_k_is_the_best_rollout_never_worse_than_the_first(tiny_model):
    graph = delaunay(200, 3)
    loaded = policy_for_graphs(tiny_model("mis"), [graph])
    runs = [solve_one(loaded.policy, loaded.env, one, TASKS["mis"].finish) for one in rollout_plan(Decoding(), 8, "local-max")]
    best = best_of_rollouts(loaded.policy, loaded.env, 8, finish=TASKS["mis"].finish)
    assert best.objective == max(run.objective for run in runs) >= runs[0].objective
    first_best = next(run for run in runs if run.objective == best.objective)  # ties go to the earliest rollout
    assert (best.seed, best.decoding, best.rollouts) == (first_best.seed, first_best.decoding, 8)
    assert (best.solution == first_best.solution).all()


def _predict(model, graph_file, out, *options):
    result = runner.invoke(
        app, ["predict", "--model", str(model), "--graph", str(graph_file), "--out", str(out), "--threads", "1", *options]
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_predict_auto_runs_64_rollouts_on_50_nodes_and_one_on_a_big_graph(tiny_model, tmp_path):
    ring = np.arange(50)  # a circulant graph, each node joined to the ones 1 and 8 away: degree 4, no triangle, odd cycles
    steps = np.concatenate([np.full(50, 1), np.full(50, 8)])  # (so not bipartite): no kernel
    write_edge_list(from_edges(np.concatenate([ring, ring]), (np.concatenate([ring, ring]) + steps) % 50, 50)[0], tmp_path / "small.txt")
    write_edge_list(barabasi_albert(16_000, 3, 1), tmp_path / "big.txt")  # degree >= 3: no kernel, the graph itself is solved
    small = _predict(tiny_model("mis"), tmp_path / "small.txt", tmp_path / "s.csv")
    assert re.search(r"objective \d+ in \d+ passes, best of 64 rollouts \(seeds 0-63; best: seed \d+, local-max(-sampled)?\)", small)
    assert ", 1 rollout, " in _predict(tiny_model("mis"), tmp_path / "big.txt", tmp_path / "b.csv")


def test_predict_writes_the_best_rollout_which_its_seed_and_decoding_repeat_alone(tiny_model, tmp_path):
    write_edge_list(delaunay(150, 2), tmp_path / "g.txt")
    model = tiny_model("mis")
    shown = _predict(model, tmp_path / "g.txt", tmp_path / "best.csv", "--rollouts", "6", "--seed", "3")
    assert "best of 6 rollouts (seeds 3-8;" in shown
    _predict(model, tmp_path / "g.txt", tmp_path / "again.csv", "--rollouts", "6", "--seed", "3")
    assert (tmp_path / "best.csv").read_text() == (tmp_path / "again.csv").read_text()  # the same seeds, the same answer
    seed, decoding = re.search(r"best: seed (\d+), ([a-z-]+)\)", shown).groups()
    _predict(model, tmp_path / "g.txt", tmp_path / "alone.csv", "--rollouts", "1", "--seed", seed, "--decoding", decoding)
    assert (tmp_path / "alone.csv").read_text() == (tmp_path / "best.csv").read_text()


def test_one_rollout_is_the_single_rollout_of_before(tiny_model, tmp_path):
    graph = delaunay(120, 4)
    write_edge_list(graph, tmp_path / "g.txt")
    shown = _predict(tiny_model("mis"), tmp_path / "g.txt", tmp_path / "one.csv", "--rollouts", "1", "--kernel-every", "0")
    assert ", 1 rollout, " in shown
    loaded = policy_for_graphs(tiny_model("mis"), [graph])
    before = solve(loaded.policy, loaded.env, seed=0, finish=TASKS["mis"].finish)
    write_solution(tmp_path / "before.csv", before.solution, "node,in_set", graph.ids())
    assert (tmp_path / "one.csv").read_text().splitlines()[1:] == (tmp_path / "before.csv").read_text().splitlines()[1:]


def test_eval_says_how_many_rollouts_each_decoding_is_the_best_of(tiny_model, tmp_path):
    write_edge_list(delaunay(100, 1), tmp_path / "g.txt")
    result = runner.invoke(app, ["eval", "--model", str(tiny_model("mis")), "--graphs", str(tmp_path / "g.txt"), "--threads", "1"])
    assert result.exit_code == 0, result.output
    header, line = result.output.splitlines()[:2]
    assert " best of " in header and re.search(r" local-max +\d+ +yes +\d+ +64 ", line)


@pytest.mark.parametrize("command", [["predict", "--out", "o.csv", "--graph"], ["eval", "--graphs"]])
@pytest.mark.parametrize("value", ["0", "-3", "many", "1000000000"])
def test_a_bad_rollout_count_is_a_one_line_error(command, value, tiny_model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*command[:-1], command[-1], "small", "--model", str(tiny_model("mis")), "--rollouts", value])
    assert result.exit_code == 2
    problem = {"0": "0 must be at least 1", "-3": "-3 must be at least 1", "1000000000": "1000000000 must be at most 4,096"}
    expected = problem.get(value, f"expected an integer or one of 'auto', got {value!r}")
    assert result.stderr == f"error: Decoding.rollouts (--rollouts): {expected}\n"
