"""Measuring a policy against the task's classical baselines, graph by graph."""

from __future__ import annotations

import time
from dataclasses import dataclass

from graphtransfer.baselines import BASELINES
from graphtransfer.config import RunConfig
from graphtransfer.graphs import Graph
from graphtransfer.inference import DEFAULT_COMMIT_FRACTION, Solution, solve
from graphtransfer.train import run_env


@dataclass
class BaselineResult:
    name: str
    objective: float
    seconds: float


@dataclass
class EvalRow:
    """One graph: the policy's result and each baseline's."""

    graph: Graph
    policy: Solution
    baselines: list[BaselineResult]

    def compare(self, baseline: BaselineResult) -> str:
        """``policy/baseline`` for positive objectives, else the difference ``policy-baseline``."""
        if baseline.objective > 0 and self.policy.objective >= 0:
            return f"{self.policy.objective / baseline.objective:.3f}"
        return f"{self.policy.objective - baseline.objective:+.3f}"


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
    deterministic: bool = False,
    seed: int = 0,
    commit_fraction: float = DEFAULT_COMMIT_FRACTION,
) -> list[EvalRow]:
    """Run the policy and every baseline of the task on each graph."""
    baselines = BASELINES.get(config.task, {}) if config.env is None else {}
    rows = []
    for graph in graphs:
        env = inference_env(config, graph, max_passes)
        solution = solve(policy, env, deterministic=deterministic, seed=seed, commit_fraction=commit_fraction)
        rows.append(EvalRow(graph, solution, [_run_baseline(name, fn, env.unwrapped, graph) for name, fn in baselines.items()]))
    return rows


def _run_baseline(name, fn, env, graph) -> BaselineResult:
    started = time.perf_counter()
    chosen = fn(graph)
    return BaselineResult(name, env.objective(graph, chosen), time.perf_counter() - started)


def format_rows(rows: list[EvalRow], sense: str = "max") -> list[str]:
    """A plain-text table, one line per graph."""
    better = "higher" if sense == "max" else "lower"
    lines = [
        f"{'graph':<24} {'nodes':>9} {'edges':>9} {'policy':>10} {'valid':>5} {'passes':>6} {'secs':>6}"
        f"  baselines: objective (policy vs baseline; {better} objective is better)"
    ]
    for row in rows:
        baselines = "  ".join(f"{b.name} {b.objective:.6g} ({row.compare(b)})" for b in row.baselines)
        lines.append(
            f"{row.graph.name[:24]:<24} {row.graph.num_nodes:>9} {row.graph.num_edges:>9} {row.policy.objective:>10.6g} "
            f"{'yes' if row.policy.feasible else 'NO':>5} {row.policy.passes:>6} {row.policy.seconds:>6.2f}  {baselines}"
        )
    return lines
