"""``predict --node-order given`` against ``--node-order auto`` (the default: large MIS graphs
renumbered in locality order when that shortens their edges enough) on four graph families, whole
processes of the command line, the two in turn (A, B, A, B), medians. Both sides are
graphtransfer: the renumbering is compared with the order the graph's file gives.

    .venv/bin/python -m bench.node_order --model runs/mis/small [--sizes 250000,1000000] [--repeats 3]

Prints a Markdown table for bench/RESULTS.md. Not part of the test run.
"""

from __future__ import annotations

import re
import statistics
import tempfile
import time
from pathlib import Path

from bench.predict_scale import arguments, run
from graphtransfer.graphs import barabasi_albert, delaunay, erdos_renyi, random_geometric, write_graph

FAMILIES = {
    "random geometric, degree 8": lambda n: random_geometric(n, 8.0, 0),
    "Delaunay": lambda n: delaunay(n, 0),
    "Erdős–Rényi, degree 8": lambda n: erdos_renyi(n, 8.0, 0),
    "Barabási–Albert, m = 4": lambda n: barabasi_albert(n, 4, 7),
}
ORDERS = ("given", "auto")


def solve_line(output: str) -> tuple[float, float]:
    """The objective and the solve's seconds from predict's output."""
    found = re.search(r"objective (\S+) in \d+ passes, 1 rollout, ([\d.]+) s,", output)
    return float(found.group(1)), float(found.group(2))


def main() -> None:
    args = arguments(__doc__.splitlines()[0], "250000,1000000")
    folder = Path(tempfile.mkdtemp(prefix="node-order-"))
    command = f"python -m bench.node_order --model {args.model} --repeats {args.repeats} --sizes {args.sizes}"
    print(f"`{command}`, {time.strftime('%Y-%m-%d %H:%M')}, load {' '.join(open('/proc/loadavg').read().split()[:3])} before\n")
    print("| graph | nodes | edges | order | set | solve s | whole process s | peak RSS MiB | solve, auto / given |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|")
    for nodes in (int(n) for n in args.sizes.split(",")):
        for family, make in FAMILIES.items():
            graph = make(nodes)
            path = folder / f"g-{nodes}.npz"
            write_graph(graph, path)
            runs = {order: [] for order in ORDERS}
            for _ in range(args.repeats):
                for order in ORDERS:
                    command = ["predict", "--model", args.model, "--graph", str(path), "--out", str(folder / "s.csv"), "--force"]
                    wall, peak, output = run([*command, "--node-order", order])
                    runs[order].append((wall, peak, *solve_line(output)))
            solve = {order: statistics.median(r[3] for r in runs[order]) for order in ORDERS}
            for order in ORDERS:
                wall, peak = (statistics.median(r[i] for r in runs[order]) for i in (0, 1))
                ratio = f"{solve['auto'] / solve['given']:.2f}" if order == "auto" else ""
                cells = f"{runs[order][0][2]:,.0f} | {solve[order]:.2f} | {wall:.2f} | {peak:,.0f} | {ratio}"
                print(f"| {family} | {nodes:,} | {graph.num_edges:,} | {order} | {cells} |", flush=True)
    print(f"\nload {' '.join(open('/proc/loadavg').read().split()[:3])} after")


if __name__ == "__main__":
    main()
