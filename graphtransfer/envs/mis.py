"""Maximum independent set, every node acts at once (exclude / include / defer).

Rules of one step, all vectorized over nodes and edges:

1. every undecided node picks ``EXCLUDE``, ``INCLUDE`` or ``DEFER``;
2. two adjacent nodes that both pick ``INCLUDE`` are rolled back to undecided;
3. the remaining includes join the set and their undecided neighbours become excluded;
4. nodes that picked ``EXCLUDE`` and are still undecided become excluded.

Reward: newly included nodes / the graph's node count, so a whole episode returns the set's
size as a fraction of the graph and the scale does not grow with graph size.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from gymnasium import spaces

from graphtransfer.envs.base import GraphEnv
from graphtransfer.graphs import Graph

EXCLUDE, INCLUDE, DEFER = 0, 1, 2
UNDECIDED, IN_SET, OUT = 0, 1, 2


class MISEnv(GraphEnv):
    """Node features, ``(num_nodes, 5)``: one-hot status (undecided / in set / excluded),
    ``log(1 + undecided-neighbour count)`` and a fresh uniform tie-breaker per step, the last two
    zero for decided nodes. The tie-breaker lets a deterministic policy separate two adjacent
    nodes that look alike, which otherwise both include and roll back forever."""

    num_features = 5
    num_actions = 3

    def __init__(self, graphs: Sequence[Graph], horizon: int = 32):
        super().__init__(graphs, horizon)
        self.action_space = spaces.MultiDiscrete(np.full(self.max_nodes, self.num_actions))

    def _start(self) -> None:
        self.status = np.full(self.graph.num_nodes, UNDECIDED, dtype=np.int8)

    def _features(self) -> np.ndarray:
        undecided = self.status == UNDECIDED
        src, dst = self.graph.edge_index
        live_degree = np.bincount(src[undecided[dst]], minlength=self.graph.num_nodes) * undecided
        features = np.zeros((self.graph.num_nodes, self.num_features), dtype=np.float32)
        features[np.arange(self.graph.num_nodes), self.status] = 1.0
        features[:, 3] = np.log1p(live_degree)
        features[:, 4] = self.np_random.random(self.graph.num_nodes) * undecided
        return features

    def _apply(self, action: np.ndarray) -> float:
        self.status, added = mis_step(self.graph.edge_index, self.status, action)
        return added / self.graph.num_nodes

    def _finished(self) -> bool:
        return not (self.status == UNDECIDED).any()

    def solution(self) -> np.ndarray:
        """``(num_nodes,)`` bool, the nodes in the set so far."""
        return self.status == IN_SET

    @staticmethod
    def objective(graph: Graph, solution: np.ndarray) -> float:
        """The set's size (larger is better)."""
        return float(solution.sum())

    @staticmethod
    def feasible(graph: Graph, solution: np.ndarray) -> bool:
        return is_independent_set(graph, solution)


def mis_step(edge_index: np.ndarray, status: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, int]:
    """One step of the rules above; returns the new status and how many nodes joined the set."""
    src, dst = edge_index
    undecided = status == UNDECIDED
    wants_in = undecided & (action == INCLUDE)
    clash = np.zeros_like(wants_in)
    clash[src[wants_in[src] & wants_in[dst]]] = True
    joins = wants_in & ~clash
    status = status.copy()
    status[joins] = IN_SET
    near_new = np.zeros_like(joins)
    near_new[dst[joins[src]]] = True
    status[near_new & (status == UNDECIDED)] = OUT
    status[(action == EXCLUDE) & (status == UNDECIDED)] = OUT
    return status, int(joins.sum())


def is_independent_set(graph: Graph, chosen: np.ndarray) -> bool:
    """No edge has both endpoints chosen."""
    src, dst = graph.edge_index
    return not (chosen[src] & chosen[dst]).any()
