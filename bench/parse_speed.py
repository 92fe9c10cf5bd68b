"""How fast each graph format parses: a 250,000-node, 1,000,000-edge Erdős–Rényi graph written in
every format graphtransfer writes, each read a few times; the median is compared with a baseline
read of the same edge list in this run (networkx's ``read_edgelist`` where networkx is installed,
else ``np.loadtxt``), because these machines are too noisy for absolute numbers to travel.

    .venv/bin/python bench/parse_speed.py [--repeats 3]

Prints a Markdown table for bench/RESULTS.md. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from graphtransfer.graphs import FORMATS, erdos_renyi, read_graph, write_graph


def median_seconds(read: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        read()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def baseline(edge_list: Path) -> tuple[str, Callable[[], object]]:
    """The reference read of the edge list: what a user would reach for without graphtransfer."""
    try:
        import networkx as nx
    except ImportError:
        return "np.loadtxt", lambda: np.loadtxt(edge_list, dtype=np.int64, comments="#")
    return f"networkx {nx.__version__} read_edgelist", lambda: nx.read_edgelist(edge_list, nodetype=int)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="reads per format; the median is reported")
    args = parser.parse_args()
    graph = erdos_renyi(250_000, 8.0, seed=0)
    load = os.getloadavg()[0]
    print(f"graph: {graph.num_nodes:,} nodes, {graph.num_edges:,} edges; {platform.machine()}, {os.cpu_count()} cores, load {load:.1f}")
    with tempfile.TemporaryDirectory() as folder:
        files = {}
        for name, graph_format in FORMATS.items():
            if graph_format.write is not None:
                files[name] = Path(folder) / f"graph{graph_format.extensions[0]}"
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the edge list loses the 81 isolated nodes: the readers do the same work
                    write_graph(graph, files[name], name)
        label, read_baseline = baseline(files["edgelist"])
        reference = median_seconds(read_baseline, args.repeats)
        print(f"baseline: {label} on the edge list, median {reference:.2f} s over {args.repeats}\n")
        print("| format | file MB | median parse s | speed vs baseline |")
        print("|---|---:|---:|---:|")
        for name, path in files.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                seconds = median_seconds(lambda path=path, name=name: read_graph(path, name), args.repeats)
            print(f"| {name} | {path.stat().st_size / 1e6:.0f} | {seconds:.2f} | {reference / seconds:.1f}x |")


if __name__ == "__main__":
    main()
