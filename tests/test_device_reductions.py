"""The MIS per-pass exact rules in torch (graphtransfer.tasks.mis.device.reduction_actions), run here on CPU
tensors, against the env's numpy rules (graphtransfer.tasks.mis.env.reduction_actions): the same action for
every node, on whole graphs and on residual graphs, with and without the check past pendants."""

import numpy as np
import pytest
import torch

from graphtransfer.graphs import Graph, barabasi_albert, erdos_renyi, random_geometric
from graphtransfer.graphs.generators import delaunay
from graphtransfer.graphs.graph import induced_subgraph
from graphtransfer.tasks.mis.constants import DEFER, EXCLUDE, INCLUDE
from graphtransfer.tasks.mis.device import reduction_actions
from graphtransfer.tasks.mis.env import by_destination
from graphtransfer.tasks.mis.env import reduction_actions as reduction_actions_on_host
from tests.conftest import graph_from_pairs


def grid(side: int) -> Graph:
    """A ``side`` x ``side`` lattice: no triangles, pendants only at its corners once nodes go."""
    ids = np.arange(side * side).reshape(side, side)
    pairs = np.concatenate([np.stack([ids[:, :-1].ravel(), ids[:, 1:].ravel()], 1), np.stack([ids[:-1].ravel(), ids[1:].ravel()], 1)])
    return graph_from_pairs(pairs, side * side, f"grid{side}")


FAMILIES = {
    "er sparse": lambda seed: erdos_renyi(300, 2.0, seed),
    "er": lambda seed: erdos_renyi(400, 6.0, seed),
    "er dense": lambda seed: erdos_renyi(120, 30.0, seed),
    "ba tree": lambda seed: barabasi_albert(300, 1, seed),
    "ba": lambda seed: barabasi_albert(400, 3, seed),
    "rgg": lambda seed: random_geometric(400, 8.0, seed),
    "rgg dense": lambda seed: random_geometric(200, 40.0, seed),
    "delaunay": lambda seed: delaunay(300, seed),
    "grid": lambda seed: grid(12 + seed),
    "star and path": lambda seed: graph_from_pairs([(0, k) for k in range(1, 6)] + [(6, 7), (7, 8), (8, 9)], 12, "star-path"),
    "clique": lambda seed: graph_from_pairs([(a, b) for a in range(6) for b in range(a + 1, 6)], 6, "k6"),
    "no edges": lambda seed: Graph(np.zeros((2, 0), dtype=np.int64), 5, "empty"),
}


def on_device(graph: Graph, triangles: bool, active: np.ndarray | None = None) -> np.ndarray:
    edges = by_destination(graph)
    degree = np.bincount(edges[1], minlength=graph.num_nodes)
    mask = None if active is None else torch.from_numpy(active)
    return reduction_actions(torch.from_numpy(edges), torch.from_numpy(degree), triangles, mask).numpy()


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("triangles", [True, False])
def test_the_devices_exact_rules_act_as_the_envs_on_whole_graphs(family, triangles):
    for seed in range(3):
        graph = FAMILIES[family](seed)
        expected = reduction_actions_on_host(by_destination(graph), graph.num_nodes, triangles)
        found = on_device(graph, triangles)
        assert found.dtype == np.int64 and np.array_equal(found, expected), (family, seed)


@pytest.mark.parametrize("family", ["er", "ba", "rgg", "delaunay", "grid", "ba tree"])
def test_the_devices_exact_rules_on_a_residual_graph_act_as_the_envs_on_it_renumbered(family):
    """The device passes keep the episode graph's numbering, decided nodes without residual edges: their rules
    must give the undecided nodes the actions the env's give the residual graph renumbered, and decided nodes
    (isolated there, yet not to include) defer."""
    rng = np.random.default_rng(0)
    for seed in range(3):
        graph = FAMILIES[family](seed)
        undecided = rng.random(graph.num_nodes) < 0.6
        src, dst = graph.edge_index
        kept = undecided[src] & undecided[dst]
        residual = Graph(graph.edge_index[:, kept], graph.num_nodes, graph.name)  # decided nodes isolated, numbering kept
        compact, nodes = induced_subgraph(graph, undecided)
        for triangles in (True, False):
            expected = np.full(graph.num_nodes, DEFER, dtype=np.int64)
            expected[nodes] = reduction_actions_on_host(by_destination(compact), compact.num_nodes, triangles)
            found = on_device(residual, triangles, undecided)
            assert np.array_equal(found, expected), (family, seed, triangles)


def test_the_devices_exact_rules_by_hand():
    """A star 0-1..4 with a tail 4-5-6 and an isolated node 7: the centre and 5 leave (each has a pendant beside it,
    the pendants 1-3 and 6 stay for the next pass), 7 joins; every other node defers."""
    graph = graph_from_pairs([(0, 1), (0, 2), (0, 3), (0, 4), (4, 5), (5, 6)], 8, "star-tail")
    expected = np.array([EXCLUDE, DEFER, DEFER, DEFER, DEFER, EXCLUDE, DEFER, INCLUDE])
    for triangles in (True, False):
        assert np.array_equal(on_device(graph, triangles), expected)
