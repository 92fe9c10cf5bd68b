"""A user's environment at the seed's scale: one fixed graph of ~150,000 nodes, node features
``(N, 2)``, one decision per step for the whole graph -- the shape of environment graphtransfer was
made for, written as a user would, following the observation contract.

Each step a hidden level ``g ~ U(0, 1)`` is drawn and every node sees a noisy reading of it; the
agent names the quartile of the degree-weighted mean reading (``Discrete(4)``), reward 1 when
right. Node features: the node's degree over the largest degree (static) and its reading
(redrawn every step). The graph is whatever graphtransfer hands the env (``--graphs``), so the
same env class trains on a 148,640-node graph and runs on the 250,151-node one; the README's
"Training at scale" section has the commands and what they printed.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class SignalEnv(gym.Env):
    """Args:
    graphs: graphtransfer ``Graph`` objects (graphtransfer passes them in); episodes use the first.
    episode_len: steps per episode.
    noise: standard deviation of each node's reading around the hidden level.
    """

    def __init__(self, graphs, episode_len: int = 32, noise: float = 0.25):
        self.graph = list(graphs)[0]
        self.episode_len, self.noise = episode_len, noise
        n, e = self.graph.num_nodes, self.graph.edge_index.shape[1]
        degree = np.bincount(self.graph.edge_index[0], minlength=n).astype(np.float32)
        self.weights = degree / max(float(degree.sum()), 1.0)
        self.observation_space = spaces.Dict(
            {
                "x": spaces.Box(-1.0, 2.0, (n, 2), np.float32),
                "edge_index": spaces.Box(0, n - 1, (2, e), np.int64),
                "num_nodes": spaces.Box(0, n, (1,), np.int64),
                "num_edges": spaces.Box(0, e, (1,), np.int64),
            }
        )
        self.action_space = spaces.Discrete(4)  # a graph-level decision
        self.x = np.zeros((n, 2), dtype=np.float32)
        self.x[:, 0] = degree / max(float(degree.max()), 1.0)
        self.steps, self.target = 0, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        self._new_reading()
        return self._obs(), {}

    def step(self, action):
        reward = 1.0 if int(action) == self.target else 0.0
        self.steps += 1
        self._new_reading()
        return self._obs(), reward, False, self.steps >= self.episode_len, {}

    def _new_reading(self) -> None:
        level = self.np_random.random()
        reading = level + self.noise * self.np_random.standard_normal(self.graph.num_nodes).astype(np.float32)
        self.x[:, 1] = np.clip(reading, -1.0, 2.0)
        self.target = int(np.clip(np.floor(4.0 * float(self.weights @ self.x[:, 1])), 0, 3))

    def _obs(self) -> dict[str, np.ndarray]:
        n, e = self.graph.num_nodes, self.graph.edge_index.shape[1]
        return {"x": self.x.copy(), "edge_index": self.graph.edge_index.copy(), "num_nodes": np.array([n]), "num_edges": np.array([e])}
