"""Decoding node-wise policies: the local-max decoding (MIS's default), and the drawn one, where
with a commit fraction below 1 only the surest nodes commit."""

import math

import numpy as np
import pytest
import torch

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.config import LOCAL_MAX_DENSE_PATIENCE, LOCAL_MAX_PATIENCE, ORDER_NOISE, ModelConfig, RunConfig, Runtime
from graphtransfer.envs.protocol import Head
from graphtransfer.errors import UsageError
from graphtransfer.graphs import barabasi_albert, erdos_renyi, random_geometric
from graphtransfer.graphs.generators import delaunay
from graphtransfer.nn import build_policy
from graphtransfer.nn.local_max import local_max_commits, with_gumbel_noise
from graphtransfer.solve.device import whole_graph
from graphtransfer.solve.inference import (
    caro_wei_bound,
    leave_out_candidates,
    leave_out_joins,
    local_max_candidates,
    local_max_patience,
    patient_actions,
    settle_clashes,
    solve,
    with_exact_actions,
)
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.tasks import TASKS
from graphtransfer.tasks.factory import inference_env
from graphtransfer.tasks.mis.baselines import greedy_in_order, greedy_min_degree
from graphtransfer.tasks.mis.device import device_passes
from graphtransfer.tasks.mis.env import DEFER, EXCLUDE, INCLUDE, UNDECIDED, MISEnv
from graphtransfer.tasks.mvc.baselines import greedy_max_degree
from graphtransfer.tasks.mvc.env import MVCEnv
from tests.brute_force import is_independent, is_maximal_independent, is_vertex_cover
from tests.conftest import graph_from_pairs


def test_only_the_surest_nodes_may_commit_and_nothing_else_is_decided():
    drawn = torch.tensor([INCLUDE, INCLUDE, EXCLUDE, INCLUDE, EXCLUDE])
    confidence = torch.tensor([0.9, 0.1, 0.8, 0.7, 0.2])
    # 40% of 5 nodes: the two surest (0 and 2) may commit; node 2 drew EXCLUDE, so it waits too
    got = patient_actions(drawn, confidence, 0.4, INCLUDE, DEFER)
    assert got.tolist() == [INCLUDE, DEFER, DEFER, DEFER, DEFER]


def test_a_pass_where_no_allowed_node_commits_keeps_every_drawn_action():
    drawn = torch.tensor([EXCLUDE, INCLUDE, DEFER])
    confidence = torch.tensor([0.9, 0.1, 0.2])
    assert patient_actions(drawn, confidence, 0.2, INCLUDE, DEFER).tolist() == drawn.tolist()


def _mis_policy_and_env(graph):
    config = RunConfig(task="mis", head="node-wise", model=ModelConfig(width=16, head_width=16))
    env = inference_env(config, graph)
    return build_policy("node-wise", config.model, env.observation_space, env.action_space), env, config


def test_patient_decoding_decides_every_node_in_more_passes():
    graph = erdos_renyi(300, 4.0, 0)
    policy, env, _ = _mis_policy_and_env(graph)
    hasty = solve(policy, env, seed=0, decoding="drawn")
    patient = solve(policy, env, seed=0, commit_fraction=0.05, decoding="drawn")
    assert patient.feasible and not (env.unwrapped.status == UNDECIDED).any()
    assert patient.passes > hasty.passes


def untrained_maxcut(graph):
    """An untrained node-wise policy and MaxCut's inference env on ``graph``: a task with
    neither a commit nor a defer action."""
    config = RunConfig(task="maxcut", head="node-wise", model=ModelConfig(width=16, head_width=16))
    env = inference_env(config, graph)
    return build_policy("node-wise", config.model, env.observation_space, env.action_space), env


def test_a_commit_fraction_is_refused_where_it_means_nothing():
    graph = erdos_renyi(60, 4.0, 0)
    policy, env = untrained_maxcut(graph)
    with pytest.raises(UsageError, match="MaxCutEnv names no commit_action"):
        solve(policy, env, commit_fraction=0.5)
    policy, env, _ = _mis_policy_and_env(graph)
    with pytest.raises(UsageError, match=r"must be in \(0, 1\]"):
        solve(policy, env, commit_fraction=0.0)


PATH = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])  # 0-1-2-3, both directions


