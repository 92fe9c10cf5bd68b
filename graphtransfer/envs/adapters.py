"""Adapters that bring other graph environments into the observation contract."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from graphtransfer.envs.contract import EDGE_ATTR, observation_space, padded_edge_attr, padded_structure
from graphtransfer.errors import UsageError


class GraphObservationAdapter(gym.ObservationWrapper):
    """Pads the ``gymnasium.spaces.Graph`` observations of ``env`` into the contract's ``Dict``.

    ``GraphInstance.nodes`` ``(N, F)`` become ``x``; ``edge_links`` ``(E, 2)`` become
    ``edge_index`` as directed edges (list both directions for an undirected graph); edge
    features ``GraphInstance.edges`` ``(E, ...)`` of a ``Box`` edge space become ``edge_attr``
    ``(max_edges, F_e)``, one row per link, flattened. Padding sizes come from the arguments or from the wrapped env's
    ``max_nodes`` / ``max_edges`` attributes.
    """

    def __init__(self, env: gym.Env, max_nodes: int | None = None, max_edges: int | None = None):
        super().__init__(env)
        graph_space = env.observation_space
        if not isinstance(graph_space, spaces.Graph) or not isinstance(graph_space.node_space, spaces.Box):
            raise UsageError(f"GraphObservationAdapter wraps envs with a spaces.Graph observation of Box nodes; got {graph_space}")
        max_nodes = max_nodes or getattr(env.unwrapped, "max_nodes", None)
        max_edges = max_edges or getattr(env.unwrapped, "max_edges", None)
        if not max_nodes or not max_edges:
            raise UsageError("GraphObservationAdapter needs max_nodes and max_edges: pass them, or give the env those attributes")
        self.max_nodes: int = max_nodes
        self.max_edges: int = max_edges
        num_features = int(np.prod(graph_space.node_space.shape))
        edge_space = graph_space.edge_space
        self.num_edge_features = int(np.prod(edge_space.shape)) if isinstance(edge_space, spaces.Box) else 0
        self.observation_space = observation_space(self.max_nodes, self.max_edges, num_features, self.num_edge_features)

    def observation(self, observation: spaces.GraphInstance) -> dict[str, np.ndarray]:
        nodes = np.asarray(observation.nodes, dtype=np.float32)
        nodes = nodes.reshape(nodes.shape[0], -1)
        if nodes.shape[0] > self.max_nodes:
            raise UsageError(f"graph observation has {nodes.shape[0]} nodes; the adapter pads to max_nodes={self.max_nodes}")
        x = np.zeros((self.max_nodes, nodes.shape[1]), dtype=np.float32)
        x[: nodes.shape[0]] = nodes
        links = np.asarray(observation.edge_links, dtype=np.int64).reshape(-1, 2).T
        obs = {"x": x, **padded_structure(links, nodes.shape[0], self.max_nodes, self.max_edges)}
        if self.num_edge_features:
            features = np.asarray(observation.edges, dtype=np.float32).reshape(links.shape[1], self.num_edge_features)
            obs[EDGE_ATTR] = padded_edge_attr(features, self.max_edges)
        return obs
