"""Policy + search (``predict --polish``) against the same search started from greedy, at equal
wall-clock seconds (MIS).

Per graph, interleaved under the same load, each arm gets ``--seconds`` of wall-clock time in all:

- ``greedy+ILS``: the iterated local search from min-degree greedy (greedy's time counted);
- ``policy+ILS``: ``predict``'s solve (model loaded, ``--rollouts``, default 1), then the same search
  from the policy's set for the seconds left;
- ``chils`` (with ``--chils``; ``pip install 'graphtransfer[chils]'``): CHILS searching for the same seconds, the
  graph's transfer into the library on top.

    .venv/bin/python bench/guided_search.py --model runs/mis/small [--sizes 1000,10000,100000] [--seconds 10] [--seeds 0]
        [--rollouts 1] [--chils]

Prints a Markdown table, one row per graph as it finishes. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import numpy as np
import torch

from graphtransfer.baselines.chils import chils_mis
from graphtransfer.baselines.local_search import iterated_local_search
from graphtransfer.baselines.mis import greedy_min_degree
from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.envs import is_independent_set
from graphtransfer.graphs import Graph, barabasi_albert, erdos_renyi, random_geometric
from graphtransfer.solve.polishing import polish
from graphtransfer.solve.predict import predict_graph

FAMILIES: dict[str, Callable[[int, int], Graph]] = {
    "er-d8": lambda n, seed: erdos_renyi(n, 8.0, seed),
    "er-d64": lambda n, seed: erdos_renyi(n, 64.0, seed),
    "ba-m4": lambda n, seed: barabasi_albert(n, 4, seed),
    "rgg-d8": lambda n, seed: random_geometric(n, 8.0, seed),
}


def greedy_arm(graph: Graph, seconds: float, seed: int) -> tuple[int, float]:
    started = time.perf_counter()
    found = iterated_local_search(graph, time_budget=seconds, seed=seed).solution
    return _checked(graph, found), time.perf_counter() - started


def policy_arm(checkpoint, graph: Graph, seconds: float, seed: int, rollouts: int) -> tuple[int, int, float]:
    """(policy alone, after the search, wall seconds)."""
    started = time.perf_counter()
    solution, _ = predict_graph(checkpoint, graph, seed=seed, rollouts=rollouts)
    left = max(seconds - (time.perf_counter() - started), 0.01)
    polished = polish("mis", graph, solution.solution, left, seed)
    return int(solution.objective), _checked(graph, polished.solution), time.perf_counter() - started


def chils_arm(graph: Graph, seconds: float, seed: int) -> tuple[int, float]:
    started = time.perf_counter()
    found = chils_mis(graph, seconds, seed)  # the graph's transfer to the library comes on top of the seconds
    return _checked(graph, found), time.perf_counter() - started


def _checked(graph: Graph, found: np.ndarray) -> int:
    if not is_independent_set(graph, found):
        raise SystemExit(f"{graph.name}: a set that is not independent")
    return int(found.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="runs/mis/small")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--chils", action="store_true")
    parser.add_argument("--rollouts", type=int, default=1, help="of the policy before the search (predict's --rollouts)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    checkpoint = read_checkpoint(args.model)
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, {args.seconds:g} s per arm, model {args.model}\n")
    header = "| graph | greedy | policy | greedy+ILS (s) | policy+ILS (s) |" + (" CHILS (s) |" if args.chils else "")
    print(header + " policy+ILS / greedy+ILS |")
    print("|---" * (header.count("|") + 1) + "|")
    for size in map(int, args.sizes.split(",")):
        for family in args.families.split(","):
            for seed in map(int, args.seeds.split(",")):
                graph = FAMILIES[family](size, seed)
                greedy = int(greedy_min_degree(graph).sum())
                base, base_s = greedy_arm(graph, args.seconds, seed)
                alone, plain, plain_s = policy_arm(checkpoint, graph, args.seconds, seed, args.rollouts)
                cells = [
                    f"{family} n={size:,} s{seed}",
                    f"{greedy:,}",
                    f"{alone:,}",
                    f"{base:,} ({base_s:.1f})",
                    f"{plain:,} ({plain_s:.1f})",
                ]
                if args.chils:
                    found, chils_s = chils_arm(graph, args.seconds, seed)
                    cells.append(f"{found:,} ({chils_s:.1f})")
                cells.append(f"{plain / base:.4f}")
                print("| " + " | ".join(cells) + " |", flush=True)
    print(f"\nload {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
