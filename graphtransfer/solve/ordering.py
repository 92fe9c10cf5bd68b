"""The graph a policy solves in place of the one it was given, and the way back.

Two changes, both undone in the answer, so callers never see them. MIS and MVC graphs are first
shrunk to their kernel by exact rules (:mod:`graphtransfer.tasks.mis.kernel`; the decoding's
``reductions``): the policy solves the kernel and its solution is lifted back to the given graph. Large graphs of tasks
that depend on their edges alone (MIS, MVC) are then solved renumbered in locality order
(:mod:`graphtransfer.graphs.ordering`); the solution comes back in the graph's own order. A
renumbered run is as good as another seed's: the env's random features and the decoding's ties
follow node numbers, so its set differs from the given order's by about as much as two seeds' do
(``bench/node_order.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from graphtransfer.config import NODE_ORDERS, RENUMBER_FROM_NODES, RunConfig
from graphtransfer.envs.transforms import KernelRule, MISKernel
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph
from graphtransfer.graphs.ordering import better_order, renumbered
from graphtransfer.solve.inference import Solution
from graphtransfer.solve.memory import check_memory
from graphtransfer.tasks.factory import graph_kernel, renumberable


@dataclass(frozen=True)
class SolvingOrder:
    """The graph the policy runs on and how its nodes map back to the given graph."""

    graph: Graph
    order: np.ndarray | None = None
    """``(num_nodes,)`` int64: ``order[k]`` is the position in the graph before renumbering (the kernel,
    or the given graph) of node ``k``; ``None``: as given"""
    seconds: float = 0.0
    """what the kernel, choosing the order and renumbering took"""
    kernel: MISKernel | None = None
    """the kernel solved in place of the given graph; ``None``: the given graph itself"""
    kernel_seconds: float = 0.0
    """what the kernel's rules took, of :attr:`seconds` (where they ran, also when they decided nothing)"""
    rule: KernelRule | None = None
    """the task's kernel rule where reductions are on (MIS, MVC), for the kernels of the residual graph between passes
    (:mod:`graphtransfer.solve.residual_kernels`); ``None``: reductions off, or a task without one"""

    def restore(self, solution: Solution) -> Solution:
        """``solution`` with its per-node rows (and the finishing rule's) on the given graph, in its
        order, its objective and feasibility the given graph's, and its seconds counting the kernel's
        and the renumbering's."""
        finished = solution.finished
        if finished is not None:
            finished = replace(finished, solution=self.given_rows(finished.solution))
        rows = self.given_rows(solution.solution)
        objective, feasible = solution.objective, solution.feasible
        if self.kernel is not None:
            objective, feasible = self.kernel.measure(rows)
        return replace(
            solution,
            solution=rows,
            objective=objective,
            feasible=feasible,
            finished=finished,
            seconds=solution.seconds + self.seconds,
            renumbered=self.order is not None,
            reduced=0 if self.kernel is None else self.kernel.decided,
            reduced_seconds=self.kernel_seconds,
        )

    def given_rows(self, rows: np.ndarray) -> np.ndarray:
        """Rows of the graph solved as rows of the given graph."""
        if self.order is not None:
            given = np.empty_like(rows)
            given[self.order] = rows
            rows = given
        return rows if self.kernel is None else self.kernel.lift(rows)


def solving_order(config: RunConfig, graph: Graph, node_order: str = "auto", reductions: bool = True) -> SolvingOrder:
    """The graph the policy of ``config`` solves for ``graph``: with ``reductions``, where the task
    has a kernel (MIS, MVC), the kernel when its rules decide any node, else the graph itself; its nodes
    numbered, under ``auto``, where the task allows it and the graph solved has at least
    :data:`RENUMBER_FROM_NODES` nodes, in the locality order of
    :func:`~graphtransfer.graphs.ordering.better_order` when that shortens its edges enough (meshes,
    geometric graphs in random order), else as given. The memory guard checks first that the solve,
    these copies included, fits (:func:`~graphtransfer.solve.memory.check_memory`)."""
    if node_order not in NODE_ORDERS:
        raise UsageError(f"node order {node_order!r}; choose one of {', '.join(NODE_ORDERS)}")
    rule = graph_kernel(config) if reductions else None
    may_renumber = node_order == "auto" and graph.num_nodes >= RENUMBER_FROM_NODES and renumberable(config)
    if rule is not None or may_renumber:  # refused before its copies are made, not only once they are
        check_memory(graph.num_nodes, graph.edge_index.shape[1], config.model, f"graph {graph.name}", prepared=True)
    started = time.perf_counter()
    kernel = rule(graph) if rule is not None else None
    kernel_seconds = time.perf_counter() - started if rule is not None else 0.0
    solved = graph if kernel is None else kernel.graph
    order = None
    if may_renumber and solved.num_nodes >= RENUMBER_FROM_NODES:
        order = better_order(solved)
    if order is not None:
        solved = renumbered(solved, order)
    if solved is not graph:  # the kernel's rules read the given graph's CSR; the solve reads the graph solved
        graph.forget_csr()
    return SolvingOrder(solved, order, time.perf_counter() - started, kernel, kernel_seconds, rule)
