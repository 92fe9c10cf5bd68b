"""Equal isolated nodes embedded once: the same outputs, values and gradients as every node embedded."""

import numpy as np
import pytest
import torch

from examples.line_upgrade import LineUpgradeEnv
from graphtransfer.config import ModelConfig
from graphtransfer.graphs import erdos_renyi
from graphtransfer.nn import build_policy, build_q_policy, compaction, configure_runtime
from graphtransfer.nn.compaction import compact_isolated
from graphtransfer.tasks import EpidemicEnv, MatchingEnv, MISEnv, MVCEnv

from .conftest import graph_from_pairs


@pytest.fixture(autouse=True)
def small_batches_merged(monkeypatch):
    """These batches are small, below the size where merging pays: merge them anyway."""
    monkeypatch.setattr(compaction, "MIN_NODES", 0)


def stack(observations):
    return {k: torch.as_tensor(np.stack([o[k] for o in observations])) for k in observations[0]}


def mis_batch(sizes=(300, 450, 220)):
    """MIS observations a few random steps into their episodes: the decided nodes are isolated,
    one feature row for those in the set and one for those left out."""
    env = MISEnv([erdos_renyi(n, 4.0, n) for n in sizes])
    rng = np.random.default_rng(0)
    observations = []
    for i in range(len(sizes)):
        obs, _ = env.reset(seed=i, options={"graph_index": i})
        for _ in range(i + 1):
            obs, *_ = env.step(rng.integers(0, 3, env.action_space.shape[0]))
        observations.append(obs)
    return env, stack(observations)


def with_isolated_batch(env_class):
    """Observations of graphs whose last nodes have no edges, in two groups of equal rows."""
    graphs = []
    for connected, isolated in ((40, 60), (25, 40)):
        core = erdos_renyi(connected, 3.0, connected)
        graphs.append(graph_from_pairs(core.edge_index.T, connected + isolated, f"isolated-{connected}"))
    env = env_class(graphs)
    observations = [env.reset(seed=i, options={"graph_index": i})[0] for i in range(len(graphs))]
    for obs, graph in zip(observations, graphs, strict=True):
        first = graph.num_nodes - (60 if graph.num_nodes == 100 else 40)
        half = (first + graph.num_nodes) // 2
        obs["x"][first:half] = obs["x"][first]
        obs["x"][half : graph.num_nodes] = obs["x"][half] + 0.5
    return env, stack(observations)


def merging_off_then_on(policy, outputs, loss=lambda found: sum(output.sum() for output in found)):
    """``outputs(policy)`` (a tuple of tensors) and the gradients of ``loss`` of them, with merging
    off then on."""
    results = []
    for merged in (False, True):
        configure_runtime(policy, compact_isolated=merged)
        policy.zero_grad()
        found = outputs(policy)
        loss(found).backward()
        results.append(([output.detach() for output in found], [p.grad.clone() for p in policy.parameters() if p.grad is not None]))
    return results


def outputs_and_gradients(policy, obs, head):
    """What an update reads (values, log-probabilities, entropies; the pooled features of a
    graph-level policy) and the gradients of their sum, with merging off then on."""
    torch.manual_seed(0)
    if head == "graph-level":
        return merging_off_then_on(policy, lambda p: (p.features_extractor(obs),))
    actions = policy.get_distribution(obs).sample()
    return merging_off_then_on(policy, lambda p: p.evaluate_actions(obs, actions))


def merged_batch(env_class, rows):
    """Rows ``rows`` of :func:`with_isolated_batch`, a batch that merging does shrink."""
    env, obs = with_isolated_batch(env_class)
    obs = {k: v[rows] for k, v in obs.items()}
    assert compact_isolated(obs) is not None
    return env, obs


def assert_same(results):
    (outputs, gradients), (merged_outputs, merged_gradients) = results
    for whole, merged in zip(outputs, merged_outputs, strict=True):
        torch.testing.assert_close(merged, whole, atol=2e-5, rtol=1e-5)
    scale = max(float(whole.abs().max()) for whole in gradients)  # float rounding follows the largest gradient
    for whole, merged in zip(gradients, merged_gradients, strict=True):
        torch.testing.assert_close(merged, whole, atol=1e-5 * scale, rtol=1e-4)


@pytest.mark.parametrize("rows", [slice(None), slice(0, 1), slice(2, 3)])
def test_mis_steps_give_the_same_numbers_merged(rows):
    env, obs = mis_batch()
    obs = {k: v[rows] for k, v in obs.items()}
    merged = compact_isolated(obs)
    assert merged is not None and int(merged.obs["num_nodes"].sum()) < 0.75 * int(obs["num_nodes"].sum())
    policy = build_policy("node-wise", ModelConfig(), env.observation_space, env.action_space)
    assert_same(outputs_and_gradients(policy, obs, "node-wise"))


