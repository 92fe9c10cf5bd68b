import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data

from graphtransfer.config import ModelConfig
from graphtransfer.graphs import erdos_renyi
from graphtransfer.nn import GNNExtractor, build_policy, message_passing, to_disjoint
from graphtransfer.nn.distributions import NodeWiseCategorical
from graphtransfer.nn.policy import mlp, run_mlp
from graphtransfer.tasks.mis.env import MISEnv

from .conftest import graph_from_pairs


def padded_batch(graphs, max_nodes=None, seed=0):
    """One observation per graph, stacked; ``max_nodes`` pads further, as a larger env would."""
    env = MISEnv(graphs + ([erdos_renyi(max_nodes, 1.0, 0)] if max_nodes else []))
    observations = [env.reset(seed=seed, options={"graph_index": i})[0] for i in range(len(graphs))]
    return env, {k: torch.as_tensor(np.stack([o[k] for o in observations])) for k in observations[0]}


def test_to_disjoint_matches_pyg_batch():
    graphs = [erdos_renyi(n, 3.0, n) for n in (7, 12, 5)]
    _, obs = padded_batch(graphs)
    merged = to_disjoint(obs)
    edges = [obs["edge_index"][i, :, : int(obs["num_edges"][i, 0])] for i in range(len(graphs))]  # the env's own order
    reference = Batch.from_data_list([Data(x=obs["x"][i, : g.num_nodes], edge_index=edges[i]) for i, g in enumerate(graphs)])
    assert torch.equal(merged.x, reference.x)
    assert torch.equal(merged.edge_index, reference.edge_index)
    assert torch.equal(merged.batch, reference.batch)


def test_a_padded_batch_of_one_is_its_leading_rows():
    """A batch of one (acting, rollouts) takes views of its real rows, as the general path takes them."""
    graphs = [erdos_renyi(7, 3.0, 7), erdos_renyi(12, 3.0, 12)]
    _, obs = padded_batch(graphs)  # padded to 12 nodes: the first sample has padding rows and edge slots
    together = to_disjoint(obs)
    first = {k: v[:1].float() if k != "x" else v[:1] for k, v in obs.items()}  # float indices, as SB3's buffer stores them
    alone = to_disjoint(first)
    assert torch.equal(alone.x, together.x[:7]) and torch.equal(alone.batch, torch.zeros(7, dtype=torch.long))
    assert torch.equal(alone.edge_index, together.edge_index[:, together.batch[together.edge_index[0]] == 0])
    assert torch.equal(alone.node_mask, together.node_mask[:1]) and torch.equal(alone.edge_mask, together.edge_mask[:1])


def test_the_disjoint_graph_says_on_the_host_whether_any_node_slot_is_padding():
    """``unpadded`` is what ``node_mask.all()`` would say, known without asking the device."""
    graphs = [erdos_renyi(7, 3.0, 7), erdos_renyi(12, 3.0, 12)]
    _, obs = padded_batch(graphs)
    _, full = padded_batch([erdos_renyi(12, 3.0, 1), erdos_renyi(12, 3.0, 2)])
    ones = [{k: v[i : i + 1] for k, v in obs.items()} for i in range(2)]
    for batch in (obs, full, *ones):
        graph = to_disjoint(batch)
        assert graph.unpadded == bool(graph.node_mask.all())
    assert not to_disjoint(obs).unpadded and to_disjoint(full).unpadded
    assert not to_disjoint(ones[0]).unpadded and to_disjoint(ones[1]).unpadded


def test_to_disjoint_accepts_float_indices_from_sb3_buffer():
    _, obs = padded_batch([erdos_renyi(9, 3.0, 1), erdos_renyi(6, 2.0, 2)])
    as_float = {k: v.float() for k, v in obs.items()}
    assert torch.equal(to_disjoint(as_float).edge_index, to_disjoint(obs).edge_index)


