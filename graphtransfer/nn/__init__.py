"""Neural networks: batching, the GNN features extractor, node distributions and policies."""

from graphtransfer.nn.batching import DisjointGraph, to_disjoint
from graphtransfer.nn.extractor import CONVS, GNNExtractor, check_node_budget, configure_runtime
from graphtransfer.nn.policy import HEADS, POLICIES, NodeChoicePolicy, NodePolicy, build_policy, policy_kwargs

__all__ = [
    "CONVS",
    "HEADS",
    "POLICIES",
    "DisjointGraph",
    "GNNExtractor",
    "NodeChoicePolicy",
    "NodePolicy",
    "build_policy",
    "check_node_budget",
    "configure_runtime",
    "policy_kwargs",
    "to_disjoint",
]
