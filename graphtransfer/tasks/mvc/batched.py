"""K vertex-cover episodes stepped as one disjoint union (:class:`~graphtransfer.envs.batched.UnionBatch`):
each episode's chosen node joins its cover at once over the union, the uncovered edges are filtered
from the last step's as the env filters them, and the features and masks of every episode come
from one count of uncovered edges (:func:`~graphtransfer.tasks.mvc.step.cover_features`)."""

from __future__ import annotations

from typing import Protocol, cast

import numpy as np

from graphtransfer.envs.batched import Observation, UnionBatch
from graphtransfer.tasks.mvc.step import cover_features, weighted_cover_features


class MVCBatch(UnionBatch):
    """The union's state: the cover, the uncovered edges (each episode's in its graph's order)
    and each node's count of them as the last observation showed it."""

    def __init__(self, envs):
        super().__init__(envs)
        self.in_cover = np.zeros(self.count * self.max_nodes, dtype=bool)
        self.live = np.zeros((2, 0), dtype=np.int64)
        self.degree = np.zeros(self.count * self.max_nodes, dtype=np.int64)

    def start(self, which: np.ndarray) -> None:
        super().start(which)
        self.in_cover[np.repeat(which, self.max_nodes)] = False
        self.live = self.replace_edges(self.live, which)

    def observe(self, which: np.ndarray, out: Observation) -> None:
        edges, nodes = self.edges_of(self.live, which), self.nodes_of(which)
        degree = np.bincount(edges[0], minlength=self.in_cover.size)
        self.degree[nodes] = degree[nodes]
        self.write_nodes("x", self.features(nodes, self.draws(which)), which, out)
        self.write_structure(edges, which, out)

    def features(self, nodes: np.ndarray, draw: np.ndarray) -> np.ndarray:
        """The node features ``(nodes, F)`` of the union's ``nodes`` (bool), given each one's fresh ``draw``."""
        return cover_features(self.in_cover[nodes], self.degree[nodes], draw)

    def action_masks(self) -> np.ndarray:
        """``(K, max_nodes)`` bool: the nodes with uncovered edges, as each env's ``action_masks``."""
        return (self.degree > 0).reshape(self.count, self.max_nodes)

    def apply(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        nodes = np.asarray(actions).reshape(self.count)
        node = np.arange(self.count) * self.max_nodes + np.minimum(nodes, self.max_nodes - 1)
        added = (nodes < self.size) & ~self.in_cover[node]  # padding slots are no nodes
        self.in_cover[node[added]] = True
        src, dst = self.live
        self.live = np.compress(~self.in_cover[src] & ~self.in_cover[dst], self.live, axis=1)
        left = np.bincount(self.episode_of(self.live[1]), minlength=self.count)
        return self.reward(node, added), left == 0

    def reward(self, node: np.ndarray, added: np.ndarray) -> np.ndarray:
        """``(K,)``: minus the nodes each episode added (``added``: whether its ``node`` joined) over its node count."""
        return -added.astype(np.int64) / self.size


class WeightedStart(Protocol):
    """What the weighted batch reads of a :class:`~graphtransfer.tasks.mvc.env.WeightedMVCEnv` whose episode has just begun."""

    weights: np.ndarray
    """``(num_nodes,)`` float64, what each node costs"""
    shown: np.ndarray
    """``(num_nodes,)``, the weights as the features show them"""
    total_weight: float


class WeightedMVCBatch(MVCBatch):
    """:class:`MVCBatch` whose nodes cost their weights: each node's weight and shown weight, and
    each episode's total, as its env set them at the episode's start."""

    def __init__(self, envs):
        super().__init__(envs)
        self.weights = np.zeros(self.count * self.max_nodes)
        self.shown = np.zeros(self.count * self.max_nodes)
        self.total_weight = np.ones(self.count)

    def start(self, which: np.ndarray) -> None:
        super().start(which)
        for index in np.flatnonzero(which).tolist():
            env, slot = cast(WeightedStart, self.envs[index]), self.slot(index)
            real = slice(slot.start, slot.start + int(self.size[index]))
            self.weights[slot] = self.shown[slot] = 0.0
            self.weights[real], self.shown[real] = env.weights, env.shown
            self.total_weight[index] = max(env.total_weight, 1.0)

    def features(self, nodes: np.ndarray, draw: np.ndarray) -> np.ndarray:
        return weighted_cover_features(super().features(nodes, draw), self.degree[nodes], self.shown[nodes])

    def reward(self, node: np.ndarray, added: np.ndarray) -> np.ndarray:
        return -np.where(added, self.weights[node], 0.0) / self.total_weight
