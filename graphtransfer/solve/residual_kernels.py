"""The kernel again between passes: MIS and MVC decodings that shrink what is left by the exact rules.

The kernel's rules (:mod:`graphtransfer.tasks.mis.kernel`) run once on the given graph before the
policy (:mod:`graphtransfer.solve.ordering`); MIS's passes then apply the rules that fit a pass
(isolated nodes join, dominated nodes leave) but not the ones that change the graph (a node of
degree 2 folded with its neighbours, the LP's crowns). Yet every pass leaves a residual graph of
lower degrees, where those rules find much to decide. So every ``kernel_every`` passes the graph
still undecided (MIS: the undecided nodes; MVC: the nodes with uncovered edges, the env's
``active_nodes``) is shrunk to its kernel and the policy goes on there; at the end each level's
set (cover) is lifted back through the kernels it came from.

A stretch of passes also ends early, after any of its passes, once at least
:data:`EARLY_KERNEL_SHARE` of the nodes still undecided have at most two neighbours left (the nodes
that the kernel's pendant, degree-2 and fold rules decide): on Barabási–Albert graphs with ``m = 3``
the first pass or two leave such a residual graph, which the kernel then decides whole.

The kernels between passes leave out the LP's rule (crowns and bipartite components, rule 5 of
:mod:`graphtransfer.tasks.mis.kernel`; the kernel before the first pass keeps it): run in the 358
kernels between the passes of the default decoding on six graphs without triangles of 10^3-2.5 x
10^5 nodes (Erdős–Rényi, Barabási–Albert, the demo's graph), it decided no node, and took 13-20% of
the seconds of the solve on the Erdős–Rényi ones (1.19 of 5.9 s at 10^5 nodes of degree 8).

Each kernel is exact for the residual graph it was taken of, and that graph is all that is left
to decide (MIS: its nodes have no neighbour in the set so far; MVC: its edges are the uncovered
ones), so the lifted set is independent (the cover covers), and maximal (minimal) where the last
level's is. Measured with the built-in models (``bench/default_quality.py``):
MIS sets larger on 32 of 55 graphs of 10^3-10^5 nodes and smaller on 3, Erdős–Rényi graphs of
average degree 8 +0.4-0.6% at 10^4-10^5 nodes and +0.8% at 10^6 and 10^7; MVC covers smaller on
13 of 13.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import cast

import gymnasium as gym
import numpy as np

from graphtransfer.config import Decoding
from graphtransfer.envs.base import GraphEnv
from graphtransfer.envs.transforms import KernelLift, KernelRule
from graphtransfer.graphs import Graph
from graphtransfer.graphs.graph import induced_subgraph
from graphtransfer.solve.inference import Solution, solve

EARLY_KERNEL_SHARE = 0.15
"""a stretch of passes ends before ``kernel_every`` once this share of the undecided nodes has at most two undecided
neighbours (MVC: uncovered edges). On 55 graphs of 10^3-10^5 nodes (11 families) it changed no set; on Barabási–Albert
graphs with ``m = 3`` of 10^6 nodes the set went from 2 nodes below min-degree greedy's to 47 above, the kernel taken
after 2 passes instead of 4 (``bench/default_quality.py``)"""


@dataclass(frozen=True)
class Level:
    """One stretch of passes: the set (MVC: the cover) it ended with and where its graph came from."""

    kernel: KernelLift | None
    """how its graph, a kernel of the residual graph of the level before, lifts to that graph (the kernel's edges are not
    kept: :class:`~graphtransfer.tasks.mis.kernel.KernelLift`); ``None``: that residual graph itself, or the first level"""
    chosen: np.ndarray
    """``(n,)`` bool, the env's solution on its graph when its passes ended: the set (MVC: the cover)"""
    undecided: np.ndarray
    """``(u,)`` int64, its graph's nodes still undecided then: the next level's residual graph, in this order"""

    def before_kernel(self, chosen: np.ndarray) -> np.ndarray:
        """A set on this level's graph as a set on the residual graph it is the kernel of (itself without a kernel)."""
        return chosen if self.kernel is None else self.kernel.lift(chosen)


