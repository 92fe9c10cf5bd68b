"""Time every fast baseline on the two 250k-node, 1M-edge benchmark graphs and print a Markdown
table: the median of a few runs, and that time as a multiple of building the graph's CSR
adjacency in the same run (one sort of the edge list), which keeps numbers taken on busy or
different machines comparable.

    .venv/bin/python bench/baselines_speed.py [--repeats 3] [--nodes 250000]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from graphtransfer.graphs import Graph, barabasi_albert, erdos_renyi
from graphtransfer.tasks import TASKS


def median_seconds(run, repeats: int) -> tuple[float, object]:
    """Median wall time of ``repeats`` calls of ``run()``, and the last call's result."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def objective(task: str, graph: Graph, solution: np.ndarray) -> int:
    """Cut edges for maxcut, chosen nodes for the set and cover tasks: shown so that a faster
    baseline cannot hide a worse answer."""
    if task == "maxcut":
        src, dst = graph.edge_index
        return int((solution[src] != solution[dst]).sum()) // 2
    return int(solution.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per baseline; the median is reported")
    parser.add_argument("--nodes", type=int, default=250_000, help="nodes per benchmark graph")
    args = parser.parse_args()
    graphs = [barabasi_albert(args.nodes, 4, 7), erdos_renyi(args.nodes, 8.0, 7)]
    print("| graph | edges | task | baseline | seconds | × CSR build | objective |")
    print("|---|---:|---|---|---:|---:|---:|")
    for graph in graphs:
        csr_seconds, _ = median_seconds(graph.csr, args.repeats)
        for task, baselines in ((name, t.baselines) for name, t in TASKS.items()):
            for name, baseline in baselines.items():
                seconds, solution = median_seconds(lambda baseline=baseline, graph=graph: baseline(graph), args.repeats)
                print(
                    f"| {graph.name} | {graph.num_edges} | {task} | {name} | {seconds:.2f} | {seconds / csr_seconds:.1f} | "
                    f"{objective(task, graph, solution)} |"
                )
        print(f"| {graph.name} | {graph.num_edges} | (reference) | CSR build | {csr_seconds:.3f} | 1.0 | |")


if __name__ == "__main__":
    main()
