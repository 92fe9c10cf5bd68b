"""A gymnasium env over a set of graphs, padded to the largest; tasks fill in the rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from graphtransfer.envs.contract import observation_space, padded_structure
from graphtransfer.graphs import Graph


class GraphEnv(gym.Env):
    """Each episode samples one graph from ``graphs``; observations follow the contract in
    :mod:`graphtransfer.envs.contract`, padded to the largest graph of the set.

    Subclasses set ``num_features`` and the action space, and implement :meth:`_start`,
    :meth:`_features`, :meth:`_apply` and :meth:`_finished`.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}
    num_features: ClassVar[int]

    def __init__(self, graphs: Sequence[Graph], horizon: int = 32):
        if not graphs:
            raise ValueError("a graph env needs at least one graph")
        if horizon < 1:
            raise ValueError(f"horizon={horizon}; it must be at least 1")
        self.graphs = list(graphs)
        self.horizon = horizon
        self.max_nodes = max(g.num_nodes for g in self.graphs)
        self.max_edges = max(max(g.edge_index.shape[1] for g in self.graphs), 1)
        self.observation_space = observation_space(self.max_nodes, self.max_edges, self.num_features)
        self._structures: dict[int, dict[str, np.ndarray]] = {}
        self.graph = self.graphs[0]

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode on a random graph of the set, or on ``options["graph_index"]``."""
        super().reset(seed=seed)
        index = (options or {}).get("graph_index")
        if index is None:
            index = int(self.np_random.integers(len(self.graphs)))
        self.graph = self.graphs[index]
        if index not in self._structures:  # pad each graph once, not once per episode
            self._structures[index] = padded_structure(self.graph, self.max_nodes, self.max_edges)
        self._structure = self._structures[index]
        self.steps = 0
        self._start()
        return self._observation(), {}

    def step(self, action: np.ndarray):
        action = np.asarray(action)[: self.graph.num_nodes]
        reward = self._apply(action)
        self.steps += 1
        terminated = self._finished()
        truncated = not terminated and self.steps >= self.horizon
        return self._observation(), float(reward), terminated, truncated, {}

    def _observation(self) -> dict[str, np.ndarray]:
        x = np.zeros((self.max_nodes, self.num_features), dtype=np.float32)
        x[: self.graph.num_nodes] = self._features()
        # Fresh arrays every call: callers may keep or modify what they are handed.
        return {"x": x, **{key: value.copy() for key, value in self._structure.items()}}

    def _start(self) -> None:
        """Reset the task state for ``self.graph``."""
        raise NotImplementedError

    def _features(self) -> np.ndarray:
        """Node features of the real nodes, ``(num_nodes, num_features)``."""
        raise NotImplementedError

    def _apply(self, action: np.ndarray) -> float:
        """Apply the actions of the real nodes, ``(num_nodes,)``; return the reward."""
        raise NotImplementedError

    def _finished(self) -> bool:
        raise NotImplementedError
