"""The partitioned forward (graphtransfer.solve.partitioned) against the single-process forward of
the same policy on the same first MIS observation: wall time, each Ray worker's peak memory and
the halo, at K = 2, 4 and 8 parts, on a local Ray instance of 2 CPUs started per row; each part's
actor is a process of its own, whose peak is read while it runs (:class:`Watcher`).

    .venv/bin/python -m bench.partitioned [--sizes 25000,100000] [--parts 2,4,8] [--families geometric,erdos-renyi]
        [--model runs/mis/small --mis-sizes 25000] [--predict mis --predict-nodes 200000 --predict-parts 4]

The policy is built with the default model settings and random weights: the forward's cost does
not depend on what the weights learned. With ``--model``, a second table compares the MIS set of
the partitioned decoding (graphtransfer.solve.partitioned_mis, each part drawing its own features)
with the single-process local-max decoding of the same model. With ``--predict``, a third table: ``predict``
as a user runs it, one process against ``--partitions K`` (with the task's kernel before the split and
between passes, and the exact rules of every pass, then without reductions), on Erdős–Rényi graphs
of average degree 8 (seed 1, as ``graphtransfer graphs generate --generator erdos_renyi --avg-degree 8
--seed 1`` makes them). Prints Markdown tables for bench/RESULTS.md. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import resource
import threading
import time
from pathlib import Path

import numpy as np
import ray
import torch

from graphtransfer.config import ModelConfig, RunConfig
from graphtransfer.envs.protocol import Head
from graphtransfer.graphs import erdos_renyi, random_geometric, write_graph
from graphtransfer.graphs.partition import halo_share
from graphtransfer.nn import build_policy
from graphtransfer.solve.inference import obs_to_tensors, solve
from graphtransfer.solve.loading import load_policy
from graphtransfer.solve.partitioned import partitioned_node_outputs
from graphtransfer.solve.partitioned_mis import partitioned_decoding, predict_partitioned
from graphtransfer.solve.predict import predict_graph
from graphtransfer.tasks import TASKS
from graphtransfer.tasks.factory import inference_env

RULES = TASKS["mis"].partitioned_solve

FAMILIES = {
    "geometric": ("random geometric, degree 8", lambda n: random_geometric(n, 8.0, 0)),
    "erdos-renyi": ("Erdős–Rényi, degree 8", lambda n: erdos_renyi(n, 8.0, 0)),
}


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Ray's raylet and its workers, for a Ray started here)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def peak_mib(pid: int) -> float | None:
    """The peak resident memory (VmHWM) of process ``pid``, ``None`` once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmHWM")), None)


