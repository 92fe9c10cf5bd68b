"""Resident memory of ``predict``'s phases on one graph file, in one process: the RSS after each
phase and the phase's own peak (``VmHWM``, reset between phases through ``/proc/self/clear_refs``;
Linux only): imports, reading the graph, the solving order, the env and policy, each of the first
passes (the env's reset counts in the first), the CSV.

    .venv/bin/python -m bench.predict_phases --model runs/mis/small --graph er.npz

Prints a Markdown table for bench/RESULTS.md. Not part of the test run.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

STATUS, CLEAR = Path("/proc/self/status"), Path("/proc/self/clear_refs")


def resident() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process, MiB."""
    fields = dict(line.split(":", 1) for line in STATUS.read_text().splitlines() if line.startswith(("VmRSS", "VmHWM")))
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


class Phases:
    """Prints one row per phase: RSS after it, its peak, its seconds; then resets the peak."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        CLEAR.write_text("5")

    def mark(self, phase: str) -> None:
        rss, peak = resident()
        now = time.perf_counter()
        print(f"| {phase} | {rss:,.0f} | {peak:,.0f} | {now - self.started:.2f} |", flush=True)
        self.started = now
        CLEAR.write_text("5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="an MIS model folder (make demo's runs/mis/small)")
    parser.add_argument("--graph", required=True, help="a graph file, e.g. written by graphtransfer graphs generate")
    parser.add_argument("--passes", type=int, default=5, help="passes to report one by one")
    args = parser.parse_args()
    print("| phase | RSS after MiB | phase peak MiB | s |\n|---|---:|---:|---:|")
    phases = Phases()
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.envs.protocol import features_of
    from graphtransfer.graphs import load_graph
    from graphtransfer.solve import inference
    from graphtransfer.solve.evaluate import finish_rule
    from graphtransfer.solve.loading import policy_for_graphs
    from graphtransfer.solve.ordering import solving_order
    from graphtransfer.solve.predict import write_solution
    from graphtransfer.solve.rollouts import DEFAULT_DECODING, best_of_rollouts

    phases.mark("imports")
    checkpoint = read_checkpoint(args.model)
    graph = load_graph(args.graph)
    phases.mark("read the model and the graph")
    order = solving_order(checkpoint.config, graph)
    phases.mark("solving order")
    loaded = policy_for_graphs(checkpoint, [order.graph])
    phases.mark("env and policy")
    step, passes = inference.LOCAL_MAX_STEPS[inference.Head.NODE_WISE], [0]

    def counted(*call, **keywords):
        result = step(*call, **keywords)
        passes[0] += 1
        if passes[0] <= args.passes:
            phases.mark(f"pass {passes[0]}")
        return result

    inference.LOCAL_MAX_STEPS[inference.Head.NODE_WISE] = counted
    solution = order.restore(best_of_rollouts(loaded.policy, loaded.env, 1, DEFAULT_DECODING, finish_rule(checkpoint.config)))
    phases.mark(f"passes {args.passes + 1}-{passes[0]}, the finishing rule")
    with tempfile.TemporaryDirectory() as folder:
        write_solution(Path(folder) / "s.csv", solution.solution, features_of(loaded.env).solution_header, graph.ids())
    phases.mark("CSV")
    print(f"\nset {solution.objective:,.0f}, {solution.passes} passes")


if __name__ == "__main__":
    main()
