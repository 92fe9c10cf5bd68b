"""Search after the policy (``predict --polish SECONDS``): the iterated local search of
:mod:`graphtransfer.baselines.local_search` started from the policy's solution and run for the
seconds given. Perturbations drawn by the policy's confidence in each node were tried and found no
larger sets at equal seconds (bench/RESULTS.md, "Adaptation and policy-guided search")."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphtransfer.baselines.local_search import iterated_local_search
from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.config import RunConfig
from graphtransfer.config.schema import check_budget_seconds
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, resolve
from graphtransfer.io import check_output_file
from graphtransfer.solve.inference import Solution
from graphtransfer.solve.predict import predict, write_solution

POLISH_TASKS = ("mis", "mvc")
"""the tasks whose solutions ``--polish`` searches from (a set, or a cover as its complement)"""

"""a week: a longer search is taken for a typing mistake"""


@dataclass(frozen=True)
class Polished:
    """A solution after the search.

    Attributes:
        solution: ``(num_nodes,)`` bool, a maximal independent set (mis) or minimal vertex cover (mvc).
        objective: its size.
        seconds: the search's time.
        iterations: perturbations tried.
    """

    solution: np.ndarray
    objective: float
    seconds: float
    iterations: int


def check_polish_seconds(seconds: object) -> float:
    """``seconds`` of polish: a positive finite number, at most a week."""
    return check_budget_seconds(seconds, "polish", 10)


def check_polish_task(config: RunConfig) -> str:
    """The model's task, where ``--polish`` has a search for it (:data:`POLISH_TASKS`)."""
    if config.env is not None or config.task not in POLISH_TASKS:
        raise UsageError(f"--polish searches mis and mvc solutions; a model of {config.name} has no such search, drop --polish")
    return config.task


def polish(task: str, graph: Graph, solution: np.ndarray, seconds: float, seed: int = 0) -> Polished:
    """``solution`` improved by the iterated local search for ``seconds`` (the whole budget: no
    early stop), never worse. MIS searches from the set; MVC from the cover's complement, and
    returns the complement of the set it finds."""
    if task not in POLISH_TASKS:
        raise UsageError(f"--polish searches mis and mvc solutions; task {task} has no such search, drop --polish")
    seconds = check_polish_seconds(seconds)
    started = time.perf_counter()
    start = solution.astype(bool) if task == "mis" else ~solution.astype(bool)
    result = iterated_local_search(graph, start=start, time_budget=seconds, seed=seed)
    found = result.solution if task == "mis" else ~result.solution
    return Polished(found, float(found.sum()), time.perf_counter() - started, result.iterations)


def predict_polished(
    model: str | Path,
    graph: str | Path | Graph,
    out: str | Path,
    seconds: float,
    seed: int = 0,
    env: str | None = None,
    force: bool = False,
    **options,
) -> tuple[Graph, Solution, Polished]:
    """:func:`graphtransfer.solve.predict.predict` (``options`` are its own), then :func:`polish`
    of its solution for ``seconds``; the polished solution is what ``out`` gets. Returns the
    graph, the policy's own solution (reported beside the search's, never instead of it) and the
    polished one. Bad input (a task without a search, a bad budget, an ``out`` that may not be
    written) is refused before the policy runs."""
    seconds = check_polish_seconds(seconds)
    checkpoint = read_checkpoint(model, env)
    task = check_polish_task(checkpoint.config)
    check_output_file(Path(out), [] if isinstance(graph, Graph) else [resolve(graph)], force)
    loaded, solution = predict(checkpoint.folder, graph, None, seed=seed, env=env, **options)
    polished = polish(task, loaded, solution.solution, seconds, seed)
    write_solution(out, polished.solution, "node,decision", loaded.ids())
    return loaded, solution, polished
