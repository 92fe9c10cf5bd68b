"""Finishing a policy's independent set: undecided nodes completed by the documented rule, the set
made maximal, and each source of nodes counted apart."""

from __future__ import annotations

import numpy as np
import pytest

from graphtransfer.config import ModelConfig
from graphtransfer.errors import UsageError
from graphtransfer.graphs import erdos_renyi
from graphtransfer.nn import build_policy
from graphtransfer.solve.inference import solve
from graphtransfer.tasks import TASKS
from graphtransfer.tasks.mis.baselines import greedy_min_degree
from graphtransfer.tasks.mis.completion import finish_independent_set, make_maximal
from graphtransfer.tasks.mis.env import DEFER, EXCLUDE, IN_SET, INCLUDE, MISEnv
from graphtransfer.tasks.mis.step import mis_step
from tests.brute_force import is_maximal_independent
from tests.conftest import graph_from_pairs


def test_rule_completes_the_undecided_and_the_final_pass_adds_excluded_free_nodes():
    # Path 0-1-2-3-4-5. The policy took 1, excluded 0, 2, 3 and 4, and left 5 undecided:
    # the rule takes 5, and the final pass adds 3, whose neighbours 2 and 4 are both out.
    path = graph_from_pairs([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)], 6)
    chosen = np.array([0, 1, 0, 0, 0, 0], dtype=bool)
    undecided = np.array([0, 0, 0, 0, 0, 1], dtype=bool)
    finished = finish_independent_set(path, chosen, undecided)
    assert np.flatnonzero(finished.solution).tolist() == [1, 3, 5]
    assert (finished.by_policy, finished.undecided, finished.by_rule, finished.for_maximality) == (1, 1, 1, 1)
    assert "reached with 1 of 6 nodes undecided" in finished.pass_limit_warning(passes=256)


def test_the_rule_on_an_all_undecided_graph_is_greedy_min_degree():
    graph = erdos_renyi(300, 6.0, 4)
    env = MISEnv([graph], horizon=1)
    env.reset(seed=0)
    _, _, terminated, truncated, _ = env.step(np.full(env.max_nodes, DEFER))  # the pass limit, nothing decided
    assert truncated and not terminated
    finished = finish_independent_set(graph, env.solution(), env.active_nodes())
    assert np.array_equal(finished.solution, greedy_min_degree(graph))
    assert finished.undecided == 300 and finished.by_rule == finished.solution.sum() and finished.for_maximality == 0


@pytest.mark.parametrize("seed", range(4))
def test_any_partial_decoding_finishes_maximal_keeping_every_policy_node(seed):
    graph = erdos_renyi(300, 6.0, seed)
    rng = np.random.default_rng(seed)
    status = np.zeros(graph.num_nodes, dtype=np.int8)
    for _ in range(3):  # a few passes of random actions: some nodes in, some out, some undecided
        status, _ = mis_step(graph.edge_index, status, rng.choice([EXCLUDE, INCLUDE, DEFER], graph.num_nodes, p=[0.3, 0.2, 0.5]))
    chosen, undecided = status == IN_SET, status == 0
    finished = finish_independent_set(graph, chosen, undecided)
    assert is_maximal_independent(graph, finished.solution)
    assert finished.solution[chosen].all()
    assert finished.solution.sum() == finished.by_policy + finished.by_rule + finished.for_maximality
    assert finished.undecided == undecided.sum() > 0


def test_a_complete_maximal_set_gets_no_warning_and_nothing_added(star5):
    centre = np.array([1, 0, 0, 0, 0], dtype=bool)  # star5: node 0 joined to the other four
    finished = finish_independent_set(star5, centre, np.zeros(5, dtype=bool))
    assert finished.pass_limit_warning(passes=10) is None
    assert (finished.by_rule, finished.for_maximality) == (0, 0)
    assert make_maximal(star5, np.zeros(5, dtype=bool))[1] == 4  # the four leaves, least degree first


def test_an_infeasible_or_misshapen_set_is_refused(path5):
    with pytest.raises(UsageError, match="not an independent set"):
        finish_independent_set(path5, np.array([1, 1, 0, 0, 0], dtype=bool), np.zeros(5, dtype=bool))
    with pytest.raises(UsageError, match=r"undecided has shape \(4,\); expected \(5,\)"):
        finish_independent_set(path5, np.zeros(5, dtype=bool), np.zeros(4, dtype=bool))


def test_solve_finishes_a_decoding_cut_short_by_the_pass_limit():
    graph = erdos_renyi(300, 4.0, 0)
    env = MISEnv([graph], horizon=1)  # one pass: an untrained policy leaves many nodes undecided
    policy = build_policy("node-wise", ModelConfig(width=16, head_width=16), env.observation_space, env.action_space)
    plain, finished = solve(policy, env, seed=0), solve(policy, env, seed=0, finish=TASKS["mis"].finish)
    assert plain.finished is None and not is_maximal_independent(graph, plain.solution)
    assert finished.feasible and is_maximal_independent(graph, finished.solution)
    assert finished.finished.by_policy == plain.objective  # the same seed: the policy decided the same nodes
    assert finished.objective == plain.objective + finished.finished.by_rule + finished.finished.for_maximality
    assert finished.finished.undecided > 0
    assert finished.finished.pass_limit_warning(finished.passes).startswith("the pass limit (1 passes) was reached with ")
