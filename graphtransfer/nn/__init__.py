"""Neural networks: batching, the GNN features extractor, node distributions, policies and DQN's Q-networks."""

from graphtransfer.nn.batching import DisjointGraph, to_disjoint
from graphtransfer.nn.extractor import CONVS, GNNExtractor, check_node_budget, configure_runtime
from graphtransfer.nn.policy import (
    HEADS,
    POLICIES,
    EdgeChoicePolicy,
    EdgePolicy,
    GraphPolicy,
    NodeChoicePolicy,
    NodePolicy,
    build_policy,
    policy_for,
    policy_kwargs,
)
from graphtransfer.nn.qnetwork import Q_POLICIES, ActionQPolicy, NodeQPolicy, build_q_policy, q_policy_kwargs

__all__ = [
    "CONVS",
    "HEADS",
    "POLICIES",
    "Q_POLICIES",
    "ActionQPolicy",
    "DisjointGraph",
    "EdgeChoicePolicy",
    "EdgePolicy",
    "GNNExtractor",
    "GraphPolicy",
    "NodeChoicePolicy",
    "NodePolicy",
    "NodeQPolicy",
    "build_policy",
    "build_q_policy",
    "check_node_budget",
    "configure_runtime",
    "policy_for",
    "policy_kwargs",
    "q_policy_kwargs",
    "to_disjoint",
]