@pytest.mark.parametrize("conv", ["sage", "gcn", "gin"])
def test_same_weights_same_node_outputs_padded_to_5_or_50(conv):
    graph = graph_from_pairs([(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (0, 2)], 5)
    env5, obs5 = padded_batch([graph])
    env50, obs50 = padded_batch([graph], max_nodes=50)
    assert obs50["x"].shape[1] == 50
    torch.manual_seed(0)
    small = build_policy("node-wise", ModelConfig(conv=conv), env5.observation_space, env5.action_space)
    large = build_policy("node-wise", ModelConfig(conv=conv), env50.observation_space, env50.action_space)
    large.load_state_dict(small.state_dict())
    with torch.no_grad():
        h5, _ = small.features_extractor.node_embeddings(obs5)
        h50, _ = large.features_extractor.node_embeddings(obs50)
        d5, d50 = small.get_distribution(obs5), large.get_distribution(obs50)
    assert torch.allclose(h5, h50, atol=1e-6)
    assert torch.allclose(d5.log_probs[0, :5], d50.log_probs[0, :5], atol=1e-6)
    assert torch.allclose(small.predict_values(obs5), large.predict_values(obs50), atol=1e-6)


def test_no_parameter_shape_depends_on_node_count():
    shapes = []
    for n in (10, 1000):
        env = MISEnv([erdos_renyi(n, 3.0, 0)])
        policy = build_policy("node-wise", ModelConfig(), env.observation_space, env.action_space)
        shapes.append({name: p.shape for name, p in policy.named_parameters()})
    assert shapes[0] == shapes[1]


def test_padding_contributes_nothing_to_log_prob_or_entropy():
    logits = torch.randn(2, 6, 3)
    mask = torch.tensor([[True] * 4 + [False] * 2, [True] * 6])
    actions = torch.randint(0, 3, (2, 6))
    base = NodeWiseCategorical(logits, mask)
    changed_logits = logits.clone()
    changed_logits[0, 4:] = torch.randn(2, 3) * 10
    changed_actions = actions.clone()
    changed_actions[0, 4:] = 2
    other = NodeWiseCategorical(changed_logits, mask)
    assert torch.allclose(base.log_prob(actions), other.log_prob(changed_actions))
    assert torch.allclose(base.entropy(), other.entropy())
    assert (base.sample()[0, 4:] == 0).all() and (base.mode()[0, 4:] == 0).all()
    expected = torch.distributions.Categorical(logits=logits[0, :4]).log_prob(actions[0, :4]).sum()
    assert torch.allclose(base.log_prob(actions)[0], expected)


def test_node_wise_mode_takes_the_first_of_tied_actions_as_argmax_does():
    logits = torch.tensor([[[0.0, 0.0, 0.0], [1.0, 2.0, 2.0], [3.0, 1.0, 3.0], [-1.0, 5.0, 4.0]]])  # (1, 4, 3)
    mode = NodeWiseCategorical(logits, torch.ones(1, 4, dtype=torch.bool)).mode()
    assert mode.tolist() == [[0, 1, 0, 1]] == logits.argmax(dim=-1).tolist()


@pytest.mark.parametrize("classes", [2, 3, 5])
def test_node_wise_categorical_equals_torchs_categorical_with_gradients(classes):
    """Class-major log-softmax: torch's ``Categorical`` numbers to float rounding, gradients
    too, and the same draws from the same generator state."""
    raw = torch.randn(4, 50, classes, generator=torch.Generator().manual_seed(0)) * 3
    mask = torch.ones(4, 50, dtype=torch.bool)
    ours_logits, torch_logits = raw.clone().requires_grad_(), raw.clone().requires_grad_()
    ours, reference = NodeWiseCategorical(ours_logits, mask), torch.distributions.Categorical(logits=torch_logits)
    actions = reference.sample()
    torch.testing.assert_close(ours.log_probs, reference.logits, rtol=0, atol=1e-6)
    torch.testing.assert_close(ours.probs, reference.probs, rtol=0, atol=1e-6)
    assert torch.equal(ours.mode(), reference.logits.argmax(dim=-1))
    (ours.log_prob(actions) + ours.entropy()).sum().backward()
    (reference.log_prob(actions).sum(dim=1) + reference.entropy().mean(dim=1)).sum().backward()
    torch.testing.assert_close(ours_logits.grad, torch_logits.grad, rtol=1e-5, atol=1e-6)
    torch.manual_seed(1)
    drawn = ours.sample()
    torch.manual_seed(1)
    assert torch.equal(drawn, reference.sample())


def test_extractor_plugs_into_sb3_as_pooled_features():
    env, obs = padded_batch([erdos_renyi(8, 3.0, 0), erdos_renyi(5, 2.0, 1)])
    extractor = GNNExtractor(env.observation_space, width=16)
    assert extractor(obs).shape == (2, extractor.features_dim)


def test_policy_on_active_subgraph_equals_policy_on_full_observation():
    from graphtransfer.solve.inference import active_subgraph, obs_to_tensors

    env = MISEnv([erdos_renyi(40, 3.0, 0)])
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(np.random.default_rng(0).integers(0, 3, 40))
    active = np.flatnonzero(env.active_nodes())
    assert 0 < active.size < 40
    policy = build_policy("node-wise", ModelConfig(), env.observation_space, env.action_space)
    with torch.no_grad():
        full = policy.get_distribution(obs_to_tensors(obs, policy.device)).log_probs[0, active]
        part = policy.get_distribution(obs_to_tensors(active_subgraph(obs, active), policy.device)).log_probs[0]
    assert torch.allclose(full, part, atol=1e-6)


@pytest.mark.parametrize("conv", ["sage", "gcn", "gin"])
@pytest.mark.parametrize("aggr", ["max", "mean"])
def test_sparse_inference_path_matches_gather_scatter(conv, aggr, monkeypatch):
    from graphtransfer.nn import extractor

    env = MISEnv([erdos_renyi(300, 6.0, 3)])
    obs = {k: torch.as_tensor(v)[None] for k, v in env.reset(seed=0)[0].items()}
    policy = build_policy("node-wise", ModelConfig(conv=conv, aggr=aggr), env.observation_space, env.action_space)
    with torch.no_grad():
        monkeypatch.setattr(extractor, "CSR_MIN_EDGES", 1 << 40)
        dense, _ = policy.features_extractor.node_embeddings(obs)
        monkeypatch.setattr(extractor, "CSR_MIN_EDGES", 1)
        sparse, _ = policy.features_extractor.node_embeddings(obs)
    assert torch.allclose(dense, sparse, atol=1e-5)


def three_graph_batch():
    """Graphs of 37, 80 and 23 nodes padded to 80: a budget of 17 splits every one of them."""
    return padded_batch([erdos_renyi(n, 5.0, n) for n in (37, 80, 23)])


@pytest.mark.parametrize(("conv", "aggr"), [("sage", "max"), ("sage", "mean"), ("sage", "sum"), ("gcn", "sum"), ("gin", "sum")])
@pytest.mark.parametrize("route", ["gather", "csr"])
def test_layers_in_chunks_equal_the_whole_graph(conv, aggr, route, monkeypatch):
    from graphtransfer.nn import configure_runtime, extractor

    env, obs = three_graph_batch()
    policy = build_policy("node-wise", ModelConfig(conv=conv, aggr=aggr), env.observation_space, env.action_space)
    monkeypatch.setattr(extractor, "CSR_MIN_EDGES", 1 if route == "csr" else 1 << 40)
    with torch.no_grad():
        whole, _ = policy.features_extractor.node_embeddings(obs)
        configure_runtime(policy, max_nodes_per_batch=17)
        chunked, _ = policy.features_extractor.node_embeddings(obs)
    assert whole.shape == chunked.shape == (140, 64)
    assert torch.allclose(whole, chunked, atol=1e-6, rtol=0)


@pytest.mark.parametrize("conv", ["sage", "gcn", "gin"])
def test_layers_in_chunks_give_the_same_gradients(conv):
    from graphtransfer.nn import configure_runtime

    torch.manual_seed(0)
    env, obs = three_graph_batch()
    policy = build_policy("node-wise", ModelConfig(conv=conv), env.observation_space, env.action_space)
    gradients = []
    for budget in (None, 17):
        configure_runtime(policy, max_nodes_per_batch=budget)
        policy.zero_grad()
        policy.predict_values(obs).sum().backward()
        gradients.append([p.grad.clone() for p in policy.features_extractor.parameters()])
    for whole, chunked in zip(*gradients, strict=True):  # float rounding scales with the gradient (GIN's reach 10^3)
        assert torch.allclose(whole, chunked, atol=1e-6 * float(whole.abs().max()), rtol=1e-5)


@pytest.mark.parametrize("head", ["node-wise", "node-choice"])
def test_log_probs_and_values_under_a_budget_equal_the_whole_batch(head):
    from graphtransfer.nn import configure_runtime
    from graphtransfer.tasks import MVCEnv

    graphs = [erdos_renyi(n, 4.0, n) for n in (30, 45, 22, 60)]
    env = MISEnv(graphs) if head == "node-wise" else MVCEnv(graphs)
    observations = [env.reset(seed=0, options={"graph_index": i})[0] for i in range(len(graphs))]
    obs = {k: torch.as_tensor(np.stack([o[k] for o in observations])) for k in observations[0]}
    policy = build_policy(head, ModelConfig(), env.observation_space, env.action_space)
    actions = policy.get_distribution(obs).sample()
    results = []
    for budget in (None, 50):
        configure_runtime(policy, max_nodes_per_batch=budget)
        with torch.no_grad():
            results.append((*policy.evaluate_actions(obs, actions), policy.predict_values(obs)))
    for whole, chunked in zip(*results, strict=True):
        assert torch.allclose(whole, chunked, atol=1e-6, rtol=0)


def test_a_bad_node_budget_is_refused():
    from graphtransfer.nn import configure_runtime

    env, _ = three_graph_batch()
    policy = build_policy("node-wise", ModelConfig(), env.observation_space, env.action_space)
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ValueError, match="must be a whole number of nodes, at least 1"):
            configure_runtime(policy, max_nodes_per_batch=bad)


