import gymnasium as gym
import pytest
import torch
from torch_geometric.nn import GCNConv

from graphtransfer.envs.contract import observation_space
from graphtransfer.nn import GNNExtractor, message_passing
from graphtransfer.nn.extractor import make_conv
from graphtransfer.nn.message_passing import ALL_ROWS, GraphStructure, layer_function

# 6 nodes: a directed triangle 0→1→2→0, 3→0 and 3→4 one way, a duplicated edge 4→5, node 5 has no
# out-edges and node 3 no in-edges (an isolated target: PyG gives it zeros under every aggregation).
EDGES = torch.tensor([[0, 1, 2, 3, 3, 4, 4], [1, 2, 0, 0, 4, 5, 5]])
CASES = [("sage", "max"), ("sage", "mean"), ("sage", "sum"), ("sage", "min"), ("gcn", "sum"), ("gin", "sum")]


def space(num_features: int = 3) -> gym.spaces.Dict:
    return observation_space(6, 10, num_features)  # the extractor reads the width of x; the other keys are checked


def reference(extractor: GNNExtractor, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
    """The extractor written with PyG's own layers on gathered edges: what the fast path must equal."""
    h = extractor.encode(x)
    for conv in extractor.convs:
        h = h + torch.relu(conv(h, edge_index))
    return h


@pytest.mark.parametrize(("conv", "aggr"), CASES)
def test_one_layer_equals_pyg(conv, aggr):
    torch.manual_seed(0)
    layer = make_conv(conv, 8, 8, aggr)
    h = torch.randn(6, 1, 8)
    with torch.no_grad():
        fast = layer_function(layer)(layer, h, GraphStructure(EDGES, 6))[:, 0]
        slow = layer(h[:, 0], EDGES)
    assert torch.allclose(fast, slow, atol=1e-5, rtol=0)


@pytest.mark.parametrize(("conv", "aggr"), CASES)
def test_samples_of_one_graph_equal_each_sample_alone_with_gradients(conv, aggr):
    torch.manual_seed(1)
    extractor = GNNExtractor(space(), conv=conv, num_layers=3, width=8, aggr=aggr)
    x = torch.randn(4, 6, 3)  # 4 samples of the same graph; random features: no tied maxima
    assert_structure_path_equals_reference(extractor, x, EDGES, grad_tolerance=1e-4)


def assert_structure_path_equals_reference(extractor: GNNExtractor, x: torch.Tensor, edges: torch.Tensor, grad_tolerance: float) -> None:
    """The samples ``x`` of one graph through the structure path at once equal :func:`reference`
    on each sample alone: embeddings to 1e-5, parameter gradients to ``grad_tolerance``."""
    wide = extractor.embed_samples(x, GraphStructure(edges, x.shape[1]))  # (N, B, width)
    wide.square().sum().backward()
    fast_grads = [p.grad.clone() for p in extractor.parameters()]
    extractor.zero_grad()
    alone = torch.stack([reference(extractor, x[b], edges) for b in range(x.shape[0])], dim=1)
    alone.square().sum().backward()
    assert torch.allclose(wide, alone, atol=1e-5, rtol=0)
    for fast, slow in zip(fast_grads, (p.grad for p in extractor.parameters()), strict=True):
        assert torch.allclose(fast, slow, atol=grad_tolerance, rtol=grad_tolerance)


@pytest.mark.parametrize(("conv", "aggr"), CASES)
def test_a_graph_without_edges_equals_pyg_with_gradients(conv, aggr):
    """A residual graph whose every edge is gone (the end of an MIS episode) takes the structure path too."""
    torch.manual_seed(3)
    extractor = GNNExtractor(space(), conv=conv, num_layers=2, width=8, aggr=aggr)
    assert_structure_path_equals_reference(extractor, torch.randn(2, 6, 3), torch.zeros(2, 0, dtype=torch.long), grad_tolerance=1e-5)


@pytest.mark.parametrize(("conv", "aggr"), CASES)
def test_no_grad_forward_in_place_equals_pyg(conv, aggr):
    torch.manual_seed(2)
    extractor = GNNExtractor(space(), conv=conv, num_layers=3, width=8, aggr=aggr)
    x = torch.randn(2, 6, 3)
    with torch.no_grad():
        fast = extractor.embed_samples(x, GraphStructure(EDGES, 6))
        slow = torch.stack([reference(extractor, x[b], EDGES) for b in range(2)], dim=1)
    assert torch.allclose(fast, slow, atol=1e-5, rtol=0)


@pytest.mark.parametrize("project_input", [True, False])
@pytest.mark.parametrize(("conv", "aggr"), CASES)
def test_a_forward_in_row_blocks_equals_pyg(conv, aggr, project_input, monkeypatch):
    """Without gradients each layer runs a block of rows at a time: here blocks of 2 of the 6
    nodes, each reading every node's input (node 0's neighbours lie in two other blocks)."""
    torch.manual_seed(4)
    extractor = GNNExtractor(space(), conv=conv, num_layers=3, width=8, aggr=aggr, project_input=project_input)
    x = torch.randn(2, 6, 3)
    structure = GraphStructure(EDGES, 6)
    row_bytes = 2 * 8 * 4  # 2 samples of width 8, float32
    assert structure.row_blocks(row_bytes) == [ALL_ROWS]
    assert structure.row_blocks(row_bytes, count=4) == [slice(0, 4)]
    monkeypatch.setattr(message_passing, "BLOCK_BYTES", 2 * row_bytes)
    assert structure.row_blocks(row_bytes) == [slice(0, 2), slice(2, 4), slice(4, 6)]
    assert structure.row_blocks(row_bytes, count=5) == [slice(0, 2), slice(2, 4), slice(4, 5)]  # a part's own rows
    with torch.no_grad():
        fast = extractor.embed_samples(x, structure)
        slow = torch.stack([reference_of_any_input(extractor, x[b], EDGES) for b in range(2)], dim=1)
    assert torch.allclose(fast, slow, atol=1e-5, rtol=0)


def reference_of_any_input(extractor: GNNExtractor, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
    """:func:`reference`, also for a model without an input projection (its first layer has no residual)."""
    if extractor.project_input:
        return reference(extractor, x, edge_index)
    h = torch.relu(extractor.convs[0](x, edge_index))
    for conv in extractor.convs[1:]:
        h = h + torch.relu(conv(h, edge_index))
    return h


def test_an_aggregation_without_a_sparse_form_runs_pyg_layers():
    torch.manual_seed(3)
    extractor = GNNExtractor(space(), conv="sage", num_layers=2, width=8, aggr="std")
    assert layer_function(extractor.convs[0]) is None
    x = torch.randn(2, 6, 3)
    with torch.no_grad():
        fast = extractor.embed_samples(x, GraphStructure(EDGES, 6))
        slow = torch.stack([reference(extractor, x[b], EDGES) for b in range(2)], dim=1)
    assert torch.allclose(fast, slow, atol=1e-5, rtol=0)


def test_the_normalised_adjacency_is_built_once_per_setting():
    structure = GraphStructure(EDGES, 6)
    conv = GCNConv(4, 4)
    first = structure.gcn_adjacency(conv.improved, conv.add_self_loops)
    assert structure.gcn_adjacency(conv.improved, conv.add_self_loops) is first
    assert structure.adjacency is structure.adjacency
    assert first._nnz() == EDGES.shape[1] + 6  # a self-loop per node


def test_a_structure_of_another_graph_is_refused():
    extractor = GNNExtractor(space(), width=8)
    with pytest.raises(ValueError, match="x has 5 nodes per sample, the structure 6"):
        extractor.embed_samples(torch.randn(1, 5, 3), GraphStructure(EDGES, 6))
    with pytest.raises(ValueError, match=r"edge_index has shape \(3, 2\)"):
        GraphStructure(torch.zeros(3, 2, dtype=torch.long), 6)


@pytest.mark.parametrize("improved", [False, True])
@pytest.mark.parametrize("edges", [EDGES, torch.cat([EDGES, torch.tensor([[2], [2]])], dim=1)], ids=["no-loops", "a-self-loop"])
def test_the_normalised_adjacency_equals_gcn_norm(improved, edges):
    from torch_geometric.nn.conv.gcn_conv import gcn_norm

    (source, target), weight = gcn_norm(edges, None, 6, improved, True, "source_to_target", torch.float32)
    expected = torch.zeros(6, 6).index_put_((target, source), weight, accumulate=True)
    assert torch.allclose(GraphStructure(edges, 6).gcn_adjacency(improved, True).to_dense(), expected, atol=1e-6)
