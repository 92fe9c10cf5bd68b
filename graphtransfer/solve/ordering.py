"""The order a policy numbers a graph's nodes in while it solves it, and the way back.

Large graphs of tasks that depend on their edges alone (MIS, MVC) are solved renumbered in
locality order (:mod:`graphtransfer.graphs.ordering`); the solution comes back in the graph's own
order, so callers never see the renumbering. A renumbered run is as good as another seed's: the
env's random features and the decoding's ties follow node numbers, so its set differs from the
given order's by about as much as two seeds' do (bench/RESULTS.md, "Node order").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from graphtransfer.config import NODE_ORDERS, RENUMBER_FROM_NODES, RunConfig
from graphtransfer.envs.factory import renumberable
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph
from graphtransfer.graphs.ordering import better_order, renumbered
from graphtransfer.solve.inference import Solution


@dataclass(frozen=True)
class SolvingOrder:
    """The graph the policy runs on and how its nodes map back to the graph's own order."""

    graph: Graph
    order: np.ndarray | None = None
    """``(num_nodes,)`` int64: ``order[k]`` is the position in the given graph of node ``k``; ``None``: as given"""
    seconds: float = 0.0
    """what choosing the order and renumbering took"""

    def restore(self, solution: Solution) -> Solution:
        """``solution`` with its per-node rows (and the finishing rule's) in the given graph's order,
        and its seconds counting the renumbering's."""
        if self.order is None:
            return replace(solution, seconds=solution.seconds + self.seconds)
        finished = solution.finished
        if finished is not None:
            finished = replace(finished, solution=self._given(finished.solution))
        rows = self._given(solution.solution)
        return replace(solution, solution=rows, finished=finished, seconds=solution.seconds + self.seconds, renumbered=True)

    def _given(self, rows: np.ndarray) -> np.ndarray:
        given = np.empty_like(rows)
        given[self.order] = rows
        return given


def solving_order(config: RunConfig, graph: Graph, node_order: str = "auto") -> SolvingOrder:
    """How the policy of ``config`` numbers ``graph``'s nodes: under ``auto``, where the task allows
    it and the graph has at least :data:`RENUMBER_FROM_NODES` nodes, in the locality order of
    :func:`~graphtransfer.graphs.ordering.better_order` when that shortens its edges enough (meshes,
    geometric graphs in random order), else as given."""
    if node_order not in NODE_ORDERS:
        raise UsageError(f"node order {node_order!r}; choose one of {', '.join(NODE_ORDERS)}")
    if node_order == "given" or graph.num_nodes < RENUMBER_FROM_NODES or not renumberable(config):
        return SolvingOrder(graph)
    started = time.perf_counter()
    order = better_order(graph)
    if order is None:
        return SolvingOrder(graph, seconds=time.perf_counter() - started)
    return SolvingOrder(renumbered(graph, order), order, time.perf_counter() - started)