def test_pooling_of_unpadded_samples_equals_pyg_scatter_pooling_with_gradients():
    """Equal-size samples pool as dense reductions; values and gradients (ties split evenly,
    as PyG's scatter max splits them) equal PyG's global pooling. The one stated difference:
    where a sample's channel is 0 at every node, PyG's backward counts its zero initial value
    as one more tie (each node gets 1/(n+1) of the gradient), the dense one splits it over n."""
    from torch_geometric.nn import global_max_pool, global_mean_pool

    env, obs = padded_batch([erdos_renyi(30, 3.0, 0)] * 3)
    extractor = GNNExtractor(env.observation_space, width=8)
    graph = extractor.node_embeddings(obs)[1]
    assert bool(graph.node_mask.all())
    h = torch.randint(1, 4, (90, 8), generator=torch.Generator().manual_seed(0)).float()  # many tied maxima
    dense_input, scatter_input = h.clone().requires_grad_(), h.clone().requires_grad_()
    dense = extractor.pool(dense_input, graph)
    scatter = torch.cat([global_mean_pool(scatter_input, graph.batch, 3), global_max_pool(scatter_input, graph.batch, 3)], dim=1)
    torch.testing.assert_close(dense, scatter, rtol=1e-6, atol=1e-6)
    weights = torch.randn_like(dense)
    (dense * weights).sum().backward()
    (scatter * weights).sum().backward()
    torch.testing.assert_close(dense_input.grad, scatter_input.grad, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("padding", [0, 7])
def test_the_graph_level_forward_pools_samples_of_one_graph_as_pool_does_with_gradients(padding):
    """Samples of one graph pool node-major in ``forward``: the numbers and gradients of
    ``pool(node_embeddings(obs))``, with or without padding slots."""
    graph = erdos_renyi(30, 3.0, 0)
    env, obs = padded_batch([graph] * 3, max_nodes=30 + padding)
    obs = {**obs, "x": obs["x"] + torch.rand_like(obs["x"])}  # samples differ in their features only
    torch.manual_seed(0)
    extractor = GNNExtractor(env.observation_space, width=8)
    weights = torch.randn(3, 16)
    pooled = extractor(obs)
    (pooled * weights).sum().backward()
    node_major = [p.grad.clone() for p in extractor.parameters()]
    extractor.zero_grad()
    h, disjoint = extractor.node_embeddings(obs)
    reference = extractor.pool(h, disjoint)
    (reference * weights).sum().backward()
    torch.testing.assert_close(pooled, reference, rtol=1e-6, atol=1e-6)
    for fast, slow in zip(node_major, (p.grad for p in extractor.parameters()), strict=True):
        torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("conv", "aggr"), [("sage", "max"), ("sage", "mean"), ("gcn", "sum"), ("gin", "sum")])