def is_worker(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::")
    except OSError:
        return False


class Watcher(threading.Thread):
    """Polls, every half second until :meth:`stop`, the peak of process ``pid`` and of every Ray
    worker below it (the object store's pages each touched included): a part's actor ends with
    its solve, so its peak is read while it runs."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.driver, self.workers, self._done = pid, 0.0, {}, threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.5):
            self.driver = max(self.driver, peak_mib(self.pid) or 0.0)
            for child in descendants(self.pid):
                if is_worker(child):
                    self.workers[child] = max(self.workers.get(child, 0.0), peak_mib(child) or 0.0)

    def stop(self) -> None:
        self._done.set()
        self.join()


def single_forward(policy, obs) -> tuple[np.ndarray, float]:
    started = time.perf_counter()
    with torch.inference_mode():
        outputs, _, _ = policy.node_outputs(obs_to_tensors(obs, policy.device), with_values=False)
    return outputs[0].numpy(), time.perf_counter() - started


def idle_worker_mib() -> float:
    """A Ray worker's peak memory after importing what a part's task imports, and doing nothing."""
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        ray.get(ray.remote(lambda: __import__("graphtransfer.solve.partitioned") and None).remote())
        return max(peak_mib(pid) or 0.0 for pid in descendants(os.getpid()) if is_worker(pid))
    finally:
        ray.shutdown()


def compare_sets(model: str, sizes: list[int], part_counts: list[int]) -> None:
    """The MIS set of the single-process local-max decoding (seeds 0 and 1) beside the partitioned one's."""
    print("| graph | nodes | single set (seed 0, 1) | single s | K | partitioned set | passes | partitioned s | size / single seed 0 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for nodes in sizes:
        for family, make in FAMILIES.values():
            graph = make(nodes)
            policy, env = load_policy(model, graph)
            singles = [solve(policy, env, seed=seed, decoding="local-max") for seed in (0, 1)]
            for parts in part_counts:
                ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
                try:
                    started = time.perf_counter()
                    found = partitioned_decoding(policy, graph, parts, RULES, seed=0)
                    seconds = time.perf_counter() - started
                finally:
                    ray.shutdown()
                size, reference = int(found.solution.sum()), singles[0].objective
                single = f"{reference:,.0f}, {singles[1].objective:,.0f} | {singles[0].seconds:.1f}"
                cells = f"{parts} | {size:,} | {found.passes} | {seconds:.1f} | {size / reference:.4f}"
                print(f"| {family} | {nodes:,} | {single} | {cells} |", flush=True)
    print()


def compare_predict(model: str, sizes: list[int], part_counts: list[int], folder: Path) -> None:
    """``predict`` in one process (its defaults) against ``predict --partitions K`` with and without reductions."""
    print("| graph | nodes | single set | single s | K | reductions | partitioned set | passes | kernels | partitioned s | / single |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    for nodes in sizes:
        graph = erdos_renyi(nodes, 8.0, 1)
        path = folder / f"er-{nodes}.npz"
        write_graph(graph, path)
        started = time.perf_counter()
        single, _ = predict_graph(model, graph)
        single_seconds = time.perf_counter() - started
        for parts in part_counts:
            for reductions in (True, False):
                started = time.perf_counter()
                found = predict_partitioned(model, path, folder / "set.csv", parts, "local", reductions=reductions)
                seconds = time.perf_counter() - started
                cells = f"{parts} | {'on' if reductions else 'off'} | {found.size:,} | {found.passes} | {found.kernels} | {seconds:.1f}"
                row = f"| Erdős–Rényi, degree 8 | {nodes:,} | {single.objective:,.0f} | {single_seconds:.1f} | {cells}"
                print(f"{row} | {found.size / single.objective:.4f} |", flush=True)
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="25000,100000")
    parser.add_argument("--parts", default="2,4,8")
    parser.add_argument("--model", help="a trained MIS model folder: also compare the decodings' sets")
    parser.add_argument("--mis-sizes", default="25000")
    parser.add_argument("--families", default=",".join(FAMILIES), help="which graph families, comma-separated")
    parser.add_argument("--predict", help="a model (folder or built-in name): predict in one process against --partitions")
    parser.add_argument("--predict-nodes", default="200000")
    parser.add_argument("--predict-parts", default="4")
    parser.add_argument("--folder", default="/tmp/bench-partitioned", help="where --predict writes its graphs and sets")
    args = parser.parse_args()
    torch.set_num_threads(1)
    command = f"python -m bench.partitioned --sizes {args.sizes} --parts {args.parts}"
    print(f"`{command}`, {time.strftime('%Y-%m-%d %H:%M')} UTC, load {' '.join(open('/proc/loadavg').read().split()[:3])} before\n")
    if args.predict:
        folder = Path(args.folder)
        folder.mkdir(parents=True, exist_ok=True)
        nodes, parts = [int(n) for n in args.predict_nodes.split(",")], [int(k) for k in args.predict_parts.split(",")]
        compare_predict(args.predict, nodes, parts, folder)
        return
    if args.model:
        compare_sets(args.model, [int(n) for n in args.mis_sizes.split(",")], [int(k) for k in args.parts.split(",")])
    print(f"an idle Ray worker (graphtransfer imported): {idle_worker_mib():,.0f} MiB peak\n")
    print("| graph | nodes | K | halo / nodes | single forward s | partitioned s | max abs diff | worker peak MiB | driver peak MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for nodes in (int(n) for n in args.sizes.split(",")):
        for family, make in (FAMILIES[name] for name in args.families.split(",")):
            graph = make(nodes)
            env = inference_env(RunConfig(task="mis"), graph)
            torch.manual_seed(0)
            policy = build_policy(Head.NODE_WISE, ModelConfig(), env.observation_space, env.action_space)
            obs, _ = env.reset(seed=0)
            expected, single_seconds = single_forward(policy, obs)
            for parts in (int(k) for k in args.parts.split(",")):
                ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
                try:
                    watcher = Watcher(os.getpid())
                    watcher.start()
                    started = time.perf_counter()
                    outputs, split_parts = partitioned_node_outputs(policy, graph, parts, RULES, draw=obs["x"][:, 4])
                    seconds = time.perf_counter() - started
                    watcher.stop()
                    peak = max(watcher.workers.values())
                finally:
                    ray.shutdown()
                difference = float(np.abs(outputs - expected).max())
                driver = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                cells = f"{halo_share(split_parts):.2f} | {single_seconds:.2f} | {seconds:.2f} | {difference:.1e}"
                print(f"| {family} | {nodes:,} | {parts} | {cells} | {peak:,.0f} | {driver:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
