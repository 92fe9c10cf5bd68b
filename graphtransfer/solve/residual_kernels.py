"""The kernel again between passes: MIS and MVC decodings that shrink what is left by the exact rules.

The kernel's rules (:mod:`graphtransfer.envs.mis_kernel`) run once on the given graph before the
policy (:mod:`graphtransfer.solve.ordering`); MIS's passes then apply the rules that fit a pass
(isolated nodes join, dominated nodes leave) but not the ones that change the graph (a node of
degree 2 folded with its neighbours, the LP's crowns). Yet every pass leaves a residual graph of
lower degrees, where those rules find much to decide. So every ``kernel_every`` passes the graph
still undecided (MIS: the undecided nodes; MVC: the nodes with uncovered edges, the env's
``active_nodes``) is shrunk to its kernel and the policy goes on there; at the end each level's
set (cover) is lifted back through the kernels it came from.

Each kernel is exact for the residual graph it was taken of, and that graph is all that is left
to decide (MIS: its nodes have no neighbour in the set so far; MVC: its edges are the uncovered
ones), so the lifted set is independent (the cover covers), and maximal (minimal) where the last
level's is. Measured with the built-in models (bench/RESULTS.md, "The kernel between passes"):
MIS sets larger on 32 of 55 graphs of 10^3-10^5 nodes and smaller on 3, Erdős–Rényi graphs of
average degree 8 +0.4-0.6% at 10^4-10^5 nodes and +0.8% at 10^6 and 10^7; MVC covers smaller on
13 of 13.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import cast

import gymnasium as gym
import numpy as np

from graphtransfer.config import Decoding
from graphtransfer.envs.base import GraphEnv
from graphtransfer.envs.mis_kernel import MISKernel
from graphtransfer.graphs import Graph
from graphtransfer.graphs.graph import induced_subgraph
from graphtransfer.solve.inference import Solution, solve

KernelRule = Callable[[Graph], MISKernel | None]


@dataclass(frozen=True)
class Level:
    """One stretch of passes: the set (MVC: the cover) it ended with and where its graph came from."""

    kernel: MISKernel | None
    """the kernel its graph is (of the residual graph of the level before); ``None``: that residual graph itself, or the first level"""
    chosen: np.ndarray
    """``(n,)`` bool, the env's solution on its graph when its passes ended: the set (MVC: the cover)"""
    undecided: np.ndarray
    """``(u,)`` int64, its graph's nodes still undecided then: the next level's residual graph, in this order"""

    def before_kernel(self, chosen: np.ndarray) -> np.ndarray:
        """A set on this level's graph as a set on the residual graph it is the kernel of (itself without a kernel)."""
        return chosen if self.kernel is None else self.kernel.lift(chosen)


def solve_in_kernels(policy, env: gym.Env, one: Decoding, kernel: KernelRule, finish=None, patience: float = 1.0) -> Solution:
    """One rollout of :func:`~graphtransfer.solve.inference.solve` on the env's graph, the residual
    graph shrunk to its kernel by ``kernel`` every ``one.kernel_every`` passes and the env pointed
    at that kernel (:meth:`~graphtransfer.envs.base.GraphEnv.use_graph`: a kernel of a residual
    graph never has more nodes or edges than the graph). The passes in all stop at the env's
    horizon; the set is lifted as the last pass left it, and ``finish`` is then called on the env's
    graph with the nodes neither in the set nor beside it as undecided (none, unless the pass
    limit came first). The env is pointed back at its graph before this returns.

    Returns the set on the env's graph, with the passes and seconds of every level.
    """
    started = time.perf_counter()
    task = cast(GraphEnv, env.unwrapped)
    graph, horizon = task.graph, task.horizon
    levels: list[Level] = []
    current, made, passes = graph, None, 0
    try:
        while True:
            task.horizon = min(one.kernel_every, horizon - passes)
            run = solve(policy, env, one.deterministic, one.seed, one.commit_fraction, None, one.method, patience, one.reductions)
            passes += run.passes
            residual, undecided = induced_subgraph(current, task.active_nodes())
            levels.append(Level(made, task.solution(), undecided))
            if not undecided.size or passes >= horizon:
                break
            made = kernel(residual)
            current = residual if made is None else made.graph
            task.use_graph(current)
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


def lifted(levels: list[Level]) -> np.ndarray:
    """The first level's graph's set: each level's set taken into the residual graph of the level
    before (through its kernel where it has one) and added to that level's set, last level first."""
    chosen = levels[-1].before_kernel(levels[-1].chosen)
    for level in reversed(levels[:-1]):
        here = level.chosen.copy()
        here[level.undecided[chosen]] = True
        chosen = level.before_kernel(here)
    return chosen