@pytest.mark.parametrize(("env_class", "head"), [(MVCEnv, "node-choice"), (MatchingEnv, "edge-wise"), (EpidemicEnv, "graph-level")])
@pytest.mark.parametrize("rows", [slice(None), slice(1, 2)])
def test_every_head_gives_the_same_numbers_merged(env_class, head, rows):
    env, obs = merged_batch(env_class, rows)
    policy = build_policy(head, ModelConfig(width=16, head_width=16), env.observation_space, env.action_space)
    assert_same(outputs_and_gradients(policy, obs, head))


@pytest.mark.parametrize(("env_class", "head"), [(MVCEnv, "node-choice"), (LineUpgradeEnv, "edge-choice")])
@pytest.mark.parametrize("rows", [slice(None), slice(1, 2)])
def test_dqn_q_values_are_the_same_merged(env_class, head, rows):
    env, obs = merged_batch(env_class, rows)
    policy = build_q_policy(head, ModelConfig(width=16, head_width=16), env.observation_space, env.action_space)
    results = merging_off_then_on(
        policy,
        lambda p: (p.q_values(obs), p.node_scores(obs)[0]),
        loss=lambda found: found[0].masked_fill(found[0] <= -1e7, 0).sum(),  # the Q-values of real actions
    )
    assert_same(results)


def test_a_hand_built_batch_keeps_connected_nodes_and_one_node_per_equal_row():
    """Nodes 0-1-2 connected; 3, 4 and 5 isolated, 3 and 5 with equal rows: 3 stands for 5."""
    graph = graph_from_pairs([(0, 1), (1, 2)], 6)
    env = MISEnv([graph])
    obs, _ = env.reset(seed=0)
    obs["x"][5] = obs["x"][3]
    obs["x"][4] = obs["x"][3] + 1
    batch = stack([obs])
    assert compact_isolated(batch) is None  # 1 of 6 nodes would go: below the saving worth its indexing
    merged = compact_isolated(batch, min_saving=0.1)
    assert merged is not None
    assert int(merged.obs["num_nodes"][0, 0]) == 5
    torch.testing.assert_close(merged.obs["x"][0], batch["x"][0, :5])
    assert merged.slots.tolist() == [[0, 1, 2, 3, 4, 3]]
    assert merged.counts.tolist() == [[1, 1, 1, 2, 1]]
    edges = int(batch["num_edges"][0, 0])
    assert torch.equal(merged.obs["edge_index"][0, :, :edges], batch["edge_index"][0, :, :edges])


def test_unequal_rows_under_one_key_are_never_merged(monkeypatch):
    """Rows are grouped by a hash and then compared: a collision means no merging, not a wrong one."""
    env, obs = mis_batch()
    monkeypatch.setattr(compaction, "_row_keys", lambda rows, sample: sample.clone())  # every row of a sample collides
    assert compact_isolated(obs) is None


def test_a_batch_without_isolated_nodes_or_without_edges():
    """Nothing isolated: nothing merged, even when any saving would do; no edges at all: every node
    is isolated, and equal rows merge."""
    env = MISEnv([graph_from_pairs([(0, 1), (1, 2), (2, 3)], 4), graph_from_pairs([], 4)])
    connected, empty = (stack([env.reset(seed=0, options={"graph_index": i})[0]]) for i in range(2))
    assert compact_isolated(connected, min_saving=0.0) is None
    empty["x"][0] = empty["x"][0, :1]
    merged = compact_isolated(empty, min_saving=0.0)
    assert merged is not None and merged.counts.tolist() == [[4.0]] and merged.slots.tolist() == [[0, 0, 0, 0]]


def test_a_fresh_episode_is_not_merged():
    """At an episode's start an Erdős–Rényi graph of average degree 4 has few isolated nodes."""
    env = MISEnv([erdos_renyi(300, 4.0, 0)])
    assert compact_isolated(stack([env.reset(seed=0)[0]])) is None


def test_a_small_batch_is_not_merged(monkeypatch):
    """Below MIN_NODES real nodes the merging's own ops cost more than the rows it saves."""
    _, obs = mis_batch()
    assert compact_isolated(obs) is not None
    monkeypatch.setattr(compaction, "MIN_NODES", int(obs["num_nodes"].sum()) + 1)
    assert compact_isolated(obs) is None


def test_merged_batches_run_in_chunks_under_a_node_budget():
    """A node budget splits the merged batch's layers into chunks: the same numbers again."""
    env, obs = mis_batch()
    policy = build_policy("node-wise", ModelConfig(), env.observation_space, env.action_space)
    actions = policy.get_distribution(obs).sample()
    results = []
    for merged, budget in ((False, None), (True, 50)):
        configure_runtime(policy, max_nodes_per_batch=budget, compact_isolated=merged)
        with torch.no_grad():
            results.append(policy.evaluate_actions(obs, actions))
    for whole, chunked in zip(*results, strict=True):
        torch.testing.assert_close(chunked, whole, atol=2e-5, rtol=1e-5)
