"""Minimum dominating set as a user's own node-choice env: pick nodes until every node is picked
or beside a pick. ``Discrete(max_nodes)`` with ``action_masks()``; the reward is -1 per pick over
the node count, so fewer picks is better.

Declaring ``step_many(nodes)`` lets the decoding commit several picks in one pass: of the surest
valid nodes, those that outscore every valid node within two hops (picks further apart dominate
disjoint neighbourhoods, as one-pick-at-a-time decoding would have picked them), so a graph of
10^5 nodes is decoded in dozens of passes instead of one pass per pick. ``open_nodes()`` (the
nodes not yet dominated) says through which nodes two picks interact at all.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class DominatingSetEnv(gym.Env):
    """Args:
    graphs: graphtransfer ``Graph`` objects to sample from (graphtransfer passes them in).
    """

    sense = "min"

    def __init__(self, graphs):
        self.graphs = list(graphs)
        self.max_nodes = max(g.num_nodes for g in self.graphs)
        self.max_edges = max(g.edge_index.shape[1] for g in self.graphs)
        self.observation_space = spaces.Dict(
            {
                "x": spaces.Box(0.0, np.inf, (self.max_nodes, 4), np.float32),
                "edge_index": spaces.Box(0, self.max_nodes - 1, (2, self.max_edges), np.int64),
                "num_nodes": spaces.Box(0, self.max_nodes, (1,), np.int64),
                "num_edges": spaces.Box(0, self.max_edges, (1,), np.int64),
            }
        )
        self.action_space = spaces.Discrete(self.max_nodes)  # pick one node: the node-choice head

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.graph = self.graphs[self.np_random.integers(len(self.graphs))]
        self.chosen = np.zeros(self.graph.num_nodes, dtype=bool)
        self.dominated = np.zeros(self.graph.num_nodes, dtype=bool)
        return self._obs(), {}

    def step(self, action):
        return self.step_many(np.array([int(action)]))

    def step_many(self, nodes):
        src, dst = self.graph.edge_index
        self.chosen[nodes] = True
        self.dominated[nodes] = True
        self.dominated[dst[self.chosen[src]]] = True
        reward = -len(nodes) / self.graph.num_nodes
        return self._obs(), reward, bool(self.dominated.all()), False, {}

    def open_nodes(self):
        """Nodes not yet dominated: two picks of one pass interact only through them."""
        return ~self.dominated

    def action_masks(self):
        """Nodes not chosen that would dominate someone new; padding never valid."""
        src, dst = self.graph.edge_index
        useful = ~self.dominated
        useful[src[~self.dominated[dst]]] = True
        mask = np.zeros(self.max_nodes, dtype=bool)
        mask[: self.graph.num_nodes] = useful & ~self.chosen
        return mask

    def solution(self):
        return self.chosen.copy()

    @staticmethod
    def objective(graph, solution):
        return float(np.sum(solution))

    @staticmethod
    def feasible(graph, solution):
        dominated = solution.copy()
        src, dst = graph.edge_index
        dominated[dst[solution[src]]] = True
        return bool(dominated.all())

    def _obs(self):
        n, e = self.graph.num_nodes, self.graph.edge_index.shape[1]
        src, dst = self.graph.edge_index
        new = np.bincount(src, weights=~self.dominated[dst], minlength=n) + ~self.dominated  # nodes a pick would dominate
        x = np.zeros((self.max_nodes, 4), dtype=np.float32)
        x[:n, 0], x[:n, 1] = self.chosen, self.dominated
        x[:n, 2], x[:n, 3] = np.log1p(self.graph.degrees()), np.log1p(new)
        edge_index = np.zeros((2, self.max_edges), dtype=np.int64)
        edge_index[:, :e] = self.graph.edge_index
        return {"x": x, "edge_index": edge_index, "num_nodes": np.array([n]), "num_edges": np.array([e])}


class ManyPicksDominatingSetEnv(DominatingSetEnv):
    """The same env without ``open_nodes``: picks of one pass interact through any valid node."""

    open_nodes = None  # type: ignore[assignment]


class OnePickDominatingSetEnv(DominatingSetEnv):
    """The same env without ``step_many``: one pick per pass."""

    step_many = None  # type: ignore[assignment]
    open_nodes = None  # type: ignore[assignment]

    def step(self, action):
        return DominatingSetEnv.step_many(self, np.array([int(action)]))


def greedy_dominating_set(graph) -> np.ndarray:
    """Sequential greedy: pick the node that dominates the most nodes not yet dominated, until all are."""
    indptr, indices = graph.csr()
    n = graph.num_nodes
    dominated = np.zeros(n, dtype=bool)
    chosen = np.zeros(n, dtype=bool)
    gain = np.diff(indptr) + 1
    while not dominated.all():
        v = int(np.argmax(gain))
        chosen[v] = True
        closed = np.append(indices[indptr[v] : indptr[v + 1]], v)
        newly = closed[~dominated[closed]]
        dominated[newly] = True
        for u in newly:  # each newly dominated node no longer counts for itself and its neighbours
            gain[u] -= 1
            gain[indices[indptr[u] : indptr[u + 1]]] -= 1
        gain[v] = -1
    return chosen