def test_a_pass_that_would_decide_nothing_leaves_the_surer_of_clashing_neighbours_committed():
    drawn = torch.tensor([INCLUDE, INCLUDE, INCLUDE, INCLUDE])  # every include clashes: nothing would happen
    confidence = torch.tensor([0.2, 0.9, 0.5, 0.5])  # 1 beats 0 and 2; 2 and 3 tie: the lower id keeps it
    assert settle_clashes(drawn, confidence, PATH, INCLUDE, DEFER).tolist() == [DEFER, INCLUDE, DEFER, DEFER]


def test_a_pass_that_makes_progress_is_left_as_drawn():
    confidence = torch.tensor([0.2, 0.9, 0.5, 0.5])
    joins = torch.tensor([INCLUDE, INCLUDE, DEFER, INCLUDE])  # 3 joins alone; 0 and 1 clash and are rolled back
    leaves = torch.tensor([INCLUDE, INCLUDE, EXCLUDE, DEFER])  # 2 leaves
    for drawn in (joins, leaves):
        assert settle_clashes(drawn, confidence, PATH, INCLUDE, DEFER).tolist() == drawn.tolist()


def test_a_pass_where_every_node_defers_commits_the_surest():
    edge_index = torch.tensor([[0, 1], [1, 0]])
    got = settle_clashes(torch.tensor([DEFER, DEFER, DEFER]), torch.tensor([0.1, 0.3, 0.2]), edge_index, INCLUDE, DEFER)
    assert got.tolist() == [DEFER, INCLUDE, DEFER]


def test_deterministic_decoding_of_look_alike_neighbours_never_stalls():
    """A clique: every node looks the same to the policy, so before clashes were settled the
    deterministic decoding rolled every includer back until the pass limit."""
    from graphtransfer.graphs import from_edges

    nodes = 30
    pairs = torch.combinations(torch.arange(nodes), 2).numpy()
    graph, _, _ = from_edges(pairs[:, 0], pairs[:, 1], nodes, "clique-30")
    policy, env, _ = _mis_policy_and_env(graph)
    last = policy.node_head[-1]
    with torch.no_grad():  # every node, alike, most wants to include: unsettled, all would roll back every pass
        last.weight.zero_()
        last.bias.copy_(torch.tensor([0.0, 5.0, 0.0]))
    solution = solve(policy, env, deterministic=True, decoding="drawn")
    assert solution.feasible and solution.objective == 1 and solution.passes == 1


# The local-max decoding, MIS's default: the surest nodes that outrank every undecided neighbour commit.


def _trained_mis(tiny_model, graph):
    from graphtransfer.solve.loading import policy_for_graphs

    loaded = policy_for_graphs(tiny_model("mis"), [graph])
    return loaded.policy, loaded.env


def test_one_local_max_pass_commits_an_independent_set_that_includes_the_surest_node():
    graph = erdos_renyi(2000, 8.0, 3)
    confidence = torch.from_numpy(np.random.default_rng(0).random(graph.num_nodes)).float()
    edge_index = torch.from_numpy(graph.edge_index)
    for candidates in (graph.num_nodes, 40, 1):
        commits = local_max_commits(confidence, edge_index, candidates).numpy()
        assert is_independent(graph, commits) and commits[int(torch.argmax(confidence))]
    assert local_max_commits(confidence, edge_index, 1).sum() == 1


def test_a_local_max_pass_is_the_first_round_of_greedy_in_the_policys_order():
    """Scanning the nodes surest first and taking each one whose neighbours are all free (greedy
    in that order) takes, in its first round, exactly the nodes that outrank all their neighbours."""
    graph = delaunay(1500, 2)
    confidence = torch.from_numpy(np.random.default_rng(1).random(graph.num_nodes).round(2)).float()  # with ties: lower id first
    order = np.lexsort((np.arange(graph.num_nodes), -confidence.numpy()))
    first_round = greedy_in_order(graph, order) & ~_has_earlier_neighbour(graph, order)
    commits = local_max_commits(confidence, torch.from_numpy(graph.edge_index), graph.num_nodes)
    assert np.array_equal(commits.numpy(), first_round)


