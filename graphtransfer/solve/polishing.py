"""Search after the policy (``predict --polish SECONDS``): the search the model's task declares
(:attr:`graphtransfer.tasks.Task.search`), started from the policy's solution and run for the
seconds given, its result scored by the task's own ``objective``. MIS's is the iterated local
search of :mod:`graphtransfer.tasks.mis.local_search` on the graph's kernel, with uniform
perturbations and its best set merged region by region with its current one; max-cut's the iterated
local search of :mod:`graphtransfer.tasks.maxcut.local_search`; matching's that of
:mod:`graphtransfer.tasks.matching.search`. For MIS, perturbations drawn by the policy's scores
(:func:`~graphtransfer.tasks.mis.local_search.guided_weights`) and the best few rollouts searched
in turn (:func:`policy_starts`) were measured against it and found no larger sets at equal CPU
seconds (``bench/guided_search.py``). So were regions rebuilt by the policy inside the search and
the policy's surest members fixed while the rest is searched (``bench/search_limits.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

import numpy as np
import torch

from graphtransfer.checkpoint import Checkpoint, read_checkpoint
from graphtransfer.config import Decoding, RunConfig, Runtime
from graphtransfer.config.schema import check_budget_seconds
from graphtransfer.envs.protocol import features_of
from graphtransfer.envs.transforms import MISKernel
from graphtransfer.graphs import Graph, load_graph, resolve
from graphtransfer.io import check_output_file
from graphtransfer.nn.local_max import LOGIT_EPS
from graphtransfer.solve.evaluate import finish_rule
from graphtransfer.solve.inference import Solution, active_subgraph, check_decoding, obs_to_tensors
from graphtransfer.solve.loading import DEFAULT_RUNTIME, policy_for_graphs
from graphtransfer.solve.ordering import solving_order
from graphtransfer.solve.predict import predict_graph, write_solution
from graphtransfer.solve.rollouts import DEFAULT_DECODING, rollout_plan, solve_one, taking_turns
from graphtransfer.tasks import Task
from graphtransfer.tasks.factory import task_of


@dataclass(frozen=True)
class Polished:
    """A solution after the search.

    Attributes:
        solution: ``(num_nodes,)`` the search's solution (mis: a maximal independent set; mvc: a
            minimal vertex cover; maxcut: the sides).
        objective: its objective, by the task's own ``objective``.
        seconds: the search's time.
        iterations: the search's steps (mis, mvc: perturbations tried; maxcut: moves).
    """

    solution: np.ndarray
    objective: float
    seconds: float
    iterations: int


@dataclass(frozen=True)
class PolicyStarts:
    """Where a search may start from: the best distinct sets of a policy's rollouts.

    Attributes:
        sets: ``(num_nodes,)`` bool each, feasible, largest first, in the graph's own node order.
        scores: ``(num_nodes,)`` the policy's log-odds of including each node in its first pass
            on the whole graph, or None where not asked for.
    """

    sets: list[np.ndarray]
    scores: np.ndarray | None


def policy_starts(
    checkpoint: Checkpoint, graph: Graph, rollouts: int = 1, seed: int = 0, count: int = 1, scores: bool = False
) -> PolicyStarts:
    """The ``count`` largest distinct feasible sets of ``rollouts`` rollouts of an MIS model's
    policy on ``graph`` (seeds, decodings and the model's experts taking turns as ``predict``'s,
    :func:`rollout_plan`), the policy loaded once; with ``scores``, also its first-pass log-odds per node."""
    order = solving_order(checkpoint.config, graph)
    loaded = policy_for_graphs(checkpoint, [order.graph])
    features = features_of(loaded.env)
    degree = 2 * graph.num_edges / max(graph.num_nodes, 1)
    turns = 1 + len(checkpoint.experts)
    plan = rollout_plan(Decoding(seed=seed), rollouts, check_decoding(loaded.env, features, None), degree, turns)
    finish = finish_rule(checkpoint.config)
    runs = []
    with taking_turns(loaded.policy, checkpoint.experts) as use_weights:
        for index, one in enumerate(plan):
            use_weights(index)
            runs.append(order.restore(solve_one(loaded.policy, loaded.env, one, finish, kernel=order.rule)))
    sets: dict[bytes, np.ndarray] = {}
    for run in sorted((r for r in runs if r.feasible), key=lambda r: -r.objective):
        sets.setdefault(run.solution.astype(bool).tobytes(), run.solution.astype(bool))
    first = None
    if scores:
        commit = features.commit_action
        if commit is None:
            raise ValueError(f"scores are the log-odds of the env's commit action; a {checkpoint.config.name} model's env names none")
        first = _whole_graph_scores(checkpoint, graph, commit, seed)
    return PolicyStarts(list(sets.values())[:count], first)


def _whole_graph_scores(checkpoint: Checkpoint, graph: Graph, commit_action: int, seed: int) -> np.ndarray:
    """:func:`_first_pass_scores` on the whole of ``graph`` (not its kernel), in its own order."""
    order = solving_order(checkpoint.config, graph, reductions=False)
    loaded = policy_for_graphs(checkpoint, [order.graph])
    return order.given_rows(_first_pass_scores(loaded.policy, loaded.env, commit_action, seed))


def _first_pass_scores(policy, env, commit_action: int, seed: int) -> np.ndarray:
    """``(num_nodes,)`` the policy's log-odds of ``commit_action`` for every node of the env's
    graph, before anything is decided."""
    obs, _ = env.reset(seed=seed)
    whole = active_subgraph(obs, np.arange(int(obs["num_nodes"][0])))
    with torch.inference_mode():
        probs = policy.get_distribution(obs_to_tensors(whole, policy.device)).probs[0, :, commit_action]
        return torch.logit(probs, eps=LOGIT_EPS).double().cpu().numpy()


def check_polish_seconds(seconds: object) -> float:
    """``seconds`` of polish: a positive finite number, at most a week."""
    return check_budget_seconds(seconds, "polish", 10)


def check_polish_task(config: RunConfig) -> Task:
    """The model's task, where it declares a ``search`` for ``--polish`` and an ``objective`` to score its result."""
    return check_searchable(task_of(config))


