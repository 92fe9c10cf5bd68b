"""Measuring a policy against the task's classical baselines, graph by graph.

Every decoding is reported on its own line of numbers: the policy sampled once (seeded),
deterministic, and the best of k sampled rollouts. A local-search polish, when asked for, is
applied to the best policy solution and to every baseline alike.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from graphtransfer.baselines import BASELINES
from graphtransfer.baselines.polish import POLISH
from graphtransfer.checkpoint import load_policy, read_checkpoint
from graphtransfer.config import RunConfig
from graphtransfer.graphs import Graph, load_graphs
from graphtransfer.inference import Solution, peak_rss_mib, solve
from graphtransfer.nn import configure_runtime
from graphtransfer.train import run_env


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

    def compare(self, value: float, baseline: float) -> str:
        """A ratio for positive objectives, else the signed difference."""
        if baseline > 0 and value >= 0:
            return f"{self.ratio(value, baseline):.3f}"
        return f"{value - baseline:+.3f}"


def inference_env(config: RunConfig, graph: Graph, max_passes: int | None = None):
    """The run's env on one graph. Tasks that end once solved (MIS, MVC) get a longer horizon
    than in training, their ``inference_horizon``; ``max_passes`` overrides either."""
    env = run_env(config, [graph])
    horizon = max_passes or getattr(env.unwrapped, "inference_horizon", None)
    if horizon:
        env.unwrapped.horizon = horizon
    return env


def evaluate(
    policy,
    config: RunConfig,
    graphs: list[Graph],
    max_passes: int | None = None,
    samples: int = 1,
    deterministic: bool = False,
    polish: bool = False,
    seed: int = 0,
    commit_fraction: float | None = None,
) -> list[EvalRow]:
    """Run the policy under each decoding and every baseline of the task on each graph.

    Args:
        samples: also report the best of this many sampled rollouts (seeds ``seed..``), when > 1.
        deterministic: also report the deterministic decoding.
        polish: also report the best decoding and every baseline after the task's local search.
    """
    baselines = BASELINES.get(config.task, {}) if config.env is None else {}
    polisher = POLISH.get(config.task) if polish and config.env is None else None
    rows = []
    for graph in graphs:
        env = inference_env(config, graph, max_passes)
        sense = getattr(env.unwrapped, "sense", "max")
        options = {"seed": seed, "commit_fraction": commit_fraction}
        decodings = {"sampled": solve(policy, env, **options)}
        if deterministic:
            decodings["deterministic"] = solve(policy, env, deterministic=True, **options)
        if samples > 1:
            more = [solve(policy, env, seed=seed + i, commit_fraction=commit_fraction) for i in range(1, samples)]
            rolls = [decodings["sampled"], *more]
            decodings[f"best-of-{samples}"] = (max if sense == "max" else min)(rolls, key=lambda s: s.objective)
        row = EvalRow(graph, decodings, [_run_baseline(name, fn, env.unwrapped, graph, polisher) for name, fn in baselines.items()], sense)
        if polisher:
            row.polished = env.unwrapped.objective(graph, polisher(graph, row.best().solution))
        row.peak_rss_mib = peak_rss_mib()
        rows.append(row)
    return rows


def _run_baseline(name, fn, env, graph, polisher) -> BaselineResult:
    started = time.perf_counter()
    solution = fn(graph)
    result = BaselineResult(name, env.objective(graph, solution), time.perf_counter() - started)
    if polisher:
        result.polished = env.objective(graph, polisher(graph, solution))
    return result


def format_rows(rows: list[EvalRow]) -> list[str]:
    """A plain-text table: one line per graph and decoding, then the polished line if any."""
    if not rows:
        return []
    better = "higher" if rows[0].sense == "max" else "lower"
    lines = [
        f"{'graph':<22} {'nodes':>8} {'edges':>9} {'decoding':<13} {'objective':>10} {'valid':>5} {'passes':>6} {'secs':>6}"
        f"  vs baselines (policy/baseline; {better} objective is better)"
    ]
    for row in rows:
        name = f"{row.graph.name[:22]:<22} {row.graph.num_nodes:>8} {row.graph.num_edges:>9}"
        for label, solution in row.decodings.items():
            versus = "  ".join(f"{b.name} {b.objective:.6g} ({row.compare(solution.objective, b.objective)})" for b in row.baselines)
            lines.append(
                f"{name} {label:<13} {solution.objective:>10.6g} {'yes' if solution.feasible else 'NO':>5} "
                f"{solution.passes:>6} {solution.seconds:>6.2f}  {versus}"
            )
            name = " " * len(name)
        if row.polished is not None:
            versus = "  ".join(f"{b.name}+polish {b.polished:.6g} ({row.compare(row.polished, b.polished)})" for b in row.baselines)
            lines.append(f"{name} {'polished':<13} {row.polished:>10.6g} {'yes':>5} {'':>6} {'':>6}  {versus}")
    return lines


def evaluate_model(
    model: str | Path, graphs: str | Path, max_nodes_per_batch: int | None = None, mixed_precision: bool = False, **options
) -> tuple[RunConfig, list[EvalRow]]:
    """Load the model folder ``model`` and :func:`evaluate` it on the graphs ``graphs`` names,
    its layers in chunks of ``max_nodes_per_batch`` nodes if given (the same numbers)."""
    checkpoint = read_checkpoint(model)
    loaded = load_graphs(graphs)
    policy, _ = load_policy(checkpoint, run_env(checkpoint.config, loaded))
    configure_runtime(policy, max_nodes_per_batch, mixed_precision)
    return checkpoint.config, evaluate(policy, checkpoint.config, loaded, **options)
