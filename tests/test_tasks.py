"""Each task's rules, objective and feasibility, checked against brute force on tiny graphs."""

import itertools

import numpy as np
import pytest

from graphtransfer.graphs import erdos_renyi
from graphtransfer.tasks import EpidemicEnv, MaxCutEnv, MVCEnv, cut_size, is_vertex_cover
from graphtransfer.tasks.epidemic import env as epidemic_rules
from graphtransfer.tasks.epidemic.env import COST

from .conftest import graph_from_pairs


def all_subsets(n):
    for bits in itertools.product([False, True], repeat=n):
        yield np.array(bits)


@pytest.mark.parametrize("seed", range(8))
def test_cover_and_cut_definitions_match_brute_force(seed):
    graph = erdos_renyi(7, 2.5, seed)
    pairs = {tuple(sorted(e)) for e in graph.edge_index.T.tolist()}
    for subset in all_subsets(graph.num_nodes):
        assert is_vertex_cover(graph, subset) == all(subset[u] or subset[v] for u, v in pairs)
        assert cut_size(graph, subset.astype(np.int8)) == sum(subset[u] != subset[v] for u, v in pairs)


def test_mvc_episode_builds_a_cover_and_rewards_count_its_nodes():
    graph = erdos_renyi(10, 3.0, 1)
    env = MVCEnv([graph])
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    total, done = 0.0, False
    while not done:
        mask = env.action_masks()
        _, reward, terminated, truncated, _ = env.step(rng.choice(np.flatnonzero(mask)))
        total, done = total + reward, terminated or truncated
    assert terminated and is_vertex_cover(graph, env.solution())
    assert total == pytest.approx(-env.solution().sum() / graph.num_nodes)


def test_mvc_masks_only_nodes_with_uncovered_edges(path5):
    env = MVCEnv([path5])
    env.reset(seed=0)
    env.step(1)  # covers 0-1 and 1-2
    assert env.action_masks().tolist() == [False, False, True, True, True]
    obs, *_ = env.step(3)  # covers 2-3 and 3-4: done
    assert int(obs["num_edges"][0]) == 0 and env._finished()


def test_mvc_step_many_commits_several_nodes(star5):
    env = MVCEnv([star5])
    env.reset(seed=0)
    _, reward, terminated, _, _ = env.step_many(np.array([1, 2, 3, 4]))
    assert reward == pytest.approx(-4 / 5) and terminated


def test_maxcut_rewards_sum_to_cut_improvement():
    graph = erdos_renyi(9, 3.0, 2)
    env = MaxCutEnv([graph], horizon=6)
    env.reset(seed=3)
    start = cut_size(graph, env.side)
    rng = np.random.default_rng(1)
    total = sum(env.step(rng.integers(0, 2, env.max_nodes))[1] for _ in range(6))
    assert total == pytest.approx((cut_size(graph, env.side) - start) / graph.num_edges)


def test_maxcut_optimum_is_reachable_by_flips():
    square = graph_from_pairs([(0, 1), (1, 2), (2, 3), (3, 0)], 4)
    env = MaxCutEnv([square])
    env.reset(seed=0)
    target = np.array([0, 1, 0, 1], dtype=np.int8)
    env.step((env.side != target).astype(np.int64))
    assert MaxCutEnv.objective(square, env.solution()) == 4


def test_epidemic_objective_equals_the_episode_return():
    graph = erdos_renyi(40, 4.0, 0)
    env = EpidemicEnv([graph])
    env.reset(seed=0)
    total, done, step = 0.0, False, 0
    while not done:
        _, reward, terminated, truncated, _ = env.step(step % 3)
        total, done, step = total + reward, terminated or truncated, step + 1
    assert EpidemicEnv.objective(graph, env.solution()) == pytest.approx(total)


def test_epidemic_measures_change_the_outcome_on_the_same_course_of_events():
    graph = erdos_renyi(200, 6.0, 0)
    never = epidemic_rules.never(graph)
    lockdown = epidemic_rules.always_lockdown(graph)
    assert never[:, 2].sum() > lockdown[:, 2].sum()  # fewer infections under lockdown
    assert (lockdown[:, 1] == 2).all() and COST[2] > COST[0]
    assert np.array_equal(epidemic_rules.never(graph), never)  # seeded: repeats exactly
