"""Measuring a policy against the task's classical baselines, graph by graph.

Every decoding is reported on its own line of numbers: the policy's default decoding (MIS and
MVC by local maxima, ``local-max``; path ``deterministic``, its most likely moves; other tasks
``sampled``) and, where actions are drawn, the other way of drawing them, each the best of its
seeded rollouts (``rollouts``: by default as many as a work budget allows, several on graphs of
up to some ten thousand nodes, see :mod:`graphtransfer.solve.rollouts`). A local-search polish, when
asked for, is applied to the best policy solution and to every baseline alike.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from graphtransfer.config import Decoding, RunConfig, Runtime
from graphtransfer.envs.protocol import features_of
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph
from graphtransfer.solve.inference import DRAWN, Solution, check_decoding, peak_rss_mib
from graphtransfer.solve.loading import DEFAULT_RUNTIME, GraphInput, graphs_of, policy_for_graphs
from graphtransfer.solve.ordering import solving_order
from graphtransfer.solve.rollouts import DEFAULT_DECODING, best_of_rollouts, rollout_count, rollout_patience
from graphtransfer.tasks.factory import inference_env, named_query, task_of


@dataclass
class BaselineResult:
    name: str
    objective: float
    seconds: float
    polished: float | None = None


@dataclass
class EvalRow:
    """One graph: the policy under each decoding, and each baseline."""

    graph: Graph
    decodings: dict[str, Solution]
    baselines: list[BaselineResult]
    sense: str = "max"
    polished: float | None = None  # the best decoding after the polish
    peak_rss_mib: float = field(default_factory=peak_rss_mib)

    @property
    def policy(self) -> Solution:
        """The headline decoding: the first one evaluated."""
        return next(iter(self.decodings.values()))

    def best(self) -> Solution:
        pick = max if self.sense == "max" else min
        return pick(self.decodings.values(), key=lambda s: s.objective)

    def ratio(self, value: float, baseline: float) -> float:
        """``value / baseline`` (for minimisation too: below 1 is then better)."""
        return value / baseline if baseline else float("nan")

    @staticmethod
    def compares_by_ratio(value: float, baseline: float) -> bool:
        """Whether :meth:`compare` shows a ratio (positive objectives) rather than a difference
        (an objective that is negative or zero, such as the epidemic's reward)."""
        return baseline > 0 and value >= 0

    def compare(self, value: float, baseline: float) -> str:
        """A ratio for positive objectives, else the signed difference."""
        if self.compares_by_ratio(value, baseline):
            return f"{self.ratio(value, baseline):.3f}"
        return f"{value - baseline:+.3f}"


@dataclass(frozen=True)
class EvalExtras:
    """What an evaluation reports besides the policy's default decoding.

    Attributes:
        both_draws: where the decoding draws actions (``drawn``), report both ways of drawing
            them: the task's default first (``deterministic`` for path, whose env declares
            ``inference_deterministic``; ``sampled`` for the others), then the other. The
            local-max decoding draws none, so a second row would repeat the first.
        polish: also report the best decoding and every baseline after the task's local search.
        chils: MIS: also CHILS (:mod:`graphtransfer.tasks.mis.chils`, an optional package), for
            the local search's seconds.
        source, target: path, one graph: route between these nodes, named by the graph's own
            ids (:func:`graphtransfer.tasks.factory.named_query`), policy and baselines alike;
            without them, the graph's own query.
    """

    both_draws: bool = False
    polish: bool = False
    chils: bool = False
    source: str | None = None
    target: str | None = None


NO_EXTRAS = EvalExtras()


def evaluate_policy(
    policy,
    config: RunConfig,
    graphs: list[Graph],
    decoding: Decoding = DEFAULT_DECODING,
    extras: EvalExtras = NO_EXTRAS,
    experts: Sequence[dict[str, torch.Tensor]] = (),
) -> list[EvalRow]:
    """Run the policy under each decoding and every baseline of the task on each graph.

    Args:
        decoding: how the policy decodes (:class:`graphtransfer.Decoding`); each decoding is the
            best of ``decoding.rollouts`` rollouts, seeds ``seed, seed + 1, ...`` (``"auto"``:
            several on graphs of a few hundred nodes, one from 10,001 nodes on; see
            :func:`graphtransfer.solve.rollouts.best_of_rollouts`).
        extras: what is reported besides (:class:`EvalExtras`).
        experts: the model's further weight sets, taking turns with the policy's own in the
            rollouts (:attr:`graphtransfer.checkpoint.Checkpoint.experts`).
    """
    check_one_graph(graphs, extras.source, extras.target)
    task = task_of(config)
    baselines = dict(task.baselines)
    if extras.chils:
        if "chils" not in task.optional_baselines:
            raise task.refuse("--chils", "optional_baselines")
        baselines["chils"] = task.optional_baselines["chils"]()
    polisher = task.improve if extras.polish else None
    finish = task.finish
    rows = []
    for graph in graphs:
        order = solving_order(config, graph, decoding.node_order, decoding.reductions)
        query = named_query(config, graph, extras.source, extras.target)  # path is never renumbered: positions hold in order.graph
        env = inference_env(config, order.graph, decoding.max_passes, query)
        features = features_of(env)
        count = rollout_count(decoding.rollouts, order.graph.num_nodes, order.graph.edge_index.shape[1])
        patience = rollout_patience(decoding.rollouts, order.graph.num_nodes)
        chosen = check_decoding(env, features, decoding.method)
        first = features.inference_deterministic if decoding.deterministic is None else decoding.deterministic
        drawn = chosen == DRAWN
        best = best_of_rollouts(policy, env, count, decoding, finish, patience, order.rule, experts)
        decodings = {_draw_label(first) if drawn else chosen: order.restore(best)}
        if extras.both_draws and drawn:
            other = replace(decoding, deterministic=not first)
            again = best_of_rollouts(policy, env, count, other, finish, patience, order.rule, experts)
            decodings[_draw_label(not first)] = order.restore(again)
        answers = [_run_baseline(name, _answering(fn, query), env.unwrapped, graph, polisher) for name, fn in baselines.items()]
        row = EvalRow(graph, decodings, answers, features.sense)
        if polisher and features.answering is not None:  # a task that declares a search answers
            row.polished = features.answering.objective(graph, polisher(graph, row.best().solution))
        row.peak_rss_mib = peak_rss_mib()
        rows.append(row)
    return rows


def check_one_graph(graphs: list[Graph], source: str | None, target: str | None) -> None:
    """A route's ends are nodes of one graph: refuse ``source`` or ``target`` beside several graphs."""
    if (source is not None or target is not None) and len(graphs) != 1:
        raise UsageError(f"--source and --target name nodes of one graph; --graphs names {len(graphs)} graphs: name a single graph file")


def _answering(baseline, query: tuple[int, int] | None):
    """``baseline`` bound to a route query (the path task's baselines answer any); as it is without one."""
    return baseline if query is None else functools.partial(baseline, query=query)


def _draw_label(deterministic: bool) -> str:
    """A drawn decoding's row label: the most likely actions, or seeded samples."""
    return "deterministic" if deterministic else "sampled"


def finish_rule(config: RunConfig):
    """The task's declared finishing rule (``finish``): complete what the policy left undecided and
    make the solution maximal; ``None`` for tasks without one."""
    return task_of(config).finish


def _run_baseline(name, fn, env, graph, polisher) -> BaselineResult:
    started = time.perf_counter()
    solution = fn(graph)
    result = BaselineResult(name, env.objective(graph, solution), time.perf_counter() - started)
    if polisher:
        result.polished = env.objective(graph, polisher(graph, solution))
    return result


def evaluate_model(
    model: str | Path,
    graphs: GraphInput,
    decoding: Decoding = DEFAULT_DECODING,
    runtime: Runtime = DEFAULT_RUNTIME,
    env: str | None = None,
    extras: EvalExtras = NO_EXTRAS,
) -> tuple[RunConfig, list[EvalRow]]:
    """Load the model folder ``model`` for the graphs ``graphs`` names (files, or PyG data:
    :func:`~graphtransfer.solve.loading.graphs_of`; refusing any that would not fit in memory) and
    :func:`evaluate_policy` it there; ``env`` names the user env of a model trained on one."""
    loaded_graphs = graphs_of(graphs)
    check_one_graph(loaded_graphs, extras.source, extras.target)
    loaded = policy_for_graphs(model, loaded_graphs, runtime, env)
    config = loaded.checkpoint.config
    rows: list[EvalRow] = []
    try:
        for graph in loaded_graphs:  # a graph at a time: a stop keeps the rows finished
            rows += evaluate_policy(loaded.policy, config, [graph], decoding, extras, loaded.checkpoint.experts)
    except KeyboardInterrupt:
        raise EvaluationStopped(rows, len(loaded_graphs)) from None
    return config, rows


class EvaluationStopped(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM, SIGHUP) during :func:`evaluate_model`: ``rows``, those of the graphs finished
    before, of ``total``."""

    def __init__(self, rows: list[EvalRow], total: int):
        super().__init__(f"{len(rows)} of {total} graphs evaluated before")
        self.rows, self.total = rows, total