def _has_earlier_neighbour(graph, order):
    position = np.empty(graph.num_nodes, dtype=np.int64)
    position[order] = np.arange(graph.num_nodes)
    src, dst = graph.edge_index
    earlier = np.zeros(graph.num_nodes, dtype=bool)
    earlier[src[position[dst] < position[src]]] = True
    return earlier


def test_the_caro_wei_bound_counts_each_node_once_over_its_degree_plus_one(star5):
    obs, _ = MISEnv([star5]).reset(seed=0)
    assert caro_wei_bound(obs) == pytest.approx(1 / 5 + 4 / 2)


def test_local_max_patience_follows_the_graphs_density():
    """By default about 2% of the nodes are candidates at average degree 8 (0.15 of the Caro-Wei
    bound), and a third of that share of a far smaller bound at 128, half of it at 32; a given
    commit fraction, and node choice (MVC), count the graph's nodes instead."""
    sparse, middle, dense = (MISEnv([erdos_renyi(10_000, degree, 0)]).reset(seed=0)[0] for degree in (8.0, 32.0, 128.0))
    assert local_max_patience(sparse) == LOCAL_MAX_PATIENCE and local_max_patience(dense) == LOCAL_MAX_DENSE_PATIENCE
    assert local_max_patience(middle) == pytest.approx(LOCAL_MAX_PATIENCE / 2, rel=0.05)
    assert 150 <= local_max_candidates(sparse, Head.NODE_WISE, None) <= 250
    assert local_max_candidates(dense, Head.NODE_WISE, None) == math.ceil(LOCAL_MAX_DENSE_PATIENCE * caro_wei_bound(dense)) == 4
    assert local_max_candidates(dense, Head.NODE_WISE, 0.02) == 200
    assert local_max_candidates(dense, Head.NODE_CHOICE, None) == 1000
    assert local_max_candidates(dense, Head.NODE_WISE, 1e-9) == 1


@pytest.fixture(scope="module")
def briefly_trained_mis(tmp_path_factory):
    """An MIS policy trained by the real CLI for 4,096 steps on the sample graphs (20-60 nodes,
    average degree 4-6), seed 0, on the CPU on every machine (the tests that read it compare set
    sizes within a node or two)."""
    from typer.testing import CliRunner

    from graphtransfer.cli import app

    folder = tmp_path_factory.mktemp("mis-4096")
    command = ["train", "--task", "mis", "--graphs", "small", "--steps", "4096", "--device", "cpu", "--no-progress", "--out", str(folder)]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    return folder


@pytest.mark.slow
def test_a_briefly_trained_policy_beats_greedy_on_dense_graphs_with_the_default_decoding(briefly_trained_mis):
    """Six Erdős–Rényi graphs of 300 nodes and average degree 64, ten times the training graphs'
    density: the default decoding finds more nodes in all than greedy minimum degree, and more
    than the same policy deciding a fixed 2% of the nodes per pass (the default before patience
    followed the graph), which lets the sets of such graphs be decided in a pass or two."""
    from graphtransfer.solve.loading import policy_for_graphs

    found, fixed_share, greedy = 0, 0, 0
    for seed in range(6):
        graph = erdos_renyi(300, 64.0, seed)
        loaded = policy_for_graphs(briefly_trained_mis, [graph])
        default = solve(loaded.policy, loaded.env, finish=TASKS["mis"].finish)
        assert is_maximal_independent(graph, default.solution)
        found += default.objective
        fixed_share += solve(loaded.policy, loaded.env, commit_fraction=0.02, finish=TASKS["mis"].finish).objective
        greedy += int(greedy_min_degree(graph).sum())
    assert found > greedy and found > fixed_share, (found, greedy, fixed_share)


@pytest.mark.slow
def test_default_predict_finds_at_least_greedys_set_on_a_small_dense_graph(briefly_trained_mis):
    """What a user gets with no options (``--rollouts auto``: 64 rollouts at 150 nodes, every one
    local-max at average degree 30) on an Erdős–Rényi graph of 150 nodes and average degree 30:
    a maximal independent set at least as large as greedy minimum degree's (22 against 19 when
    written; the first rollout alone: 20)."""
    from graphtransfer.solve.predict import predict_graph

    graph = erdos_renyi(150, 30.0, 1)
    solution, _ = predict_graph(briefly_trained_mis, graph)
    assert solution.rollouts == 64 and solution.decoding == "local-max"
    assert is_maximal_independent(graph, solution.solution)
    assert solution.objective >= greedy_min_degree(graph).sum(), (solution.objective, greedy_min_degree(graph).sum())


