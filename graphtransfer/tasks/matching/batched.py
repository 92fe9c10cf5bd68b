"""K matching episodes stepped as one disjoint union (:class:`~graphtransfer.envs.batched.UnionBatch`):
every rule reads an edge's endpoints and their edges only, so the prices
(:func:`~graphtransfer.tasks.matching.step.live_prices`), the features and the step
(:func:`~graphtransfer.tasks.matching.step.match_step`) run once over the union's live edges.

Episode ``i``'s directed edge ``e`` is union edge ``i * max_edges + e``: sorted union ids are the
episodes' live edges in episode order, each episode's in its graph's order, as the observation
columns them. One part loops over the episodes: each reward sums the weights that joined with
numpy's own ``sum``, one episode at a time, since the env sums its float32 weights pairwise and no
segmented numpy sum (``add.reduceat``, ``bincount``) adds them in that order."""

from __future__ import annotations

from typing import Protocol, cast

import numpy as np

from graphtransfer.envs.batched import Observation, UnionBatch
from graphtransfer.envs.contract import EDGE_ATTR
from graphtransfer.envs.edge_rows import edge_columns, write_edge_values
from graphtransfer.graphs import Graph
from graphtransfer.tasks.matching.step import WAIT, live_prices, match_step, matching_edge_features, matching_features, weight_scale


class MatchingStart(Protocol):
    """What the batch reads of a :class:`~graphtransfer.tasks.matching.env.MatchingEnv` whose episode has just begun."""

    graph: Graph
    priority: str
    weights: np.ndarray
    """``(2|E|,)``, each directed edge's weight: float32 hashed, or a file's own float64"""
    twin: np.ndarray
    """``(2|E|,)``, each edge's other direction"""
    scale: float
    """the graph's mean edge weight"""


class MatchingBatch(UnionBatch):
    """The union's state: every union edge's ends, weight and twin (set as an episode begins, from
    its env), each node's mate (a union node, -1 while unmatched), the live edges, and the gains of the
    last observation."""

    def __init__(self, envs):
        super().__init__(envs)
        slots = self.count * self.max_edges
        self.ends = np.zeros((2, slots), dtype=np.int64)
        self.weights = np.zeros(slots)
        """every graph's weights in float64, exactly (a file's own are float64, hashed ones float32)"""
        self.dtypes: list[np.dtype] = [self.weights.dtype] * self.count
        """each episode's graph's weight dtype, which its env sums and divides in"""
        self.divisor = np.ones(self.count)
        """each episode's mean weight in its weights' dtype (:func:`~graphtransfer.tasks.matching.step.weight_scale`)"""
        self.twin = np.arange(slots)
        self.by_gain = np.zeros(slots, dtype=bool)
        """each union edge's episode ranks by gain (the env's ``priority="gain"``), else by weight"""
        self.scale = np.ones(self.count)
        self.mate = np.full(self.count * self.max_nodes, -1, dtype=np.int64)
        self.live = np.zeros(0, dtype=np.int64)
        self.gain = np.full(slots, -np.inf)
        """each union edge's gain as the last observation of its episode showed it (the step ranks live edges by it)"""

    def edge_slot(self, index: int, count: int) -> slice:
        """Episode ``index``'s first ``count`` union edges."""
        return slice(index * self.max_edges, index * self.max_edges + count)

    def edge_episode(self, edges: np.ndarray) -> np.ndarray:
        """The episode each union edge belongs to."""
        return edges // self.max_edges

    def start(self, which: np.ndarray) -> None:
        super().start(which)
        starting = [self.live[~which[self.edge_episode(self.live)]]]
        for index in np.flatnonzero(which).tolist():
            env = cast(MatchingStart, self.envs[index])
            edges = self.edge_slot(index, env.graph.edge_index.shape[1])
            self.ends[:, edges] = env.graph.edge_index + index * self.max_nodes
            self.weights[edges], self.twin[edges] = env.weights, env.twin + edges.start
            self.by_gain[edges] = env.priority == "gain"
            self.scale[index] = env.scale
            self.dtypes[index] = env.weights.dtype
            self.divisor[index] = weight_scale(env.scale, env.weights)
            self.mate[self.slot(index)] = -1
            starting.append(np.arange(edges.start, edges.stop))
        self.live = np.sort(np.concatenate(starting))

    def observe(self, which: np.ndarray, out: Observation) -> None:
        live = self.live if which.all() else self.live[which[self.edge_episode(self.live)]]
        heaviest, gain, best_gain = live_prices(self.ends, self.mate.size, self.weights, self.twin, live)
        self.gain[live] = gain
        edges, episode, nodes = self.ends[:, live], self.edge_episode(live), self.nodes_of(which)
        node_scale = np.repeat(self.scale, self.max_nodes)
        self.write_nodes("x", matching_features(edges, self.mate, heaviest, node_scale)[nodes], which, out)
        self.write_structure(edges, which, out)
        features = matching_edge_features(edges, self.weights[live], gain, heaviest, best_gain, self.scale[episode], self.divisor[episode])
        write_edge_values(EDGE_ATTR, features, episode, which, out)

    def apply(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        episode = self.edge_episode(self.live)
        picked = np.full(self.weights.size, WAIT, dtype=np.int64)
        picked[self.live] = np.asarray(actions).reshape(self.count, self.max_edges)[episode, edge_columns(episode, self.count)]
        gain = np.full(self.weights.size, -np.inf)
        gain[self.live] = self.gain[self.live]
        priority = np.where(self.by_gain, gain, self.weights)
        joining, self.live = match_step(self.ends, priority, self.twin, self.live, picked, self.mate)
        left = np.bincount(self.edge_episode(self.live), minlength=self.count)
        return self.joined_weight(joining) / 2 / self.size, left == 0

    def joined_weight(self, joining: np.ndarray) -> np.ndarray:
        """``(K,)``: each episode's summed weight of the ``joining`` edges (both directions), added
        in the env's order (its joined edges, then their twins) by the env's own sum, in its dtype."""
        episode = self.edge_episode(joining)
        order = np.argsort(episode, kind="stable")
        counts = np.bincount(episode, minlength=self.count)
        parts = np.split(self.weights[joining[order]], np.cumsum(counts)[:-1])
        return np.array([float(part.astype(dtype).sum()) for part, dtype in zip(parts, self.dtypes, strict=True)])
