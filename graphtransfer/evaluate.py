"""Measuring a policy against the task's classical baselines, graph by graph."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from graphtransfer.baselines import BASELINES
from graphtransfer.envs.base import GraphEnv
from graphtransfer.graphs import Graph
from graphtransfer.inference import Solution, solve

DEFAULT_MAX_PASSES = 256


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

    def ratio(self, baseline: BaselineResult) -> float:
        """Policy objective / baseline objective (for maximisation tasks, higher is better)."""
        return self.policy.objective / baseline.objective if baseline.objective else float("nan")


def evaluate(
    policy: torch.nn.Module, task: str, env_class: type[GraphEnv], graphs: list[Graph], max_passes: int = DEFAULT_MAX_PASSES
) -> list[EvalRow]:
    """Run the policy deterministically and every baseline of ``task`` on each graph."""
    rows = []
    for graph in graphs:
        solution = solve(policy, env_class([graph], horizon=max_passes))
        rows.append(EvalRow(graph, solution, [_run_baseline(name, fn, env_class, graph) for name, fn in BASELINES[task].items()]))
    return rows


def _run_baseline(name, fn, env_class, graph) -> BaselineResult:
    started = time.perf_counter()
    chosen = fn(graph)
    return BaselineResult(name, env_class.objective(graph, chosen), time.perf_counter() - started)


def format_rows(rows: list[EvalRow]) -> list[str]:
    """A plain-text table, one line per graph."""
    lines = [
        f"{'graph':<24} {'nodes':>9} {'edges':>9} {'policy':>9} {'valid':>5} {'passes':>6} {'secs':>6}"
        "  baselines (objective, policy/baseline)"
    ]
    for row in rows:
        baselines = "  ".join(f"{b.name} {b.objective:.0f} ({row.ratio(b):.3f})" for b in row.baselines)
        lines.append(
            f"{row.graph.name[:24]:<24} {row.graph.num_nodes:>9} {row.graph.num_edges:>9} {row.policy.objective:>9.0f} "
            f"{'yes' if row.policy.feasible else 'NO':>5} {row.policy.passes:>6} {row.policy.seconds:>6.2f}  {baselines}"
        )
    return lines