@pytest.mark.slow
def test_dense_graphs_patience_finds_more_than_the_sparse_graphs_share():
    """Three Erdős–Rényi graphs of 1,500 nodes and average degree 64: with the built-in model,
    the default decoding, a third of the sparse share of the Caro-Wei bound per pass (two
    candidates there), finds more nodes in all than the same policy at the sparse graphs' 0.15
    of the bound (five) and than greedy minimum degree. (A policy trained for 4,096 steps here
    came out either side of the sparse share, by 12 nodes of 1,040 and by 1, as float rounding
    in training changed; the built-in model is the one a default predict runs.)"""
    from graphtransfer.solve.loading import policy_for_graphs
    from graphtransfer.zoo import zoo_folder

    found, sparse_share, greedy = 0, 0, 0
    for seed in range(3):
        graph = erdos_renyi(1500, 64.0, seed)
        loaded = policy_for_graphs(zoo_folder("mis"), [graph])
        obs, _ = loaded.env.reset(seed=0)
        assert local_max_patience(obs) == LOCAL_MAX_DENSE_PATIENCE
        default = solve(loaded.policy, loaded.env, finish=TASKS["mis"].finish)
        assert is_maximal_independent(graph, default.solution)
        found += default.objective
        share = LOCAL_MAX_PATIENCE * caro_wei_bound(obs) / graph.num_nodes
        sparse_share += solve(loaded.policy, loaded.env, commit_fraction=share, finish=TASKS["mis"].finish).objective
        greedy += int(greedy_min_degree(graph).sum())
    assert found > sparse_share and found > greedy, (found, sparse_share, greedy)


def test_local_max_decoding_gives_a_maximal_independent_set_deciding_every_node(tiny_model):
    graph = random_geometric(3000, 8.0, 4)
    policy, env = _trained_mis(tiny_model, graph)
    found = solve(policy, env, finish=TASKS["mis"].finish)
    assert found.finished.undecided == 0 and found.finished.by_rule == 0  # the policy decided every node itself
    assert found.finished.for_maximality == 0  # nobody left out who could join: local-max excludes only neighbours of the set
    assert is_maximal_independent(graph, found.solution)


def test_local_max_decoding_repeats_exactly_for_a_seed_and_draws_nothing(tiny_model):
    graph = barabasi_albert(2000, 4, 5)
    policy, env = _trained_mis(tiny_model, graph)
    first, again = solve(policy, env, seed=3), solve(policy, env, seed=3, deterministic=True)
    other = solve(policy, env, seed=4)
    assert np.array_equal(first.solution, again.solution) and first.passes == again.passes
    assert not np.array_equal(first.solution, other.solution)  # the seed still seeds the env's random features


def test_local_max_decoding_never_stalls_on_a_dense_graph(tiny_model):
    """Look-alike neighbours everywhere: the surest node of the whole graph always commits."""
    graph = erdos_renyi(400, 200.0, 6)
    policy, env = _trained_mis(tiny_model, graph)
    found = solve(policy, env, commit_fraction=1e-9, finish=TASKS["mis"].finish)  # one candidate per pass: the slowest the rule can go
    assert found.finished.undecided == 0 and found.passes < env.unwrapped.horizon
    assert found.passes <= found.finished.by_policy  # one node of the policy's joins per pass, the exact rules' besides
    assert is_maximal_independent(graph, found.solution)


def test_local_max_takes_what_the_exact_rules_decide_whatever_the_policy_ranks(tiny_model):
    """A spider, legs centre - knee - foot: the knees, dominated by their feet, leave, and then
    the feet and the centre, left alone, join: the largest set, legs + 1, in three passes at most.
    Without the reductions the policy alone commits every node of its set."""
    legs = 12
    pairs = [(0, leg) for leg in range(1, legs + 1)] + [(leg, legs + leg) for leg in range(1, legs + 1)]
    graph = graph_from_pairs(pairs, 2 * legs + 1, "spider")
    policy, env = _trained_mis(tiny_model, graph)
    found = solve(policy, env)
    assert found.objective == legs + 1 and found.passes <= 3 and is_maximal_independent(graph, found.solution)
    alone = solve(policy, env, reductions=False)  # at most 2 commits a pass (0.15 of the Caro-Wei bound, 10), 12 or more to make
    assert alone.passes >= 6 and is_maximal_independent(graph, alone.solution)


