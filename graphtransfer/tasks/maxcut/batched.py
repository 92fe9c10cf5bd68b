"""K max-cut episodes stepped as one disjoint union (:class:`~graphtransfer.envs.batched.UnionBatch`):
a node's features and its flip read its own edges only, so :func:`~graphtransfer.tasks.maxcut.step.cut_features`
and :func:`~graphtransfer.tasks.maxcut.step.flipped` run once over the union, and each episode's
reward is the change in its count of cut edges, counted by episode. The random starting cut is
the env's own (drawn as its episode begins)."""

from __future__ import annotations

from typing import Protocol, cast

import numpy as np

from graphtransfer.envs.batched import Observation, UnionBatch
from graphtransfer.graphs import Graph
from graphtransfer.tasks.maxcut.step import cut_features, flipped, side_counts


class CutStart(Protocol):
    """What the batch reads of a :class:`~graphtransfer.tasks.maxcut.env.MaxCutEnv` whose episode has just begun."""

    graph: Graph
    side: np.ndarray
    """``(num_nodes,)`` int8, the random starting cut"""


class MaxCutBatch(UnionBatch):
    """The union's state: each node's side (padding nodes on side 0, never flipped) and the
    episodes' edges, which a cut never changes."""

    def __init__(self, envs):
        super().__init__(envs)
        self.side = np.zeros(self.count * self.max_nodes, dtype=np.int8)
        self.edges = np.zeros((2, 0), dtype=np.int64)
        self.undirected = np.ones(self.count, dtype=np.int64)
        """each episode's undirected edge count, at least 1 (the reward's scale)"""
        self.cut = np.zeros(self.count, dtype=np.int64)
        """each episode's cut edges now: the next reward's baseline, counted once per step rather than before and after"""

    def start(self, which: np.ndarray) -> None:
        super().start(which)
        for index in np.flatnonzero(which).tolist():
            env = cast(CutStart, self.envs[index])
            slot = self.slot(index)
            self.side[slot] = 0
            self.side[slot.start : slot.start + env.graph.num_nodes] = env.side
            self.undirected[index] = max(env.graph.num_edges, 1)
        self.edges = self.replace_edges(self.edges, which)
        self.cut = self.cut_edges()

    def observe(self, which: np.ndarray, out: Observation) -> None:
        edges, nodes = self.edges_of(self.edges, which), self.nodes_of(which)
        degree, same = side_counts(edges, self.side)
        self.write_nodes("x", cut_features(self.side[nodes], degree[nodes], same[nodes], self.draws(which)), which, out)
        self.write_structure(edges, which, out)

    def apply(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.side = flipped(self.side, actions.reshape(-1) * self.real)
        before, self.cut = self.cut, self.cut_edges()
        return (self.cut - before) / self.undirected, np.zeros(self.count, dtype=bool)

    def cut_edges(self) -> np.ndarray:
        """``(K,)``: each episode's undirected edges between the two sides."""
        src, dst = self.edges
        return np.bincount(self.episode_of(src[self.side[src] != self.side[dst]]), minlength=self.count) // 2