def test_a_first_layer_on_raw_features_equals_pyg_on_every_route(conv, aggr, monkeypatch):
    """``project_input: false``: ReLU(conv_0(x)), then residual layers, written with PyG's own
    layers; the structure path (with gradients too), gathered edges and chunks all equal it."""
    from graphtransfer.nn import configure_runtime, extractor

    env, obs = three_graph_batch()
    model = ModelConfig(conv=conv, aggr=aggr, num_layers=2, project_input=False)
    policy = build_policy("node-wise", model, env.observation_space, env.action_space)
    gnn = policy.features_extractor
    first_weight = next(p for name, p in gnn.named_parameters() if name.startswith("convs.0.") and p.dim() == 2)
    assert gnn.encode is None and first_weight.shape[1] == env.observation_space["x"].shape[-1]
    graph = to_disjoint(obs)
    with torch.no_grad():
        h = torch.relu(gnn.convs[0](graph.x, graph.edge_index))
        expected = h + torch.relu(gnn.convs[1](h, graph.edge_index))
    routes = {}
    for route, min_edges, budget in (("csr", 1, None), ("gather", 1 << 40, None), ("chunks", 1, 17)):
        monkeypatch.setattr(extractor, "CSR_MIN_EDGES", min_edges)
        configure_runtime(policy, max_nodes_per_batch=budget)
        with torch.no_grad():
            routes[route] = gnn.node_embeddings(obs)[0]
        assert torch.allclose(routes[route], expected, atol=1e-5, rtol=0), route
    configure_runtime(policy)
    monkeypatch.setattr(extractor, "CSR_MIN_EDGES", 1)
    with_grad = gnn.node_embeddings(obs)[0]
    assert torch.allclose(with_grad, expected, atol=1e-5, rtol=0)
    with_grad.sum().backward()
    assert all(p.grad is not None for p in gnn.parameters())


