"""Whole-process times of the command line: ``graphtransfer predict`` on Erdős–Rényi graphs of
average degree 8 from 10^4 to 10^6 nodes (the solve alone, as predict prints it, beside the whole
process: start-up, reading the graph and the model, writing the CSV), and ``graphtransfer --help``
and ``graphs info`` on a 10,000-edge file. Each process is run ``--repeats`` times; medians.

    .venv/bin/python -m bench.predict_scale --model runs/mis/small [--repeats 3] [--sizes 10000,100000,250000,1000000]

Prints a Markdown table for bench/RESULTS.md. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from graphtransfer.graphs import erdos_renyi, write_graph

COMMAND = [sys.executable, "-c", "from graphtransfer.cli import main; main()"]


def run(args: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB) and output of one whole process."""
    started = time.perf_counter()
    process = subprocess.Popen([*COMMAND, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {output}")
    return wall, usage.ru_maxrss / 1024, output


def medians(args: list[str], repeats: int) -> dict[str, float]:
    runs = [run(args) for _ in range(repeats)]
    solve = [float(m.group(1)) for _, _, out in runs if (m := re.search(r"passes, (?:\d+ rollouts?, )?([\d.]+) s,", out))]
    passes = [int(m.group(1)) for _, _, out in runs if (m := re.search(r"in (\d+) passes", out))]
    return {
        "wall": statistics.median(r[0] for r in runs),
        "peak": statistics.median(r[1] for r in runs),
        "solve": statistics.median(solve) if solve else float("nan"),
        "passes": statistics.median(passes) if passes else 0,
    }


def arguments(description: str, sizes: str) -> argparse.Namespace:
    """The options of the benches that time whole predict commands: an MIS model, repeats and node counts."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--model", required=True, help="an MIS model folder (make demo's runs/mis/small)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", default=sizes)
    return parser.parse_args()


def main() -> None:
    args = arguments(__doc__.splitlines()[0], "10000,100000,250000,1000000")
    folder = Path(tempfile.mkdtemp(prefix="predict-scale-"))
    load = open("/proc/loadavg").read().split()[:3] if Path("/proc/loadavg").exists() else ["?"]
    when = time.strftime("%Y-%m-%d %H:%M")
    print(f"`python -m bench.predict_scale --model {args.model} --repeats {args.repeats}`, {when}, load {' '.join(load)}\n")
    print("| command | nodes | passes | solve s (median) | whole process s (median) | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|")
    small = folder / "er-5000.txt"
    write_graph(erdos_renyi(5_000, 4.0, 0), small)  # 10,000 edges
    for label, command in (("graphtransfer --help", ["--help"]), ("graphs info (10,000 edges)", ["graphs", "info", str(small)])):
        got = medians(command, args.repeats)
        print(f"| `{label}` | | | | {got['wall']:.2f} | {got['peak']:.0f} |", flush=True)
    for nodes in (int(n) for n in args.sizes.split(",")):
        graph = folder / f"er-{nodes}.npz"
        write_graph(erdos_renyi(nodes, 8.0, 0), graph)
        got = medians(["predict", "--model", args.model, "--graph", str(graph), "--out", str(folder / "s.csv"), "--force"], args.repeats)
        cells = f"{got['passes']:.0f} | {got['solve']:.2f} | {got['wall']:.2f} | {got['peak']:.0f}"
        print(f"| predict (MIS, ER degree 8) | {nodes:,} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
