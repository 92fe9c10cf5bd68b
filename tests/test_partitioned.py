"""graphtransfer.solve.partitioned: a node-wise policy's outputs computed part by part on a local
Ray instance equal the single-process forward on the env's own first observation."""

import numpy as np
import pytest
import torch
from gymnasium.utils import seeding

from graphtransfer.config import ModelConfig, RunConfig
from graphtransfer.envs.protocol import Head
from graphtransfer.graphs import delaunay, erdos_renyi, from_edges, random_geometric, write_graph
from graphtransfer.graphs.graph import with_ids
from graphtransfer.graphs.partition import assign_parts, split
from graphtransfer.graphs.partition_files import partition_graph
from graphtransfer.nn import build_policy, message_passing
from graphtransfer.nn.message_passing import GraphStructure
from graphtransfer.solve.inference import obs_to_tensors, solve
from graphtransfer.solve.loading import load_policy
from graphtransfer.solve.partitioned import node_model, partitioned_node_outputs
from graphtransfer.solve.partitioned_mis import partitioned_decoding, predict_partitioned
from graphtransfer.tasks import TASKS
from graphtransfer.tasks.factory import inference_env

MIS = TASKS["mis"]
RULES = MIS.partitioned_solve

ray = pytest.importorskip("ray")

GRAPHS = {
    "erdos-renyi": lambda: erdos_renyi(500, 8, seed=5),
    "random-geometric": lambda: random_geometric(500, 8, seed=5),
    "delaunay": lambda: delaunay(500, seed=5),
}


@pytest.fixture(scope="module")
def local_ray():
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def single_process(policy, env, seed=0):
    """The policy's outputs on the env's first observation, and that observation's draws."""
    obs, _ = env.reset(seed=seed)
    num_nodes = int(obs["num_nodes"][0])
    with torch.inference_mode():
        outputs, _, _ = policy.node_outputs(obs_to_tensors(obs, policy.device), with_values=False)
    return outputs[0, :num_nodes].numpy(), obs["x"][:num_nodes, 4]


@pytest.mark.slow
# each family once and both part counts: every solve starts an actor process per part (seconds each);
# Erdős–Rényi at 4 parts is the widest halo (each part reads more than half the graph)
@pytest.mark.parametrize(("family", "parts"), [("erdos-renyi", 4), ("random-geometric", 2), ("delaunay", 4)])
def test_the_partitioned_forward_equals_the_single_process_forward(local_ray, tiny_model, family, parts):
    graph = GRAPHS[family]()
    policy, env = load_policy(tiny_model("mis"), graph)
    expected, draw = single_process(policy, env)
    outputs, split_parts = partitioned_node_outputs(policy, graph, parts, RULES, draw=draw)
    assert len(split_parts) == parts and all(part.num_halo for part in split_parts)
    np.testing.assert_allclose(outputs, expected, atol=1e-5, rtol=0)


@pytest.mark.slow
def test_a_gin_model_without_input_projection_runs_partitioned_exactly(local_ray):
    graph = random_geometric(300, 6, seed=7)
    env = inference_env(RunConfig(task="mis"), graph)
    torch.manual_seed(0)
    model = ModelConfig(conv="gin", num_layers=2, width=16, project_input=False)
    policy = build_policy(Head.NODE_WISE, model, env.observation_space, env.action_space)
    expected, draw = single_process(policy, env)
    outputs, _ = partitioned_node_outputs(policy, graph, 3, RULES, draw=draw)
    np.testing.assert_allclose(outputs, expected, atol=1e-5, rtol=0)


@pytest.mark.slow
def test_each_part_draws_its_own_features_repeatably_from_the_seed(local_ray, tiny_model):
    graph = erdos_renyi(200, 6, seed=8)
    policy, _ = load_policy(tiny_model("mis"), graph)
    first, _ = partitioned_node_outputs(policy, graph, 2, RULES, seed=3)
    again, _ = partitioned_node_outputs(policy, graph, 2, RULES, seed=3)
    assert np.isfinite(first).all() and np.array_equal(first, again)  # another seed is another numpy stream: not solved, for CI's time


