"""Neural networks: batching, the GNN features extractor, node distributions and policies."""

from graphtransfer.nn.batching import DisjointGraph, to_disjoint
from graphtransfer.nn.extractor import CONVS, GNNExtractor
from graphtransfer.nn.policy import NodePolicy, build_policy, policy_kwargs

__all__ = ["CONVS", "DisjointGraph", "GNNExtractor", "NodePolicy", "build_policy", "policy_kwargs", "to_disjoint"]
