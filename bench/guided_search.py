"""Policy + search (``predict --polish``) against the same search started from greedy, at equal
wall-clock seconds or at equal search iterations (MIS).

Per graph, interleaved under the same load, each arm gets ``--seconds`` of wall-clock time in all
(the policy's time counted against it), or, with ``--iterations K``, ``K`` perturbations of the
search whatever the time (the result then depends only on the graph, the start and the seed, not
on the machine's load; the policy's seconds are printed beside it):

- ``greedy``: the iterated local search from min-degree greedy (greedy's time counted);
- ``policy``: the best of ``--rollouts`` policy rollouts (predict's), then the same search from it;
- ``guided``: as ``policy``, with the perturbations drawn by the policy's scores
  (:func:`graphtransfer.tasks.mis.local_search.guided_weights` at ``--temperature``, from the
  policy's first pass on the whole graph);
- ``multi``: the ``--starts`` best distinct sets of ``--rollouts`` rollouts, each searched for an
  equal share of what is left, the best kept;
- ``alone``: the policy without search (its seconds are the policy's);
- ``greedy-kernel``, ``policy-kernel``: as ``greedy`` and ``policy``, the search run on the graph's
  kernel (:func:`graphtransfer.tasks.mis.local_search.reduced_search`, what ``predict --polish`` and
  the baselines run since the seventeenth session; its kernel's time counted; seconds mode only);
- ``chils`` (``pip install 'graphtransfer[chils]'``): CHILS for the same seconds, the graph's
  transfer into the library on top (seconds mode only);
- ``predict``: ``predict --polish`` as users run it: the default decoding (``--rollouts auto``, the
  model's experts taking turns, patience), then the search on the kernel the policy solved for the
  seconds left (seconds mode only; ``--rollouts`` does not apply).

    .venv/bin/python bench/guided_search.py --model runs/mis/small [--sizes 1000,10000,100000] [--seconds 10]
        [--iterations K] [--seeds 0] [--arms greedy,policy,guided,multi] [--rollouts 1] [--starts 4]
        [--temperature 1] [--families er-d8,er-d64,ba-m4,rgg-d8,dl]
    .venv/bin/python bench/guided_search.py --model mis --arms greedy,greedy-kernel,policy,policy-kernel --sizes 10000,100000

Prints a Markdown table, one row per graph as it finishes. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from copy import copy
from dataclasses import dataclass

import numpy as np
import torch

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.graphs import Graph, barabasi_albert, delaunay, erdos_renyi, random_geometric
from graphtransfer.solve.ordering import solving_order
from graphtransfer.solve.polishing import policy_starts, polish
from graphtransfer.solve.predict import predict_graph
from graphtransfer.tasks import TASKS, is_independent_set
from graphtransfer.tasks.mis.baselines import greedy_min_degree
from graphtransfer.tasks.mis.chils import chils_mis
from graphtransfer.tasks.mis.local_search import guided_weights, iterated_local_search, reduced_search

FAMILIES: dict[str, Callable[[int, int], Graph]] = {
    "er-d8": lambda n, seed: erdos_renyi(n, 8.0, seed),
    "er-d16": lambda n, seed: erdos_renyi(n, 16.0, seed),
    "er-d64": lambda n, seed: erdos_renyi(n, 64.0, seed),
    "ba-m4": lambda n, seed: barabasi_albert(n, 4, seed),
    "rgg-d8": lambda n, seed: random_geometric(n, 8.0, seed),
    "rgg-d64": lambda n, seed: random_geometric(n, 64.0, seed),
    "dl": lambda n, seed: delaunay(n, seed),
}
ARMS = ("greedy", "policy", "guided", "multi", "alone", "chils", "greedy-kernel", "policy-kernel", "predict")


@dataclass
class Arm:
    size: int = 0
    policy: int = 0  # the policy's own best set, before the search
    iterations: int = 0
    seconds: float = 0.0  # on the bench's clock


def search(
    graph: Graph, start: np.ndarray | None, left: float, args, seed: int, weights=None, kernel: bool = False
) -> tuple[np.ndarray, int]:
    budget = 1e9 if args.iterations else max(left, 0.01)
    if kernel:
        reduced = reduced_search(graph, start=start, time_budget=budget, seed=seed, stall_per_node=None, clock=args.clock)
        return reduced.solution, reduced.iterations
    result = iterated_local_search(
        graph, start=start, time_budget=budget, max_iterations=args.iterations, seed=seed, weights=weights, clock=args.clock
    )
    return result.solution, result.iterations


def run_arm(arm: str, checkpoint, graph: Graph, args, seed: int) -> Arm:
    clock = args.clock
    started = clock()
    kernel = arm.endswith("-kernel")
    arm = arm.removesuffix("-kernel")
    if arm == "greedy":
        found, iterations = search(graph, None, args.seconds, args, seed, kernel=kernel)
        return Arm(_checked(graph, found), 0, iterations, clock() - started)
    if arm == "chils":
        found = chils_mis(graph, args.seconds, seed)
        return Arm(_checked(graph, found), 0, 0, clock() - started)
    if arm == "predict":
        order = solving_order(checkpoint.config, graph)
        solution, _ = predict_graph(checkpoint, graph, order=order)
        polished = polish(TASKS["mis"], graph, solution.solution, max(args.seconds - (clock() - started), 0.01), seed, order.kernel)
        return Arm(_checked(graph, polished.solution), int(solution.objective), polished.iterations, clock() - started)
    count = args.starts if arm == "multi" else 1
    starts = policy_starts(checkpoint, graph, args.rollouts, seed, count, scores=arm == "guided")
    if arm == "alone":
        return Arm(_checked(graph, starts.sets[0]), int(starts.sets[0].sum()), 0, clock() - started)
    best, done = None, 0
    for k, start in enumerate(starts.sets):
        left = (args.seconds - (clock() - started)) / (len(starts.sets) - k)
        share = _with_iterations(args, None if args.iterations is None else max(args.iterations // len(starts.sets), 1))
        weights = guided_weights(starts.scores, start, args.temperature) if arm == "guided" else None
        found, iterations = search(graph, start, left, share, seed + k, weights, kernel)
        done += iterations
        if best is None or found.sum() > best.sum():
            best = found
    return Arm(_checked(graph, best), int(starts.sets[0].sum()), done, clock() - started)


def _with_iterations(args, iterations: int | None):
    shared = copy(args)
    shared.iterations = iterations
    return shared


def _checked(graph: Graph, found: np.ndarray) -> int:
    if not is_independent_set(graph, found):
        raise SystemExit(f"{graph.name}: a set that is not independent")
    return int(found.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="runs/mis/small")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--families", default="er-d8,er-d64,ba-m4,rgg-d8")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--iterations", type=int, default=None, help="equal search iterations per arm instead of equal seconds")
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--arms", default="greedy,policy")
    parser.add_argument("--rollouts", type=int, default=1, help="policy rollouts before the search (predict's --rollouts)")
    parser.add_argument("--starts", type=int, default=4, help="sets the multi arm searches from")
    parser.add_argument("--temperature", type=float, default=1.0, help="of the guided arm's softmax")
    parser.add_argument("--cpu", action="store_true", help="seconds of this process's CPU time, not wall-clock")
    args = parser.parse_args()
    args.clock = time.process_time if args.cpu else time.perf_counter
    arms = args.arms.split(",")
    if not set(arms) <= set(ARMS):
        raise SystemExit(f"--arms {args.arms}: choose from {', '.join(ARMS)}")
    if args.iterations and any(arm.endswith("-kernel") or arm == "predict" for arm in arms):
        raise SystemExit("the -kernel and predict arms search for --seconds only; drop --iterations")
    torch.set_num_threads(1)
    checkpoint = read_checkpoint(args.model)
    budget = f"{args.iterations:,} iterations" if args.iterations else f"{args.seconds:g} {'CPU ' if args.cpu else ''}s"
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, {budget} per arm, rollouts {args.rollouts}, model {args.model}\n")
    header = "| graph | greedy | policy alone | " + " | ".join(f"{arm}+ILS (iterations, s)" for arm in arms)
    header += "".join(f" | {a} / {arms[0]}" for a in arms[1:]) + " | load |"
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for size in map(int, args.sizes.split(",")):
        for family in args.families.split(","):
            for seed in map(int, args.seeds.split(",")):
                graph = FAMILIES[family](size, seed)
                greedy = int(greedy_min_degree(graph).sum())
                found = {arm: run_arm(arm, checkpoint, graph, args, seed) for arm in arms}
                alone = max(arm.policy for arm in found.values())
                cells = [f"{family} n={size:,} s{seed}", f"{greedy:,}", f"{alone:,}"]
                cells += [f"{a.size:,} ({a.iterations:,}, {a.seconds:.1f})" for a in found.values()]
                cells += [f"{found[a].size / found[arms[0]].size:.4f}" for a in arms[1:]]
                cells.append(f"{os.getloadavg()[0]:.1f}")
                print("| " + " | ".join(cells) + " |", flush=True)
    print(f"\nload {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