@pytest.mark.parametrize("index", [0, 1])
def test_a_parts_layer_in_row_blocks_is_the_whole_graphs_layer_at_its_nodes(index, monkeypatch):
    """A part's actor runs each layer for its own rows only, a block of rows at a time, into its
    next buffer: here blocks of 7 rows, each reading halo rows that lie in the other part."""
    graph = random_geometric(300, 6, seed=2)
    env = inference_env(RunConfig(task="mis"), graph)
    torch.manual_seed(1)
    policy = build_policy(Head.NODE_WISE, ModelConfig(width=16), env.observation_space, env.action_space)
    part = split(graph, assign_parts(graph, 2))[1]
    h = torch.randn(graph.num_nodes, 1, 16)
    with torch.inference_mode():
        expected = policy.features_extractor.layer(index, h, GraphStructure(torch.from_numpy(graph.edge_index), graph.num_nodes))
    monkeypatch.setattr(message_passing, "BLOCK_BYTES", 7 * 16 * 4)
    local = h[np.concatenate([part.nodes, part.halo]), 0].numpy()
    out = np.full((part.num_owned, 16), np.nan, dtype=np.float32)
    node_model(policy).layer(index, local, GraphStructure(torch.from_numpy(part.edge_index), part.num_local), out)
    assert part.num_halo and part.num_owned > 7 * 4
    np.testing.assert_allclose(out, expected[part.nodes, 0].numpy(), atol=1e-5, rtol=0)


def test_a_gcn_model_is_refused_with_the_reason():
    graph = erdos_renyi(50, 4, seed=1)
    env = inference_env(RunConfig(task="mis"), graph)
    policy = build_policy(Head.NODE_WISE, ModelConfig(conv="gcn"), env.observation_space, env.action_space)
    with pytest.raises(ValueError, match="GraphSAGE .* and GIN layers; this model has GCNConv"):
        node_model(policy)


def test_a_part_count_beyond_the_graph_is_refused(tiny_model):
    graph = erdos_renyi(50, 4, seed=1)
    policy, _ = load_policy(tiny_model("mis"), graph)
    with pytest.raises(ValueError, match="parts 51: expected"):
        partitioned_node_outputs(policy, graph, 51, RULES)


def env_draws(env, seed):
    """The uniform draws the MIS env makes for pass 0, 1, ... of an episode reset with ``seed``."""
    stream, _ = seeding.np_random(seed)
    return lambda _: stream.random(env.unwrapped.graph.num_nodes)


def maximal_independent(graph, chosen):
    source, target = graph.edge_index
    covered = chosen.copy()
    covered[target[chosen[source]]] = True
    return not (chosen[source] & chosen[target]).any() and covered.all()


@pytest.mark.slow
@pytest.mark.parametrize("family, parts", [("random-geometric", 4), ("erdos-renyi", 2)])
def test_the_partitioned_mis_with_the_envs_draws_is_the_single_process_set(local_ray, tiny_model, family, parts):
    graph = GRAPHS[family]()
    policy, env = load_policy(tiny_model("mis"), graph)
    draws = env_draws(env, seed=0)
    obs, _ = env.reset(seed=0)
    assert np.array_equal(draws(0).astype(np.float32), obs["x"][:, 4])  # the stream is the env's
    single = solve(policy, env, seed=0, decoding="local-max", reductions=False)
    assert single.feasible and single.passes < env.unwrapped.horizon  # decided by the policy alone, no finishing rule
    found = partitioned_decoding(policy, graph, parts, RULES, draws=env_draws(env, seed=0), reductions=False)
    assert maximal_independent(graph, found.solution)
    assert np.array_equal(found.solution, single.solution) and found.passes == single.passes


