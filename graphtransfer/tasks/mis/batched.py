"""K MIS episodes stepped as one disjoint union (:class:`~graphtransfer.envs.batched.UnionBatch`):
the rules of :class:`~graphtransfer.tasks.mis.env.MISEnv` read a node's neighbours only, so one
:func:`~graphtransfer.tasks.mis.env.mis_step` over the union's residual edges steps every episode,
and the features of every episode's nodes come from one pass over them."""

from __future__ import annotations

import numpy as np

from graphtransfer.envs.batched import Observation, UnionBatch
from graphtransfer.graphs import Graph
from graphtransfer.tasks.mis.constants import IN_SET, OUT, UNDECIDED
from graphtransfer.tasks.mis.features import caro_wei_cost, node_features
from graphtransfer.tasks.mis.step import by_destination, mis_step


class MISBatch(UnionBatch):
    """The union's state: each node's status (padding nodes :data:`OUT`, decided for good) and
    the residual edges, between undecided nodes, filtered from the last observation's as the env
    filters them (each episode's ordered by destination)."""

    def __init__(self, envs):
        super().__init__(envs)
        self.status = np.full(self.count * self.max_nodes, OUT, dtype=np.int8)
        self.live = np.zeros((2, 0), dtype=np.int64)

    def episode_edges(self, graph: Graph) -> np.ndarray:
        return by_destination(graph)

    def start(self, which: np.ndarray) -> None:
        super().start(which)
        starting = np.repeat(which, self.max_nodes)
        self.status[starting] = np.where(self.real[starting], UNDECIDED, OUT)
        self.live = self.replace_edges(self.live, which)

    def observe(self, which: np.ndarray, out: Observation) -> None:
        undecided = self.status == UNDECIDED
        src, dst = self.live
        kept = undecided[src] & undecided[dst]
        if not kept.all():
            self.live = np.compress(kept, self.live, axis=1)
        edges, nodes = self.edges_of(self.live, which), self.nodes_of(which)
        degree = np.bincount(edges[1], minlength=self.status.size)
        cost = caro_wei_cost(edges, degree)
        self.write_nodes("x", node_features(self.status[nodes], degree[nodes], cost[nodes], self.draws(which)), which, out)
        self.write_structure(edges, which, out)

    def apply(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        before = self.status
        self.status, _ = mis_step(self.live, before, actions.reshape(-1))
        joined = self.per_episode((self.status == IN_SET) & (before != IN_SET))
        finished = ~(self.status == UNDECIDED).reshape(self.count, self.max_nodes).any(axis=1)
        return joined / self.size, finished