def solve_in_kernels(policy, env: gym.Env, one: Decoding, kernel: KernelRule, finish=None, patience: float = 1.0) -> Solution:
    """One rollout of :func:`~graphtransfer.solve.inference.solve` on the env's graph, the residual
    graph shrunk to its kernel by ``kernel`` every ``one.kernel_every`` passes (sooner where it is
    due, :func:`kernel_due`) and the env pointed at that kernel
    (:meth:`~graphtransfer.envs.base.GraphEnv.use_graph`: a kernel of a residual graph never has
    more nodes or edges than the graph). The passes in all stop at the env's
    horizon; the set is lifted as the last pass left it, and ``finish`` is then called on the env's
    graph with the nodes neither in the set nor beside it as undecided (none, unless the pass
    limit came first). The env is pointed back at its graph before this returns.

    Returns the set on the env's graph, with the passes and seconds of every level.
    """
    started = time.perf_counter()
    task = cast(GraphEnv, env.unwrapped)
    graph, horizon = task.graph, task.horizon
    levels: list[Level] = []
    lift: KernelLift | None = None
    passes = 0
    try:
        while True:
            task.horizon = min(one.kernel_every, horizon - passes)
            run = solve(
                policy, env, one.deterministic, one.seed, one.commit_fraction, None, one.method, patience, one.reductions, until=kernel_due
            )
            passes += run.passes
            residual, undecided = residual_graph(task)
            levels.append(Level(lift, task.solution(), undecided))
            if not undecided.size or passes >= horizon:
                break
            made = kernel(residual, lp=False)  # the LP's rule decided no node between passes where measured (module docstring)
            task.use_graph(residual if made is None else made.graph)
            lift = None if made is None else made.lifting
            del residual, made  # the env holds the graph it runs on; the residual graph a kernel came from goes now
    finally:
        task.use_graph(graph)
        task.horizon = horizon
    chosen, finished = lifted(levels), None
    if finish is not None:  # MIS's rule, as solve calls it: the nodes left free, none unless the pass limit came first
        free = ~chosen
        free[graph.edge_index[0][chosen[graph.edge_index[1]]]] = False
        finished = finish(graph, chosen, free)
        chosen = finished.solution
    objective, feasible = task.objective(graph, chosen), task.feasible(graph, chosen)
    return replace(
        run,
        solution=chosen,
        objective=objective,
        feasible=feasible,
        passes=passes,
        seconds=time.perf_counter() - started,
        finished=finished,
        kernels=sum(level.kernel is not None for level in levels),
    )


def residual_graph(task: GraphEnv) -> tuple[Graph, np.ndarray]:
    """The graph still undecided in the env: its active nodes, renumbered in order, and the edges
    its last observation showed between them, in that order; and those nodes' positions ``(u,)``.
    Cut (:func:`~graphtransfer.graphs.graph.induced_subgraph`) from the observed edges, the residual
    graph's own, rather than from every edge of the env's graph; and MIS's come ordered by
    destination, which the kernel's adjacency and the next level's env then read without a sort
    (:meth:`~graphtransfer.graphs.Graph.csr`). A graph with edge or node weights is cut from the
    env's graph, weights kept."""
    graph = task.graph
    if graph.edge_weight is None and graph.node_weight is None:
        graph = replace(graph, edge_index=task.observed_edges())
    return induced_subgraph(graph, task.active_nodes())


def kernel_due(undecided, degree) -> bool:
    """Whether the kernel has much to decide in a residual graph (:data:`~graphtransfer.nn.local_max.Until`): at
    least :data:`EARLY_KERNEL_SHARE` of its ``undecided`` nodes have a ``degree`` of at most two (numpy arrays or
    torch tensors alike)."""
    left = int(undecided.sum())
    return left > 0 and int((undecided & (degree <= 2)).sum()) >= EARLY_KERNEL_SHARE * left


def lifted(levels: list[Level]) -> np.ndarray:
    """The first level's graph's set: each level's set taken into the residual graph of the level
    before (through its kernel where it has one) and added to that level's set, last level first."""
    chosen = levels[-1].before_kernel(levels[-1].chosen)
    for level in reversed(levels[:-1]):
        here = level.chosen.copy()
        here[level.undecided[chosen]] = True
        chosen = level.before_kernel(here)
    return chosen
