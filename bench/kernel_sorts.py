"""The MIS kernel of one graph file with the counting sort off and on (``graphtransfer.graphs.graph``: stable orders,
CSR adjacencies and edges by destination grouped by it, or by torch's sort and a gather), interleaved in one
process, each on a fresh copy of the graph: CPU and wall seconds, medians, the load average before and after.

    .venv/bin/python -m bench.kernel_sorts --graph er.npz [--repeats 7] [--threads 1]

The kernel's answer is the same either way (checked). Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace

from graphtransfer.process import keep_freed_memory, tune_process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", required=True, help="a graph file, e.g. written by graphtransfer graphs generate")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    tune_process(solving=True)  # as predict's process runs
    keep_freed_memory()
    import numpy as np
    import torch

    from graphtransfer.graphs import graph as graphs
    from graphtransfer.graphs import load_graph
    from graphtransfer.tasks.mis.kernel import mis_kernel

    torch.set_num_threads(args.threads)
    given = load_graph(args.graph)
    arms = {"torch's sort and a gather": 0, "counting sort": graphs.COUNTING_SORT_UP_TO}
    spent: dict[str, list[tuple[float, float]]] = {arm: [] for arm in arms}
    kernels = {}
    before = os.getloadavg()
    for _ in range(args.repeats):
        for arm, up_to in arms.items():
            graphs.COUNTING_SORT_UP_TO = up_to
            graphs.COUNTING_SORT_FROM = 1 << 12 if up_to else 1 << 62  # off: neither stable orders nor grouping count
            cpu, wall = time.process_time(), time.perf_counter()
            kernel = mis_kernel(replace(given))
            spent[arm].append((time.process_time() - cpu, time.perf_counter() - wall))
            kernels[arm] = kernel
    first, second = kernels.values()
    assert np.array_equal(first.graph.edge_index, second.graph.edge_index) and np.array_equal(first.nodes, second.nodes)
    command = f"python -m bench.kernel_sorts --graph {args.graph} --repeats {args.repeats} --threads {args.threads}"
    print(f"`{command}`, load {before[0]:.2f} -> {os.getloadavg()[0]:.2f}\n")
    print("| sorts | kernel CPU s (median) | wall s (median) | CPU s, each |\n|---|---:|---:|---|")
    for arm, rows in spent.items():
        each = ", ".join(f"{cpu:.2f}" for cpu, _ in rows)
        print(f"| {arm} | {statistics.median(r[0] for r in rows):.3f} | {statistics.median(r[1] for r in rows):.3f} | {each} |")


if __name__ == "__main__":
    main()
