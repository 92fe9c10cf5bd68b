"""MIS's searches as its env declares them: predict's ``--polish`` from the policy's set (MVC: from
its cover's complement) and the sets that learning from a search imitates."""

from __future__ import annotations

import time
from typing import Literal

import numpy as np

from graphtransfer.envs.transforms import MISKernel
from graphtransfer.graphs import Graph
from graphtransfer.tasks.mis.kernel import mis_kernel
from graphtransfer.tasks.mis.local_search import iterated_local_search, search_on_kernel

RESTART_STALL_PER_NODE = 40
"""predict's search from a given set restarts from greedy's after this many perturbations per kernel
node without a larger set. Measured on graphs of 4,000 nodes from the built-in model's set, 10 s, seeds
0 and 1: at 10 (eval's stall limit) a random geometric graph of degree 16 reaches 605 / 605 (604 / 604
never restarting; CHILS 605) but an Erdős–Rényi graph of degree 16 loses its late gains, 973 / 972
(977 / 978 never restarting); at 40, 605 / 605 and 977 / 978."""


def search_set(
    graph: Graph, solution: np.ndarray, seconds: float, seed: int = 0, kernel: MISKernel | None | Literal["make"] = "make"
) -> tuple[np.ndarray, int]:
    """The iterated local search from the set ``solution`` for ``seconds`` (the whole budget),
    never worse: on ``kernel`` (None where the rules decided nothing), or on the kernel made here
    within the seconds (``"make"``). When the search from ``solution`` stalls
    (:data:`RESTART_STALL_PER_NODE` perturbations per kernel node without a larger set), the rest of
    the budget searches again from greedy's set and the larger set wins, as eval's ``--polish``
    does: a policy's set can hold the search in a basin greedy's does not (a random geometric graph
    of 4,000 nodes and degree 16: 604 from the built-in model's set, every seed, 605 from greedy's
    and CHILS's). Returns the set and the perturbations tried."""
    started = time.perf_counter()
    if isinstance(kernel, str):  # "make"
        kernel = mis_kernel(graph)
    first = search_on_kernel(graph, kernel, solution.astype(bool), seconds, seed, RESTART_STALL_PER_NODE, started=started)
    left = seconds - (time.perf_counter() - started)
    if left <= 0:
        return first.solution, first.iterations
    again = search_on_kernel(graph, kernel, None, left, seed, stall_per_node=None)
    best = again if again.solution.sum() > first.solution.sum() else first
    return best.solution, first.iterations + again.iterations


def search_cover(
    graph: Graph, solution: np.ndarray, seconds: float, seed: int = 0, kernel: MISKernel | None | Literal["make"] = "make"
) -> tuple[np.ndarray, int]:
    """:func:`search_set` from the cover's complement; the complement of the set it finds."""
    found, iterations = search_set(graph, ~solution.astype(bool), seconds, seed, kernel)
    return ~found, iterations


def teacher_set(graph: Graph, iterations: int, seed: int = 0) -> np.ndarray:
    """The set a fixed number of iterations of the search finds (no clock: reproducible)."""
    return iterated_local_search(graph, None, time_budget=1e12, max_iterations=iterations, seed=seed).solution
