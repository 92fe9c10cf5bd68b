"""Minimum-weight vertex cover as a user's own node-choice env: pick nodes until every edge has a
picked endpoint; a pick costs its weight. ``Discrete(max_nodes)`` with ``action_masks()``; the
reward is minus the pick's weight over the graph's total, so a lighter cover is better.

The weights are the graph's (``graphtransfer.graphs.weights.node_weights``: a file's own node
weights, else seeded ones from 1 to 10), which is how the declared rules read them:
``rules = graphtransfer.tasks.weighted_cover`` gives ``eval --polish`` and ``predict --polish``
the built-in ``mvc-weighted`` task's search from the env's cover, and eval its baselines.
``step_many`` and ``open_nodes`` let a pass commit many picks at once on large graphs.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

import graphtransfer.tasks
from graphtransfer.graphs.weights import node_weights


class WeightedCoverEnv(gym.Env):
    """Args:
    graphs: graphtransfer ``Graph`` objects to sample from (graphtransfer passes them in).
    """

    sense = "min"
    rules = graphtransfer.tasks.weighted_cover

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
        self.action_space = spaces.Discrete(self.max_nodes)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.graph = self.graphs[self.np_random.integers(len(self.graphs))]
        self.weights = node_weights(self.graph)
        self.shown = self.weights / max(float(self.weights.max()), 1e-12)  # any scale shown as 0..1
        self.cover = np.zeros(self.graph.num_nodes, dtype=bool)
        return self._obs(), {}

    def step(self, action):
        return self.step_many(np.array([int(action)]))

    def step_many(self, nodes):
        nodes = np.unique(nodes)
        nodes = nodes[~self.cover[nodes]]
        self.cover[nodes] = True
        reward = -float(self.weights[nodes].sum()) / max(float(self.weights.sum()), 1e-12)
        return self._obs(), reward, not self._uncovered_degree().any(), False, {}

    def open_nodes(self):
        """Endpoints of uncovered edges: two picks of one pass interact only through them."""
        return self._uncovered_degree() > 0

    def action_masks(self):
        """Nodes with an uncovered edge; padding never valid."""
        mask = np.zeros(self.max_nodes, dtype=bool)
        mask[: self.graph.num_nodes] = self._uncovered_degree() > 0
        return mask

    def solution(self):
        return self.cover.copy()

    @staticmethod
    def objective(graph, solution):
        return float(node_weights(graph)[solution].sum())

    @staticmethod
    def feasible(graph, solution):
        src, dst = graph.edge_index
        return bool((solution[src] | solution[dst]).all())

    def _uncovered_degree(self):
        src, dst = self.graph.edge_index
        open_edge = ~(self.cover[src] | self.cover[dst])
        return np.bincount(src[open_edge], minlength=self.graph.num_nodes)

    def _obs(self):
        n, e = self.graph.num_nodes, self.graph.edge_index.shape[1]
        uncovered = self._uncovered_degree()
        x = np.zeros((self.max_nodes, 4), dtype=np.float32)
        x[:n, 0], x[:n, 1] = self.cover, self.shown
        x[:n, 2], x[:n, 3] = np.log1p(uncovered), np.log1p(uncovered / np.maximum(self.shown * 10, 1e-3))
        edge_index = np.zeros((2, self.max_edges), dtype=np.int64)
        edge_index[:, :e] = self.graph.edge_index
        return {"x": x, "edge_index": edge_index, "num_nodes": np.array([n]), "num_edges": np.array([e])}