def test_a_model_without_input_projection_transfers_to_a_larger_graph():
    """No weight depends on the node count without the projection either: the state dict of a
    model for 30 nodes loads strictly into one for 3,000."""
    model = ModelConfig(conv="gcn", num_layers=2, project_input=False)
    small, large = MISEnv([erdos_renyi(30, 4.0, 0)]), MISEnv([erdos_renyi(3000, 4.0, 0)])
    trained = build_policy("node-wise", model, small.observation_space, small.action_space)
    fresh = build_policy("node-wise", model, large.observation_space, large.action_space)
    fresh.load_state_dict(trained.state_dict(), strict=True)
    assert not any("encode" in name for name in trained.state_dict())


@pytest.mark.parametrize("rows", [50, 0])
def test_an_mlp_without_gradients_runs_in_row_blocks_with_the_same_values(rows, monkeypatch):
    torch.manual_seed(0)
    layers = mlp([8, 16, 3])
    x = torch.randn(rows, 2, 8)
    expected = layers(x).detach()
    monkeypatch.setattr(message_passing, "BLOCK_BYTES", 7 * 2 * 16 * 4)  # blocks of 7 rows: 2 samples x 16 hidden, float32
    with torch.no_grad():
        got = run_mlp(layers, x.clone())
    assert got.shape == (rows, 2, 3)
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-6)
