"""Peak memory of `graphtransfer predict` on one graph file: the single-process solve and the
partitioned solve at K = 2, 4, 8 parts on a local Ray instance (`--ray-address local`), each a
separate CLI process watched from outside, so every figure is that run's own.

    .venv/bin/python -m bench.partitioned_memory --graph rgg.npz --model runs/mis/small [--parts 1,2,4,8] [--paths file,folder]

K = 1 is the single-process predict (no Ray). Each K > 1 runs once per path of `--paths`:
`file`, predict on the graph file (the driver reads and splits it); `folder`, first
`graphtransfer graphs partition` into a temporary folder (its own row: a process that reads the
whole graph once), then predict on that folder (the driver reads only the map, each actor its
part's file). Every half second the watcher reads the peak resident size (VmHWM, the object
store's pages a process touched included) of the CLI process (the driver) and of every Ray
worker below it (one actor per part); a worker's peak above an idle worker's, over the rows its
part reads (owned and halo, the parts being of near-equal size), is the per-row figure. Prints a
Markdown table for bench/RESULTS.md. Not part of the test run.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.partitioned import Watcher, idle_worker_mib

CLI = str(Path(sys.executable).parent / "graphtransfer")


def run_predict(graph: str, model: str, parts: int, out: Path) -> tuple[str, float, Watcher]:
    """One `graphtransfer predict` (partitioned where ``parts`` > 1; ``graph`` a file or a
    partitioned graph's folder): its output, seconds and peaks."""
    command = [CLI, "predict", "--model", model, "--graph", graph, "--out", str(out), "--force"]
    if parts > 1:
        command += ["--ray-address", "local", "--partitions", str(parts)]
    return run_watched(command)


def run_watched(command: list[str]) -> tuple[str, float, Watcher]:
    """``command`` as a process of its own, watched: its output, seconds and peaks."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watcher = Watcher(process.pid)
    watcher.start()
    output, _ = process.communicate()
    watcher.stop()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{output}")
    return output, time.perf_counter() - started, watcher


def number(pattern: str, text: str) -> float:
    found = re.search(pattern, text)
    return float(found.group(1)) if found else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--parts", default="1,2,4,8")
    parser.add_argument("--paths", default="file", help="file, folder or both (file,folder): which partitioned path to run")
    args = parser.parse_args()
    command = f"python -m bench.partitioned_memory --graph {args.graph} --parts {args.parts} --paths {args.paths}"
    print(f"`{command}`, {time.strftime('%Y-%m-%d %H:%M')} UTC, load {load()} before\n")
    idle = idle_worker_mib()
    print(f"an idle Ray worker (graphtransfer imported): {idle:,.0f} MiB peak\n")
    columns = "K | path | halo / nodes | set | passes | wall s | driver peak MiB | worker peaks MiB | rows per part | KB per row above idle"
    print(f"| {columns} | load after |")
    print("|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---|")
    with tempfile.TemporaryDirectory() as folder:
        for parts in (int(k) for k in args.parts.split(",")):
            for path in ["-"] if parts == 1 else args.paths.split(","):
                graph = args.graph
                if path == "folder":
                    graph = str(Path(folder) / f"parts-{parts}")
                    output, seconds, watcher = run_watched([CLI, "graphs", "partition", args.graph, "--parts", str(parts), "--out", graph])
                    print(f"| {parts} | graphs partition | | | | {seconds:.0f} | {watcher.driver:,.0f} | - | | | {load()} |", flush=True)
                output, seconds, watcher = run_predict(graph, args.model, parts, Path(folder) / "set.csv")
                print(f"| {parts} | {path} | {row_cells(output, seconds, watcher, parts, idle)} | {load()} |", flush=True)


def row_cells(output: str, seconds: float, watcher: Watcher, parts: int, idle: float) -> str:
    """A predict run's cells of the table, from its output and its watcher."""
    nodes = number(r"(\d+) nodes", output)
    halo = number(r"their halos ([\d.]+) of the nodes", output) if parts > 1 else 0.0
    size, passes = number(r"objective (\d+)", output), number(r"in (\d+) passes", output)
    peaks = sorted(watcher.workers.values(), reverse=True)[:parts]
    rows = nodes * (1 + halo) / parts
    per_row = f"{(max(peaks) - idle) * 2**20 / rows / 1000:.2f}" if peaks else "-"
    worker_cells = ", ".join(f"{peak:,.0f}" for peak in peaks) or "-"
    return f"{halo:.2f} | {size:,.0f} | {passes:.0f} | {seconds:.0f} | {watcher.driver:,.0f} | {worker_cells} | {rows:,.0f} | {per_row}"


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


if __name__ == "__main__":
    main()