def test_the_exact_actions_overrule_the_policy_and_its_commits_beside_an_exact_include():
    path4 = np.array([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    chosen = np.array([INCLUDE, DEFER, INCLUDE, DEFER])
    exact = np.array([EXCLUDE, DEFER, DEFER, INCLUDE])
    assert with_exact_actions(chosen, exact, path4, INCLUDE, DEFER).tolist() == [EXCLUDE, DEFER, DEFER, INCLUDE]


def test_local_max_and_drawn_decodings_agree_where_every_maximal_set_is_the_same_size(tiny_model):
    """Disjoint cliques: any maximal independent set holds one node of each, so both decodings,
    finished, must find exactly that many."""
    from graphtransfer.graphs import from_edges

    cliques, size = 40, 6
    pairs = np.array([(c * size + a, c * size + b) for c in range(cliques) for a in range(size) for b in range(a + 1, size)])
    graph, _, _ = from_edges(pairs[:, 0], pairs[:, 1], cliques * size, "cliques")
    policy, env = _trained_mis(tiny_model, graph)
    for decoding in ("local-max", "drawn"):
        found = solve(policy, env, decoding=decoding, finish=TASKS["mis"].finish)
        assert found.objective == cliques, decoding


@pytest.mark.parametrize("decoding", ["local-max", "local-max-sampled"])
def test_local_max_is_refused_where_it_cannot_apply(decoding):
    graph = erdos_renyi(60, 4.0, 0)
    policy, env = untrained_maxcut(graph)
    with pytest.raises(UsageError, match=f"MaxCutEnv names neither commit_action and defer_action .* so the {decoding} decoding"):
        solve(policy, env, decoding=decoding)
    policy, env, _ = _mis_policy_and_env(graph)
    with pytest.raises(UsageError, match="decoding 'greedy' is not one of local-max, drawn, local-max-sampled"):
        solve(policy, env, decoding="greedy")


# local-max-sampled: local-max on a ranking drawn near the policy's, what every other rollout of --rollouts auto runs.


def test_gumbel_noise_at_scale_one_draws_the_first_place_in_proportion_to_exp_scores():
    scores = torch.log(torch.tensor([0.6, 0.3, 0.1])).repeat(20_000, 1)
    first = with_gumbel_noise(scores, 1.0, torch.Generator().manual_seed(0)).argmax(dim=1)
    shares = torch.bincount(first, minlength=3) / first.numel()
    assert torch.allclose(shares, torch.tensor([0.6, 0.3, 0.1]), atol=0.015)
    sharper = with_gumbel_noise(scores, 0.1, torch.Generator().manual_seed(0)).argmax(dim=1)
    assert (sharper == 0).float().mean() > 0.99  # a small scale keeps the scores' own order


def test_sampled_local_max_gives_maximal_sets_that_differ_by_seed_and_repeat_for_one(tiny_model):
    graph = delaunay(400, 2)
    policy, env = _trained_mis(tiny_model, graph)
    runs = [solve(policy, env, seed=seed, decoding="local-max-sampled", finish=TASKS["mis"].finish) for seed in range(4)]
    for found in runs:
        assert found.decoding == "local-max-sampled" and found.finished.undecided == 0 and found.finished.by_rule == 0
        assert is_maximal_independent(graph, found.solution)
    again = solve(policy, env, seed=2, decoding="local-max-sampled", finish=TASKS["mis"].finish)
    assert np.array_equal(again.solution, runs[2].solution)
    plain = solve(policy, env, seed=2, finish=TASKS["mis"].finish)  # the same env features: only the ranking's noise differs
    assert not np.array_equal(plain.solution, runs[2].solution)
    assert len({found.solution.tobytes() for found in runs}) == 4


def test_a_cover_pass_leaves_out_the_lowest_scoring_nodes_below_their_neighbours_and_takes_their_neighbours(path5):
    edge_index = torch.from_numpy(path5.edge_index)
    scores = torch.tensor([0.1, 0.9, 0.8, 0.2, 0.7])  # 0 - 1 - 2 - 3 - 4
    # candidates 0 and 3 score below every neighbour: they stay out, 1, 2 and 4 join
    assert leave_out_joins(scores, edge_index, 2).tolist() == [False, True, True, False, True]
    assert leave_out_joins(scores, edge_index, 1).tolist() == [False, True, False, False, False]
    # 4 is a candidate too, but its neighbour 3 scores lower: 4 waits
    assert leave_out_joins(scores, edge_index, 3).tolist() == [False, True, True, False, True]
    tied = torch.zeros(5)  # ties go to the lower id: only 0 is below all its neighbours
    assert leave_out_joins(tied, edge_index, 5).tolist() == [False, True, False, False, False]


def test_mvcs_candidates_to_stay_out_follow_the_graphs_density():
    """A share of the Caro-Wei bound, the independent set a cover leaves out, not of the nodes:
    fewer on denser graphs; a given commit fraction counts the graph's nodes."""
    sparse, dense = (MVCEnv([erdos_renyi(10_000, degree, 0)]).reset(seed=0)[0] for degree in (8.0, 128.0))
    assert 150 <= leave_out_candidates(sparse, None) <= 250
    assert 5 <= leave_out_candidates(dense, None) <= 15
    assert leave_out_candidates(dense, 0.02) == 200


def test_local_max_is_mvcs_default_and_gives_a_minimal_cover_one_left_out_node_at_a_time_if_asked(tiny_model):
    """Node choice that covers (MVC): every node that joins has a neighbour left out, so no node
    of the cover is redundant; with one candidate per pass one node stays out per pass."""
    from graphtransfer.solve.loading import policy_for_graphs

    graph = barabasi_albert(300, 4, 7)
    loaded = policy_for_graphs(tiny_model("mvc"), [graph])
    default = solve(loaded.policy, loaded.env)
    one_at_a_time = solve(loaded.policy, loaded.env, commit_fraction=1e-9)
    sampled = solve(loaded.policy, loaded.env, decoding="local-max-sampled")
    src, dst = graph.edge_index
    for found in (default, one_at_a_time, sampled):
        assert found.feasible and is_vertex_cover(graph, found.solution)
        needed = np.zeros(graph.num_nodes, dtype=bool)
        needed[src[~found.solution[dst]]] = True  # a node of the cover with a neighbour outside it
        assert needed[found.solution].all()
    assert default.passes < one_at_a_time.passes <= graph.num_nodes - one_at_a_time.objective
    assert not np.array_equal(sampled.solution, default.solution)


def test_mvcs_passes_stay_few_on_a_dense_graph(tiny_model):
    """On a graph of average degree 150 the cover holds about 95% of the nodes; deciding the few
    left out takes a few dozen passes, where committing only the policy's local maxima took one
    pass per independent set of the cover (hundreds)."""
    from graphtransfer.solve.loading import policy_for_graphs

    graph = erdos_renyi(600, 150.0, 0)
    loaded = policy_for_graphs(tiny_model("mvc"), [graph])
    found = solve(loaded.policy, loaded.env)
    assert found.feasible and is_vertex_cover(graph, found.solution)
    assert found.objective >= 0.9 * graph.num_nodes
    assert found.passes <= 30


def test_a_briefly_trained_mvc_policy_covers_dense_graphs_with_fewer_nodes_than_greedy(tiny_model):
    """Four Erdős–Rényi graphs of 300 nodes and average degree 64, ten times the training graphs'
    density: the default decoding's covers hold fewer nodes in all than greedy maximum degree's
    (1,110 against 1,117 measured; an untrained policy's took 1,147)."""
    from graphtransfer.solve.loading import policy_for_graphs

    covered, greedy = 0, 0
    for seed in range(4):
        graph = erdos_renyi(300, 64.0, seed)
        loaded = policy_for_graphs(tiny_model("mvc"), [graph])
        found = solve(loaded.policy, loaded.env)
        assert found.feasible
        covered, greedy = covered + found.objective, greedy + int(greedy_max_degree(graph).sum())
    assert covered < greedy


@pytest.mark.parametrize("order_noise", [0.0, ORDER_NOISE])
def test_mis_passes_kept_on_the_device_find_the_envs_set_pass_for_pass(order_noise):
    """The GPU's MIS passes (graphtransfer.tasks.mis.device), run here on the CPU, against the
    env's own steps with the same built-in model, seed and candidates: the same set, the same
    passes, the env left where its steps leave it; also when the horizon cuts the episode."""
    checkpoint = read_checkpoint("mis")
    for graph, max_passes in ((erdos_renyi(400, 6.0, 1), None), (erdos_renyi(300, 40.0, 2), None), (barabasi_albert(400, 2, 3), 3)):
        on_host, on_device = (policy_for_graphs(checkpoint, [graph], Runtime(device="cpu"), max_passes=max_passes) for _ in range(2))
        decoding = "local-max-sampled" if order_noise else "local-max"
        expected = solve(on_host.policy, on_host.env, seed=5, decoding=decoding)
        candidates = local_max_candidates(whole_graph(on_device.env), Head.NODE_WISE, None)
        with torch.inference_mode():
            rewards = device_passes(on_device.policy, on_device.env, 5, candidates, order_noise, torch.Generator().manual_seed(5))
        task = on_device.env.unwrapped
        assert len(rewards) == expected.passes and np.array_equal(task.solution(), expected.solution)
        assert np.array_equal(task.status, on_host.env.unwrapped.status) and task.steps == on_host.env.unwrapped.steps
        assert np.array_equal(task._residual(), on_host.env.unwrapped._residual())
        assert sum(rewards) * graph.num_nodes == pytest.approx(expected.objective)
    assert max_passes == 3 and (task.status == UNDECIDED).any()  # the last graph was cut by its horizon


def test_mis_passes_on_the_device_end_where_the_host_passes_end_when_the_kernel_is_due():
    """The early end of a stretch of passes (graphtransfer.solve.residual_kernels.kernel_due) asked
    of the device's passes, run here on the CPU, and of the env's steps: on a Barabasi-Albert graph
    with m = 3, whose first pass leaves a residual graph mostly of degree <= 2, both end after the
    same pass, before the episode would, with the same set."""
    from graphtransfer.solve.residual_kernels import kernel_due

    checkpoint = read_checkpoint("mis")
    graph = barabasi_albert(3_000, 3, 1)
    on_host, on_device = (policy_for_graphs(checkpoint, [graph], Runtime(device="cpu")) for _ in range(2))
    whole = solve(on_host.policy, on_host.env, seed=5)
    expected = solve(on_host.policy, on_host.env, seed=5, until=kernel_due)
    candidates = local_max_candidates(whole_graph(on_device.env), Head.NODE_WISE, None)
    with torch.inference_mode():
        rewards = device_passes(on_device.policy, on_device.env, 5, candidates, 0.0, torch.Generator().manual_seed(5), until=kernel_due)
    assert expected.passes < whole.passes and len(rewards) == expected.passes
    assert np.array_equal(on_device.env.unwrapped.solution(), expected.solution)


def test_the_devices_domination_checks_find_the_envs_dominated_nodes():
    from graphtransfer.tasks.mis.device import dominated, pendant_dominated
    from graphtransfer.tasks.mis.domination import pendant_dominated as pendant_dominated_on_host
    from graphtransfer.tasks.mis.env import dominated as dominated_on_host
    from graphtransfer.tasks.mis.step import by_destination

    for seed, (n, degree) in enumerate([(60, 2.0), (80, 5.0), (50, 20.0), (200, 60.0)]):
        for graph in (erdos_renyi(n, degree, seed), random_geometric(n, degree, seed)):
            edges = by_destination(graph)
            degrees = np.bincount(edges[0], minlength=graph.num_nodes)
            expected = dominated_on_host(edges, degrees)
            found = dominated(torch.from_numpy(edges), torch.from_numpy(degrees)).numpy()
            assert np.array_equal(found, expected) and (expected.any() or degree > 10), (seed, graph.name)
            pendants = pendant_dominated(torch.from_numpy(edges), torch.from_numpy(degrees)).numpy()
            assert np.array_equal(pendants, pendant_dominated_on_host(edges, degrees)), (seed, graph.name)
