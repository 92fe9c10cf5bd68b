"""How much the MIS iterated local search finds beyond greedy minimum-degree, by time budget, on
the graph families where issue 17 found greedy weakest: Erdős–Rényi n = 10,000 (average degree
8), a Delaunay mesh and a random geometric graph of 32,768 nodes.

    .venv/bin/python bench/local_search_quality.py [--budgets 10 60] [--seed 0]

Prints a Markdown table for bench/RESULTS.md. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from graphtransfer.graphs import Graph, delaunay, erdos_renyi, from_edges, random_geometric
from graphtransfer.tasks import is_independent_set
from graphtransfer.tasks.mis.baselines import greedy_min_degree
from graphtransfer.tasks.mis.local_search import iterated_local_search


def issue_er(num_nodes: int = 10_000, num_edges: int = 40_000) -> Graph:
    """The Erdős–Rényi graph as issue 17 describes it: uniform node pairs from
    ``numpy.random.default_rng(0)`` until 40,000 distinct edges."""
    rng = np.random.default_rng(0)
    seen: set[tuple[int, int]] = set()
    while len(seen) < num_edges:
        u, v = (int(x) for x in rng.integers(0, num_nodes, 2))
        if u != v:
            seen.add((min(u, v), max(u, v)))
    pairs = np.array(sorted(seen))
    graph, _, _ = from_edges(pairs[:, 0], pairs[:, 1], num_nodes, "er-issue17-n10000-m40000")
    return graph


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", type=float, nargs="+", default=[10.0, 60.0], help="seconds per local-search run")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    graphs = [issue_er(), erdos_renyi(10_000, 8.0, 0), delaunay(32_768, 0), random_geometric(32_768, 8.0, 0)]
    print(f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}\n")
    budgets = " | ".join(f"ILS {b:g} s (iterations)" for b in args.budgets)
    print(f"| graph | nodes | edges | greedy min-degree (s) | {budgets} |")
    print("|---|---:|---:|---:|" + "---:|" * len(args.budgets))
    for graph in graphs:
        started = time.perf_counter()
        greedy = int(greedy_min_degree(graph).sum())
        cells = [f"{greedy:,} ({time.perf_counter() - started:.2f})"]
        for budget in args.budgets:
            result = iterated_local_search(graph, time_budget=budget, seed=args.seed)
            if not is_independent_set(graph, result.solution):
                raise SystemExit(f"{graph.name}: the local search returned a set that is not independent")
            found = int(result.solution.sum())
            cells.append(f"{found:,} (+{100 * (found / greedy - 1):.1f}%, {result.iterations:,})")
        print(f"| {graph.name} | {graph.num_nodes:,} | {graph.num_edges:,} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
