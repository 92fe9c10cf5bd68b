"""The built-in MIS model on graphs drawn as the published learned-MIS benchmarks draw them
(Erdős–Rényi, 700-800 nodes, p = 0.15; and 9,000-11,000 nodes, p = 0.02; our own draws, sizes
uniform in the range, seeds 0..K-1): the policy alone (``predict``'s defaults), ``predict --polish
SECONDS`` (the policy's seconds on top, as the command takes them), min-degree greedy and CHILS for
SECONDS (``pip install chils``; one thread with ``OMP_NUM_THREADS=1``). Means over the graphs; the
published means to compare with (KaMIS 44.87 / 381.31; the best learned methods without search
43.50 / 365.03) are in issue 68 and ``docs/guide/tasks.md``. One torch thread; the load average
beside every row.

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python -m bench.benchmark_distributions            # ~9 min on 2 cores
    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python -m bench.benchmark_distributions --small 128 --large 16
"""

from __future__ import annotations

import argparse
import os
import statistics

import numpy as np
import torch

from graphtransfer.config import Decoding
from graphtransfer.graphs import Graph, erdos_renyi
from graphtransfer.solve.polishing import polish
from graphtransfer.solve.predict import predict_graph
from graphtransfer.tasks import TASKS
from graphtransfer.tasks.mis.baselines import greedy_min_degree
from graphtransfer.tasks.mis.chils import chils_available, chils_mis
from graphtransfer.zoo import zoo_folder

DISTRIBUTIONS = {"ER 700-800, p = 0.15": (700, 800, 0.15), "ER 9,000-11,000, p = 0.02": (9_000, 11_000, 0.02)}


def draw(low: int, high: int, p: float, seed: int) -> Graph:
    nodes = int(np.random.default_rng(seed).integers(low, high + 1))
    return erdos_renyi(nodes, p * (nodes - 1), seed)


def row(name: str, graphs: list[Graph], seconds: float) -> str:
    model = str(zoo_folder("mis"))
    policy, polished, greedy, chils, took = [], [], [], [], []
    for graph in graphs:
        solution, _ = predict_graph(model, graph, Decoding())
        policy.append(solution.objective)
        took.append(solution.seconds)
        polished.append(polish(TASKS["mis"], graph, solution.solution, seconds).objective)
        greedy.append(int(greedy_min_degree(graph).sum()))
        if chils_available():
            chils.append(int(chils_mis(graph, seconds).sum()))
    best = f"{statistics.mean(chils):.2f}" if chils else "not installed"
    return (
        f"| {name} | {len(graphs)} | {statistics.mean(greedy):.2f} | {statistics.mean(policy):.2f} ({statistics.mean(took):.1f} s) | "
        f"{statistics.mean(polished):.2f} | {best} | {os.getloadavg()[0]:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=16, help="graphs drawn from the 700-800-node distribution")
    parser.add_argument("--large", type=int, default=4, help="graphs drawn from the 9,000-11,000-node distribution")
    parser.add_argument("--seconds", type=float, default=10.0, help="--polish's and CHILS's budget")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"| distribution | graphs | greedy | policy (s) | + polish {args.seconds:.0f} s | CHILS {args.seconds:.0f} s | load |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for (name, (low, high, p)), count in zip(DISTRIBUTIONS.items(), (args.small, args.large), strict=True):
        print(row(name, [draw(low, high, p, seed) for seed in range(count)], args.seconds), flush=True)


if __name__ == "__main__":
    main()
