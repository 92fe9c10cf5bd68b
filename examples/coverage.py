"""Maximum coverage ("pick k seed nodes that reach the most of the graph"), written as a user's
own environment: the README walks through it, and the tests train and transfer it.

Each step picks one node; the node and its neighbours become covered; the reward is the number
of newly covered nodes divided by the node count. The episode ends after ``budget`` picks.

``CoverageEnv`` returns observations in graphtransfer's contract directly. ``GraphCoverageEnv``
is the same task with a ``gymnasium.spaces.Graph`` observation, which graphtransfer pads into
the contract with ``GraphObservationAdapter``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class CoverageEnv(gym.Env):
    """Args:
    graphs: graphtransfer ``Graph`` objects to sample from (graphtransfer passes them in).
    budget: picks per episode.
    """

    def __init__(self, graphs, budget: int = 5):
        self.graphs, self.budget = list(graphs), budget
        self.max_nodes = max(g.num_nodes for g in self.graphs)
        self.max_edges = max(g.edge_index.shape[1] for g in self.graphs)
        self.observation_space = spaces.Dict(
            {
                "x": spaces.Box(0.0, np.inf, (self.max_nodes, 3), np.float32),
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
        self.covered = np.zeros(self.graph.num_nodes, dtype=bool)
        self.picks = 0
        return self._obs(), {}

    def step(self, action):
        node = int(action)
        src, dst = self.graph.edge_index
        before = self.covered.sum()
        self.chosen[node] = self.covered[node] = True
        self.covered[dst[src == node]] = True
        self.picks += 1
        reward = (self.covered.sum() - before) / self.graph.num_nodes
        return self._obs(), float(reward), self.picks >= self.budget, False, {}

    def action_masks(self) -> np.ndarray:
        """Nodes not yet chosen; padding is never valid (MaskablePPO reads this)."""
        mask = np.zeros(self.max_nodes, dtype=bool)
        mask[: self.graph.num_nodes] = ~self.chosen
        return mask

    def _obs(self):
        n, e = self.graph.num_nodes, self.graph.edge_index.shape[1]
        x = np.zeros((self.max_nodes, 3), dtype=np.float32)
        x[:n, 0], x[:n, 1] = self.chosen, self.covered
        x[:n, 2] = np.log1p(self.graph.degrees())
        edge_index = np.zeros((2, self.max_edges), dtype=np.int64)
        edge_index[:, :e] = self.graph.edge_index
        return {"x": x, "edge_index": edge_index, "num_nodes": np.array([n]), "num_edges": np.array([e])}


class GraphCoverageEnv(CoverageEnv):
    """The same task observed as a ``gymnasium.spaces.Graph``; ``max_nodes``/``max_edges`` tell
    the adapter how far to pad."""

    def __init__(self, graphs, budget: int = 5):
        super().__init__(graphs, budget)
        self.observation_space = spaces.Graph(node_space=spaces.Box(0.0, np.inf, (3,), np.float32), edge_space=None)

    def _obs(self):
        padded = super()._obs()
        n, e = int(padded["num_nodes"][0]), int(padded["num_edges"][0])
        return spaces.GraphInstance(nodes=padded["x"][:n], edges=None, edge_links=padded["edge_index"][:, :e].T)
