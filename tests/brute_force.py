"""Tiny random graphs and brute-force optima over every node subset, to check the baselines
against. The objective and feasibility checks live here, not in the package: the task
environments own those definitions."""

import numpy as np

from graphtransfer.graphs import barabasi_albert, erdos_renyi

from .conftest import graph_from_pairs

TINY_GRAPHS = (
    [erdos_renyi(n, degree, seed) for seed in range(8) for n, degree in ((6, 2.0), (8, 3.0), (10, 4.0))]
    + [barabasi_albert(n, m, seed) for seed in range(4) for n, m in ((7, 2), (10, 3))]
    + [erdos_renyi(6, 0.0, 0), erdos_renyi(6, 20.0, 0), graph_from_pairs([], 1, "single")]  # no edges, complete, one node
)


def endpoints(graph):
    """Both endpoints of every undirected edge, once each."""
    src, dst = graph.edge_index
    return src[src < dst], dst[src < dst]


def all_subsets(num_nodes):
    """``(2^num_nodes, num_nodes)`` bool, row ``i`` the subset whose bits make ``i``."""
    return ((np.arange(1 << num_nodes)[:, None] >> np.arange(num_nodes)) & 1).astype(bool)


def is_independent(graph, chosen):
    u, v = endpoints(graph)
    return not (chosen[u] & chosen[v]).any()


def is_maximal_independent(graph, chosen):
    """Independent, and every node outside the set has a neighbour in it."""
    covered = chosen.copy()
    covered[graph.edge_index[1][chosen[graph.edge_index[0]]]] = True
    return is_independent(graph, chosen) and covered.all()


def is_vertex_cover(graph, cover):
    u, v = endpoints(graph)
    return bool((cover[u] | cover[v]).all())


def cut_size(graph, side):
    u, v = endpoints(graph)
    return int((side[u] != side[v]).sum())


def flip_gains(graph, side):
    """``(num_nodes,)``: how much the cut grows when each node alone changes side."""
    src, dst = graph.edge_index
    same = np.bincount(src[side[src] == side[dst]], minlength=graph.num_nodes)
    return same - (graph.degrees() - same)


def max_independent_set_size(graph):
    subsets = all_subsets(graph.num_nodes)
    u, v = endpoints(graph)
    return int(subsets[~(subsets[:, u] & subsets[:, v]).any(axis=1)].sum(axis=1).max())


def min_vertex_cover_size(graph):
    subsets = all_subsets(graph.num_nodes)
    u, v = endpoints(graph)
    return int(subsets[(subsets[:, u] | subsets[:, v]).all(axis=1)].sum(axis=1).min())


def max_cut_size(graph):
    subsets = all_subsets(graph.num_nodes)
    u, v = endpoints(graph)
    return int((subsets[:, u] != subsets[:, v]).sum(axis=1).max())


def min_weight_vertex_cover(graph, weights):
    """The least total weight of a vertex cover, over every node subset."""
    subsets = all_subsets(graph.num_nodes)
    u, v = endpoints(graph)
    covers = (subsets[:, u] | subsets[:, v]).all(axis=1)
    return float((subsets[covers] * weights).sum(axis=1).min())
