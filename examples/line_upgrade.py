"""A user's environment that acts on edges: a power grid whose lines carry a load and a
capacity, and a crew that reinforces one line per step -- written as a user would, following
the observation contract with its optional ``edge_attr``, with an edge-choice action.

Each episode draws every line's load and capacity. A step picks one line (``Discrete(max_edges)``,
an index into ``edge_index``'s columns); the reward is that line's stress, load over capacity.
A crew works at a substation for the rest of the episode, so a line that touches a substation
already worked at is masked (``action_masks()``, as sb3-contrib's MaskablePPO expects), and so
is padding. Node features: the substation's degree over the largest degree, and whether a crew
worked there. Edge features: load and capacity, the same for both directions of a line.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class LineUpgradeEnv(gym.Env):
    """Args:
    graphs: graphtransfer ``Graph`` objects (graphtransfer passes them in); each episode picks one.
    budget: lines reinforced per episode.
    """

    head = "edge-choice"

    def __init__(self, graphs, budget: int = 4):
        self.graphs, self.budget = list(graphs), budget
        self.max_nodes = max(g.num_nodes for g in self.graphs)
        self.max_edges = max(g.edge_index.shape[1] for g in self.graphs)
        n, e = self.max_nodes, self.max_edges
        self.observation_space = spaces.Dict(
            {
                "x": spaces.Box(0.0, 1.0, (n, 2), np.float32),
                "edge_index": spaces.Box(0, n - 1, (2, e), np.int64),
                "num_nodes": spaces.Box(0, n, (1,), np.int64),
                "num_edges": spaces.Box(0, e, (1,), np.int64),
                "edge_attr": spaces.Box(0.0, 2.0, (e, 2), np.float32),
            }
        )
        self.action_space = spaces.Discrete(e)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.graph = self.graphs[int(self.np_random.integers(len(self.graphs)))]
        src, dst = self.graph.edge_index
        line = np.minimum(src, dst) * self.graph.num_nodes + np.maximum(src, dst)  # both directions, one line
        _, which = np.unique(line, return_inverse=True)
        draws = self.np_random.random((which.max() + 1, 2)).astype(np.float32)
        self.load, self.capacity = draws[which, 0], 0.5 + draws[which, 1]
        self.worked = np.zeros(self.graph.num_nodes, dtype=bool)
        self.steps = 0
        return self._obs(), {}

    def action_masks(self) -> np.ndarray:
        src, dst = self.graph.edge_index
        mask = np.zeros(self.max_edges, dtype=bool)
        mask[: src.size] = ~(self.worked[src] | self.worked[dst])
        return mask

    def step(self, action):
        src, dst = self.graph.edge_index
        edge = int(action)
        reward = float(self.load[edge] / self.capacity[edge]) if edge < src.size else 0.0
        if edge < src.size:
            self.worked[[src[edge], dst[edge]]] = True
        self.steps += 1
        done = not self.action_masks().any()
        return self._obs(), reward, done, self.steps >= self.budget, {}

    def _obs(self) -> dict[str, np.ndarray]:
        n, e = self.graph.num_nodes, self.graph.edge_index.shape[1]
        degree = np.bincount(self.graph.edge_index[0], minlength=n).astype(np.float32)
        x = np.zeros((self.max_nodes, 2), dtype=np.float32)
        x[:n, 0], x[:n, 1] = degree / max(float(degree.max()), 1.0), self.worked
        edge_index = np.zeros((2, self.max_edges), dtype=np.int64)
        edge_index[:, :e] = self.graph.edge_index
        edge_attr = np.zeros((self.max_edges, 2), dtype=np.float32)
        edge_attr[:e, 0], edge_attr[:e, 1] = self.load, self.capacity
        return {"x": x, "edge_index": edge_index, "num_nodes": np.array([n]), "num_edges": np.array([e]), "edge_attr": edge_attr}
