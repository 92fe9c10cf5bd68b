"""sample_subgraphs: breadth-first balls of a large graph, induced and renumbered."""

import numpy as np
import pytest

from graphtransfer.errors import UsageError
from graphtransfer.graphs import barabasi_albert, erdos_renyi, random_geometric, sample_subgraphs
from tests.conftest import graph_from_pairs


def _components(graph) -> int:
    parent = list(range(graph.num_nodes))

    def root(v):
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for u, v in graph.edge_index.T.tolist():
        parent[root(u)] = root(v)
    return len({root(v) for v in range(graph.num_nodes)})


@pytest.mark.parametrize(
    "make", [lambda: erdos_renyi(2000, 8.0, 1), lambda: barabasi_albert(2000, 3, 1), lambda: random_geometric(2000, 8.0, 1)]
)
def test_balls_are_connected_induced_subgraphs_of_the_size_asked(make):
    graph = make()
    subgraphs = sample_subgraphs(graph, 4, 300, seed=7)
    assert len(subgraphs) == 4
    for sub in subgraphs:
        assert sub.num_nodes == 300
        assert sub.edge_index.min() >= 0 and sub.edge_index.max() < 300
        assert _components(sub) == 1  # the graphs are connected, so one ball is one piece
        nodes = sub.ids()  # each node's position in the parent
        assert np.all(np.diff(nodes) > 0)  # renumbered in the parent's order
        keep = np.zeros(graph.num_nodes, dtype=bool)
        keep[nodes] = True
        src, dst = graph.edge_index
        inside = keep[src] & keep[dst]
        expected = sorted(zip(src[inside].tolist(), dst[inside].tolist(), strict=True))
        assert sorted(zip(nodes[sub.edge_index[0]].tolist(), nodes[sub.edge_index[1]].tolist(), strict=True)) == expected
    assert len({sub.edge_index.tobytes() for sub in subgraphs}) > 1  # random centres: the balls differ


def test_every_edge_between_kept_nodes_is_kept():
    """A complete graph minus one edge: any 4 of its nodes induce every edge among them but that one."""
    pairs = [(u, v) for u in range(6) for v in range(u + 1, 6) if (u, v) != (0, 1)]
    graph = graph_from_pairs(pairs, 6)
    for seed in range(10):
        (sub,) = sample_subgraphs(graph, 1, 4, seed)
        assert sub.num_edges in (5, 6)  # 6 choose 2, less the missing edge where both 0 and 1 were kept


def test_sampling_repeats_with_its_seed_and_varies_without():
    graph = erdos_renyi(3000, 6.0, 2)
    first = sample_subgraphs(graph, 3, 500, seed=1)
    again = sample_subgraphs(graph, 3, 500, seed=1)
    other = sample_subgraphs(graph, 3, 500, seed=2)
    assert [g.edge_index.tobytes() for g in first] == [g.edge_index.tobytes() for g in again]
    assert [g.edge_index.tobytes() for g in first] != [g.edge_index.tobytes() for g in other]


def test_a_ball_goes_on_in_another_component_and_a_large_size_takes_the_whole_graph():
    two_triangles = graph_from_pairs([(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5)], 6)
    (sub,) = sample_subgraphs(two_triangles, 1, 5, seed=0)
    assert sub.num_nodes == 5 and sub.num_edges == 4  # one triangle whole, two nodes of the other and their edge
    (whole,) = sample_subgraphs(two_triangles, 1, 10**9, seed=0)
    assert whole.num_nodes == 6 and whole.num_edges == 6


@pytest.mark.parametrize(
    ("count", "size", "message"),
    [
        (0, 10, "count=0"),
        (-1, 10, "count=-1"),
        (2.5, 10, "count=2.5"),
        (True, 10, "count=True"),
        (1, 1, "size=1"),
        (1, float("nan"), "size=nan"),
        (1, "9", "size='9'"),
    ],
)
def test_bad_counts_and_sizes_are_refused_by_name(count, size, message):
    with pytest.raises(UsageError, match=message):
        sample_subgraphs(erdos_renyi(50, 3.0, 0), count, size, seed=0)


def test_a_graph_too_small_to_sample_is_refused():
    with pytest.raises(UsageError, match="at least 2"):
        sample_subgraphs(graph_from_pairs([], 1), 1, 2, seed=0)
    assert np.array_equal(sample_subgraphs(graph_from_pairs([(0, 1)], 2), 1, 2, 0)[0].edge_index, [[0, 1], [1, 0]])
