"""The MIS kernel's effect on predict's default: set size and seconds with the kernel and without it
(the per-pass reductions on in both arms), on sparse graphs of 10^5-10^6 nodes, interleaved.

    python -m bench.mis_kernel --model mis --graphs ba:100000:2,er:100000:4 --repeats 1
    python -m bench.mis_kernel --model mis --graphs ba:10000:3 --without lp

``--without lp``: the other arm is the kernel without its LP rule (rule 5) instead of no kernel.

Each graph is ``family:nodes:parameter`` (``ba``: m; ``er``, ``rgg``: average degree; ``delaunay``:
ignored), graph seed ``--seed``. Prints a markdown table: greedy minimum degree's set, each arm's
set, its seconds as predict reports them (kernel, renumbering and rollouts included), the kernel's
own seconds and the nodes it decided, and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from unittest import mock

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.graphs import Graph
from graphtransfer.graphs.generators import barabasi_albert, delaunay, erdos_renyi, random_geometric
from graphtransfer.solve.predict import predict_graph
from graphtransfer.tasks.mis import kernel as mis_kernel_module
from graphtransfer.tasks.mis.baselines import greedy_min_degree
from graphtransfer.tasks.mis.env import MISEnv, is_independent_set
from graphtransfer.tasks.mis.kernel import mis_kernel


def make_graph(spec: str, seed: int) -> Graph:
    family, nodes, parameter = spec.split(":")
    n = int(nodes)
    if family == "ba":
        return barabasi_albert(n, int(parameter), seed)
    if family == "er":
        return erdos_renyi(n, float(parameter), seed)
    if family == "rgg":
        return random_geometric(n, float(parameter), seed)
    if family == "delaunay":
        return delaunay(n, seed)
    raise SystemExit(f"unknown family {family!r} in {spec!r}: ba, er, rgg or delaunay")


def solve(checkpoint, graph: Graph, kernel: bool, without: str = "kernel") -> tuple[float, float, int]:
    """predict's default on ``graph``: set size, seconds, nodes the kernel decided; ``kernel``
    false: without the kernel, or ``without="lp"`` without its LP rule."""
    if kernel:
        solution, _ = predict_graph(checkpoint, graph)
    elif without == "lp":
        with mock.patch.object(mis_kernel_module, "LP_NODES", 0), mock.patch.object(mis_kernel_module, "odd_cycle_near", lambda *_: True):
            solution, _ = predict_graph(checkpoint, graph)  # the LP's step nowhere, bipartite graphs included
    else:
        with mock.patch.object(MISEnv, "kernel", staticmethod(lambda graph: None)):
            solution, _ = predict_graph(checkpoint, graph)
    assert solution.feasible and is_independent_set(graph, solution.solution)
    return solution.objective, solution.seconds, solution.reduced


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mis", help="model folder or built-in name [mis]")
    parser.add_argument("--graphs", required=True, help="comma-separated family:nodes:parameter")
    parser.add_argument("--seed", type=int, default=1, help="graph seed [1]")
    parser.add_argument("--repeats", type=int, default=1, help="repeats of each arm, interleaved [1]")
    parser.add_argument("--without", choices=("kernel", "lp"), default="kernel", help="the other arm: no kernel, or no LP rule [kernel]")
    args = parser.parse_args()
    checkpoint = read_checkpoint(args.model)
    print(f"| graph | greedy | without {args.without} | with it | seconds without | with | kernel s | decided | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for spec in args.graphs.split(","):
        graph = make_graph(spec, args.seed)
        greedy = int(greedy_min_degree(graph).sum())
        started = time.perf_counter()
        kernel = mis_kernel(graph)
        kernel_seconds = time.perf_counter() - started
        seconds: dict[bool, list[float]] = {False: [], True: []}
        sizes: dict[bool, float] = {}
        decided = 0
        for _ in range(args.repeats):
            for arm in (False, True):
                size, spent, reduced = solve(checkpoint, graph, arm, args.without)
                sizes[arm], decided = size, max(decided, reduced)
                seconds[arm].append(spent)
        assert kernel is None or kernel.decided == decided
        without, kept = (f"{sizes[arm]:,.0f} ({sizes[arm] / greedy:.4f})" for arm in (False, True))
        print(
            f"| {spec} | {greedy:,} | {without} | {kept} | "
            f"{statistics.median(seconds[False]):.2f} | {statistics.median(seconds[True]):.2f} | {kernel_seconds:.2f} | {decided:,} | "
            f"{os.getloadavg()[0]:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
