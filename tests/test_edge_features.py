"""Edge features end to end below the heads: the contract's edge_attr, the adapter, the extractor's
edge term and the compact buffer's storage of edge features."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces

from graphtransfer.envs.adapters import GraphObservationAdapter
from graphtransfer.envs.contract import check_contract, observation_space, padded_edge_attr, padded_structure
from graphtransfer.errors import UsageError
from graphtransfer.graphs import barabasi_albert, erdos_renyi
from graphtransfer.nn import GNNExtractor
from graphtransfer.solve.inference import obs_to_tensors
from graphtransfer.training.buffers import EdgeStore


def graph_obs(graph, num_features=3, num_edge_features=2, seed=0):
    """One padded observation of ``graph`` with random node and edge features."""
    rng = np.random.default_rng(seed)
    edges = graph.edge_index
    obs = padded_structure(edges, graph.num_nodes, graph.num_nodes + 3, edges.shape[1] + 5)
    obs["x"] = np.zeros((graph.num_nodes + 3, num_features), dtype=np.float32)
    obs["x"][: graph.num_nodes] = rng.random((graph.num_nodes, num_features))
    if num_edge_features:
        obs["edge_attr"] = padded_edge_attr(rng.random((edges.shape[1], num_edge_features)).astype(np.float32), edges.shape[1] + 5)
    return obs


def test_edge_attr_must_have_one_row_per_edge_slot():
    space = observation_space(10, 20, 3, num_edge_features=2)
    check_contract(space)
    space.spaces["edge_attr"] = spaces.Box(0, 1, (19, 2), np.float32)
    with pytest.raises(UsageError, match=r"^my_env: observation key 'edge_attr' is Box shape \(19, 2\).*\(20, F_e\)"):
        check_contract(space, where="my_env")
    space.spaces["edge_attr"] = spaces.Box(0, 1, (20, 2), np.int64)
    with pytest.raises(UsageError, match="a floating dtype"):
        check_contract(space, where="my_env")


class WeightedGraphEnv(gym.Env):
    """A spaces.Graph env whose links carry two features each."""

    def __init__(self, graph):
        self.graph, self.max_nodes, self.max_edges = graph, graph.num_nodes, graph.edge_index.shape[1]
        self.observation_space = spaces.Graph(spaces.Box(0, 1, (2,)), spaces.Box(0, 1, (2,)))
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        n, e = self.graph.num_nodes, self.graph.edge_index.shape[1]
        features = self.np_random.random((e, 2)).astype(np.float32)
        return spaces.GraphInstance(self.np_random.random((n, 2)), features, self.graph.edge_index.T), {}


def test_the_graph_adapter_passes_link_features_as_edge_attr():
    graph = erdos_renyi(12, 3.0, 0)
    env = GraphObservationAdapter(WeightedGraphEnv(graph))
    check_contract(env.observation_space)
    obs, _ = env.reset(seed=1)
    raw, _ = WeightedGraphEnv(graph).reset(seed=1)
    assert obs["edge_attr"].shape == (graph.edge_index.shape[1], 2)
    assert np.array_equal(obs["edge_attr"], raw.edges)


def test_without_edge_attr_the_extractor_is_unchanged_and_zero_edge_weights_change_nothing():
    graph = erdos_renyi(30, 3.0, 1)
    obs = graph_obs(graph)
    plain_space = observation_space(33, obs["edge_index"].shape[1], 3)
    torch.manual_seed(0)
    plain = GNNExtractor(plain_space, width=16)
    assert not any("edge" in name for name in plain.state_dict())
    edged = GNNExtractor(observation_space(33, obs["edge_index"].shape[1], 3, 2), width=16)
    edged.load_state_dict(plain.state_dict(), strict=False)
    for encoder in edged.edge_encoders:
        torch.nn.init.zeros_(encoder.weight), torch.nn.init.zeros_(encoder.bias)
    batch = obs_to_tensors(obs, torch.device("cpu"))
    without = {k: v for k, v in batch.items() if k != "edge_attr"}
    assert torch.equal(plain.node_embeddings(without)[0], edged.node_embeddings(batch)[0])


@pytest.mark.parametrize("project_input", [True, False])
@pytest.mark.parametrize("conv", ["sage", "gcn", "gin"])
def test_edge_features_give_the_same_embeddings_on_every_path(conv, project_input, monkeypatch):
    """The structure path (shared and disjoint batches, whole and in row blocks), gathered edges and node-budget chunks agree."""
    graphs = [barabasi_albert(40, 2, 0), erdos_renyi(35, 3.0, 1)]
    observations = [graph_obs(graphs[0], seed=0), graph_obs(graphs[0], seed=1), graph_obs(graphs[1], seed=2)]
    max_edges = max(o["edge_index"].shape[1] for o in observations)
    for o in observations:  # one padding for the batch
        o["edge_index"] = np.pad(o["edge_index"], ((0, 0), (0, max_edges - o["edge_index"].shape[1])))
        o["edge_attr"] = np.pad(o["edge_attr"], ((0, max_edges - o["edge_attr"].shape[0]), (0, 0)))
        o["x"] = np.pad(o["x"], ((0, 43 - o["x"].shape[0]), (0, 0)))
    torch.manual_seed(0)
    extractor = GNNExtractor(observation_space(43, max_edges, 3, 2), conv=conv, width=16, project_input=project_input)
    for batch in ([0, 1], [0, 2]):  # shared edges, different graphs
        stacked = {k: torch.as_tensor(np.stack([observations[i][k] for i in batch])) for k in observations[0]}
        with torch.no_grad():
            structure = extractor.node_embeddings(stacked)[0]
            monkeypatch.setattr("graphtransfer.nn.extractor.CSR_MIN_EDGES", 10**9)
            gathered = extractor.node_embeddings(stacked)[0]
            monkeypatch.undo()
            monkeypatch.setattr("graphtransfer.nn.message_passing.BLOCK_BYTES", 7 * 16 * 4)  # blocks of 3 or 7 rows
            blocked = extractor.node_embeddings(stacked)[0]
            monkeypatch.undo()
            monkeypatch.setattr("graphtransfer.nn.extractor.CSR_MIN_EDGES", 10**9)
            extractor.max_nodes_per_batch = 17
            chunked = extractor.node_embeddings(stacked)[0]
            extractor.max_nodes_per_batch = None
            monkeypatch.undo()
        torch.testing.assert_close(structure, gathered, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(blocked, gathered, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(chunked, gathered, atol=1e-5, rtol=1e-5)


def test_edge_store_keeps_features_with_their_edge_set_and_rebuilds_them_bit_for_bit():
    full = np.array([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    weights = np.array([[0.5], [0.5], [-0.0], [-0.0], [0.1], [0.1]], dtype=np.float32)
    steps = [
        (full, weights),
        (full[:, 2:], weights[2:]),  # a residual graph: a subset with its rows
        (full, weights * 2),  # the same edges with other features: a new set
        (full[:, 4:], weights[4:] * 2),  # a residual of the new set
    ]
    store = EdgeStore(max_edges=8, buffer_size=4, n_envs=1, edge_attr=(1, np.dtype(np.float32)))
    for pos, (edges, attr) in enumerate(steps):
        padded = padded_structure(edges, 4, 4, 8)["edge_index"]
        store.add(pos, 0, padded, padded_edge_attr(attr, 8))
    assert store.set_ids[:, 0].tolist() == [0, 0, 1, 1] and len(store.sets) == 2
    edge_index, edge_attr = store.rebuild_with_attr(np.arange(4), np.zeros(4, dtype=np.int64))
    for row, (edges, attr) in enumerate(steps):
        assert np.array_equal(edge_index[row], padded_structure(edges, 4, 4, 8)["edge_index"])
        assert edge_attr[row].tobytes() == padded_edge_attr(attr, 8).tobytes()  # -0.0 keeps its sign