def check_searchable(task: Task) -> Task:
    """``task``, where it declares a ``search`` and an ``objective``; else the one-line refusal."""
    for member in ("search", "objective"):
        if getattr(task, member) is None:
            raise task.refuse("--polish", member)
    return task


def polish(
    task: Task, graph: Graph, solution: np.ndarray, seconds: float, seed: int = 0, kernel: MISKernel | None | Literal["make"] = "make"
) -> Polished:
    """``solution`` improved by the task's declared ``search`` for ``seconds`` (the whole budget: no
    early stop), never worse, and scored by the task's ``objective`` (MIS: the iterated local search
    on the graph's kernel from the set, :func:`graphtransfer.tasks.mis.search.search_set`; MVC from
    the cover's complement; max-cut: the iterated local search from the cut,
    :func:`graphtransfer.tasks.maxcut.local_search.search_cut`). ``kernel``: the graph's MIS kernel
    where the caller has made it (predict's; None where the rules decided nothing); ``"make"``:
    made here, within ``seconds``; a search without kernels does not read it."""
    check_searchable(task)
    search, objective = cast(Callable, task.search), cast(Callable, task.objective)  # both declared: checked above
    seconds = check_polish_seconds(seconds)
    started = time.perf_counter()
    found, iterations = search(graph, solution, seconds, seed, kernel)
    return Polished(found, float(objective(graph, found)), time.perf_counter() - started, iterations)


def predict_polished(
    model: str | Path,
    graph: str | Path | Graph,
    out: str | Path,
    seconds: float,
    decoding: Decoding = DEFAULT_DECODING,
    runtime: Runtime = DEFAULT_RUNTIME,
    env: str | None = None,
    force: bool = False,
) -> tuple[Graph, Solution, Polished]:
    """:func:`graphtransfer.solve.predict.predict_graph`, then :func:`polish` of its solution for
    ``seconds`` (seeded by ``decoding.seed``) on the kernel the policy solved, where its
    reductions made one; the polished solution is what ``out`` gets. Returns the graph, the
    policy's own solution (reported beside the search's, never instead of it) and the polished
    one. Bad input (a task without a search, a bad budget, an ``out`` that may not be written) is
    refused before the policy runs."""
    seconds = check_polish_seconds(seconds)
    checkpoint = read_checkpoint(model, env)
    task = check_polish_task(checkpoint.config)
    check_output_file(Path(out), [] if isinstance(graph, Graph) else [resolve(graph)], force)
    loaded = graph if isinstance(graph, Graph) else load_graph(graph)
    order = solving_order(checkpoint.config, loaded, decoding.node_order, decoding.reductions)
    solution, header = predict_graph(checkpoint, loaded, decoding, runtime, env, order=order)
    polished = polish(task, loaded, solution.solution, seconds, decoding.seed, order.kernel if decoding.reductions else "make")
    write_solution(out, polished.solution, header, loaded.ids())
    return loaded, solution, polished
