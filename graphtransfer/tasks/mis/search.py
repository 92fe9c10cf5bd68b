"""MIS's searches as its env declares them: predict's ``--polish`` from the policy's set (MVC: from
its cover's complement) and the sets that learning from a search imitates."""

from __future__ import annotations

from typing import Literal

import numpy as np

from graphtransfer.envs.transforms import MISKernel
from graphtransfer.graphs import Graph
from graphtransfer.tasks.mis.local_search import iterated_local_search, reduced_search, search_on_kernel


def search_set(
    graph: Graph, solution: np.ndarray, seconds: float, seed: int = 0, kernel: MISKernel | None | Literal["make"] = "make"
) -> tuple[np.ndarray, int]:
    """The iterated local search from the set ``solution`` for ``seconds`` (the whole budget: no
    early stop), never worse: on ``kernel`` (None where the rules decided nothing), or on the
    kernel made here (``"make"``). Returns the set and the perturbations tried."""
    start = solution.astype(bool)
    if isinstance(kernel, str):  # "make"
        result = reduced_search(graph, start=start, time_budget=seconds, seed=seed, stall_per_node=None)
    else:
        result = search_on_kernel(graph, kernel, start=start, time_budget=seconds, seed=seed, stall_per_node=None)
    return result.solution, result.iterations


def search_cover(
    graph: Graph, solution: np.ndarray, seconds: float, seed: int = 0, kernel: MISKernel | None | Literal["make"] = "make"
) -> tuple[np.ndarray, int]:
    """:func:`search_set` from the cover's complement; the complement of the set it finds."""
    found, iterations = search_set(graph, ~solution.astype(bool), seconds, seed, kernel)
    return ~found, iterations


def teacher_set(graph: Graph, iterations: int, seed: int = 0) -> np.ndarray:
    """The set a fixed number of iterations of the search finds (no clock: reproducible)."""
    return iterated_local_search(graph, None, time_budget=1e12, max_iterations=iterations, seed=seed).solution