@pytest.mark.slow
def test_the_partitioned_mis_of_a_partitioned_folder_is_maximal_and_as_large_as_single_process_seeds(local_ray, tiny_model, tmp_path):
    """predict's partitioned solve of a graph written as one file per part (each actor reads its
    own; the set is checked on the actors; the CSV names the graph's own ids, part by part)."""
    graph = with_ids(GRAPHS["delaunay"](), np.arange(500) * 3 + 1)
    write_graph(graph, tmp_path / "delaunay.npz")
    partition_graph(tmp_path / "delaunay.npz", 3, tmp_path / "parts")
    policy, env = load_policy(tiny_model("mis"), graph)
    # the policy alone: a part's exact rules are the pendant ones, which find almost nothing on a triangulation, and a part
    # cannot check the domination that the single process's rules find there (it reads the neighbours' neighbourhoods)
    sizes = [solve(policy, env, seed=seed, decoding="local-max", reductions=False).objective for seed in range(4)]
    found = predict_partitioned(tiny_model("mis"), tmp_path / "parts", tmp_path / "set.csv", None, None, seed=1)
    rows = np.loadtxt(tmp_path / "set.csv", delimiter=",", skiprows=1, dtype=np.int64)
    chosen = np.zeros(graph.num_nodes, dtype=bool)
    chosen[(rows[:, 0] - 1) // 3] = rows[:, 1] == 1
    assert len(rows) == graph.num_nodes and found.size == chosen.sum() and len(found.parts) == 3
    assert maximal_independent(graph, chosen)
    # its draws are not the env's: it is one more seed, so its size lies where the seeds' do (on 500 nodes they differ by a few %)
    assert min(sizes) - 0.01 * graph.num_nodes <= found.size <= max(sizes) + 0.01 * graph.num_nodes


def stars(count: int, leaves: int):
    """``count`` stars of ``leaves`` leaves each, linked centre to centre in a path: the largest
    independent set is every leaf."""
    size = leaves + 1
    centres = np.arange(count) * size
    source = np.concatenate([np.repeat(centres, leaves), centres[:-1]])
    target = np.concatenate([(centres[:, None] + np.arange(1, size)).ravel(), centres[1:]])
    graph, _, _ = from_edges(source, target, count * size, "stars")
    return graph


@pytest.mark.slow
def test_the_exact_rules_of_a_pass_and_the_kernel_decide_what_the_policy_alone_does_not(local_ray):
    """A policy of random weights takes some centres of the stars; each part's pass rules (a node
    with a pendant neighbour leaves, a node left without neighbours joins) take every leaf, and so
    does the kernel before the split (which decides the graph whole: one part is left)."""
    graph = stars(20, 4)
    env = inference_env(RunConfig(task="mis"), graph)
    torch.manual_seed(9)  # weights that rank centres first: 50 of the 80 leaves in a single process
    policy = build_policy(Head.NODE_WISE, ModelConfig(width=16), env.observation_space, env.action_space)
    alone = partitioned_decoding(policy, graph, 3, RULES, seed=1, reductions=False)
    by_rules = partitioned_decoding(policy, graph, 3, RULES, seed=1)
    kernel = partitioned_decoding(policy, graph, 3, RULES, seed=1, kernel=MIS.kernel)
    assert maximal_independent(graph, alone.solution) and alone.solution.sum() < 80
    assert by_rules.solution.sum() == kernel.solution.sum() == 80 and maximal_independent(graph, by_rules.solution)
    assert kernel.reduced == graph.num_nodes - 1 and kernel.passes == 1


@pytest.mark.slow
def test_the_partitioned_mis_with_the_pass_rules_is_the_single_process_set_with_them(local_ray, tiny_model):
    """On a graph whose wedges rarely close, the single process's exact rules of a pass are the
    ones a part applies (isolated nodes join, pendants' neighbours leave): the same draws give the same set."""
    graph = erdos_renyi(500, 3, seed=5)  # sparse: pendants in every pass
    policy, env = load_policy(tiny_model("mis"), graph)
    single = solve(policy, env, seed=0, decoding="local-max")
    assert not env.unwrapped.has_triangles(graph.edge_index, graph.num_nodes)
    alone = solve(policy, env, seed=0, decoding="local-max", reductions=False)
    found = partitioned_decoding(policy, graph, 3, RULES, draws=env_draws(env, seed=0))
    assert np.array_equal(found.solution, single.solution) and found.passes == single.passes
    assert not np.array_equal(alone.solution, single.solution)  # the rules decided something


@pytest.mark.slow
def test_the_kernels_between_passes_lift_back_to_a_maximal_set(local_ray, tiny_model):
    graph = erdos_renyi(600, 4, seed=9)
    policy, _ = load_policy(tiny_model("mis"), graph)
    found = partitioned_decoding(policy, graph, 3, RULES, seed=2, kernel=MIS.kernel, kernel_every=1)
    assert found.reduced > 0 and found.kernels > 0
    assert maximal_independent(graph, found.solution)


def test_draws_and_a_kernel_are_refused_together(tiny_model):
    graph = erdos_renyi(50, 4, seed=1)
    policy, env = load_policy(tiny_model("mis"), graph)
    with pytest.raises(ValueError, match="a kernel's graph has other nodes"):
        partitioned_decoding(policy, graph, 2, RULES, draws=env_draws(env, 0), kernel=MIS.kernel)
