"""The masked path measured by bench/residual_mask.py computes what PyG computes on each residual
graph alone, so its timings compare equal work."""

import pytest
import torch

from bench.residual_mask import ResidualStructure, residual_nodes
from graphtransfer.envs.contract import observation_space
from graphtransfer.nn import GNNExtractor
from graphtransfer.nn.message_passing import GraphStructure

# 6 nodes: an undirected triangle 0-1-2, 3-0, 3-4, 4-5 and one directed edge 5→2, by destination.
BASE = torch.tensor([[1, 2, 3, 0, 2, 5, 0, 1, 0, 4, 3, 5, 4], [0, 0, 0, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5]])
# Kept nodes per sample: all; a triangle with a pendant; a path with the one-way edge; none; and
# node 0 undecided but isolated (its neighbours decided), which the masks treat as dropped.
KEPT = [range(6), (0, 1, 2, 3), (2, 4, 5), (), (0, 4, 5)]
CASES = [("sage", "max"), ("sage", "mean"), ("sage", "sum"), ("sage", "min"), ("gcn", "sum"), ("gin", "sum")]


def residual_obs() -> dict[str, torch.Tensor]:
    """The samples of :data:`KEPT` as padded observations, edges in the base's order."""
    edge_index = torch.zeros(len(KEPT), 2, BASE.shape[1], dtype=torch.long)
    num_edges = torch.zeros(len(KEPT), dtype=torch.long)
    for b, nodes in enumerate(KEPT):
        kept = torch.zeros(6, dtype=torch.bool)
        kept[list(nodes)] = True
        edges = BASE[:, kept[BASE[0]] & kept[BASE[1]]]
        edge_index[b, :, : edges.shape[1]], num_edges[b] = edges, edges.shape[1]
    return {"edge_index": edge_index, "num_edges": num_edges}


def pyg_alone(extractor: GNNExtractor, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
    """The extractor written with PyG's own layers on one sample's edges."""
    h = x if extractor.encode is None else extractor.encode(x)
    for index, conv in enumerate(extractor.convs):
        out = torch.relu(conv(h, edge_index))
        h = h + out if extractor.project_input or index > 0 else out
    return h


@pytest.mark.parametrize("project_input", [True, False])
@pytest.mark.parametrize(("conv", "aggr"), CASES)
def test_masked_residual_graphs_equal_pyg_on_each_alone_with_gradients(conv, aggr, project_input):
    torch.manual_seed(0)
    space = observation_space(6, 10, 3)
    extractor = GNNExtractor(space, conv=conv, num_layers=3, width=8, aggr=aggr, project_input=project_input)
    obs = residual_obs()
    x = torch.randn(len(KEPT), 6, 3)  # random features: no tied maxima
    nodes = residual_nodes(BASE, obs["edge_index"], obs["num_edges"], 6)
    masked = extractor.embed_samples(x, ResidualStructure(GraphStructure(BASE, 6), nodes.t()))  # (6, B, 8)
    masked.square().sum().backward()
    masked_grads = [p.grad.clone() for p in extractor.parameters()]
    extractor.zero_grad()
    edges = [obs["edge_index"][b, :, : obs["num_edges"][b]] for b in range(len(KEPT))]
    alone = torch.stack([pyg_alone(extractor, x[b], edges[b]) for b in range(len(KEPT))], dim=1)
    alone.square().sum().backward()
    assert torch.allclose(masked, alone, atol=1e-5, rtol=0)
    for fast, slow in zip(masked_grads, (p.grad for p in extractor.parameters()), strict=True):
        assert torch.allclose(fast, slow, atol=1e-5, rtol=1e-5)


def test_only_residual_graphs_listed_in_the_base_order_are_recognised():
    obs = residual_obs()
    nodes = residual_nodes(BASE, obs["edge_index"], obs["num_edges"], 6)
    assert nodes[1].tolist() == [True, True, True, True, False, False]
    assert not nodes[4, 0]  # undecided but without edges: dropped, which changes nothing
    not_induced = obs["edge_index"].clone()
    not_induced[0, :, 0] = not_induced[0, :, 1]  # sample 0 lists edge 2→0 twice, 1→0 never
    assert residual_nodes(BASE, not_induced, obs["num_edges"], 6) is None
    dropped_one = obs["num_edges"].clone()
    dropped_one[0] -= 1  # sample 0 without its last edge: a subset, not a residual graph
    assert residual_nodes(BASE, obs["edge_index"], dropped_one, 6) is None
    reordered = obs["edge_index"].clone()
    reordered[0, :, :2] = reordered[0, :, [1, 0]]
    assert residual_nodes(BASE, reordered, obs["num_edges"], 6) is None
