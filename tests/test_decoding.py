"""Patient decoding of node-wise policies: with a commit fraction below 1 only the surest nodes commit."""

import pytest
import torch

from graphtransfer.config import ModelConfig, RunConfig
from graphtransfer.envs.factory import inference_env
from graphtransfer.envs.mis import DEFER, EXCLUDE, INCLUDE, UNDECIDED
from graphtransfer.errors import UsageError
from graphtransfer.graphs import erdos_renyi
from graphtransfer.nn import build_policy
from graphtransfer.solve.inference import patient_actions, settle_clashes, solve


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
    hasty = solve(policy, env, seed=0)
    patient = solve(policy, env, seed=0, commit_fraction=0.05)
    assert patient.feasible and not (env.unwrapped.status == UNDECIDED).any()
    assert patient.passes > hasty.passes


def test_a_commit_fraction_is_refused_where_it_means_nothing():
    graph = erdos_renyi(60, 4.0, 0)
    config = RunConfig(task="maxcut", head="node-wise", model=ModelConfig(width=16, head_width=16))
    env = inference_env(config, graph)
    policy = build_policy("node-wise", config.model, env.observation_space, env.action_space)
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
    solution = solve(policy, env, deterministic=True)
    assert solution.feasible and solution.objective == 1 and solution.passes == 1
