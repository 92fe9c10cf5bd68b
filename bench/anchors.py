"""Every built-in task but MIS against its strongest anchor: the policy alone, the policy + the
task's search, and the anchor, with seconds, on 2-3 families at 10^3-10^4 nodes. Indicative: tiny
models (``graphtransfer train --task T --graphs small --steps 10000``, about 35 s each on 2 cores,
trained here into ``--runs`` when a task's folder is missing), one rollout, one torch thread, and
the load average printed beside the timings (the machine is shared).

    python -m bench.anchors                                  # maxcut, matching, mvc-weighted, path; ~5 min on 2 cores
    python -m bench.anchors --tasks maxcut --sizes 1000 10000 --seconds 10

Anchors: maxcut, the tabu search from a random cut for ``--seconds`` (whole budget), against the
policy + the iterated local search from its cut for what is left of the same seconds (``predict
--polish``'s search), and the same search from the anchor's random cut for all of them;
matching, the optimum (HiGHS, ``exact_milp``), against the policy + matching's local search
(``predict --polish``'s) for what is left of ``--seconds``, and greedy + the same search for all
of them; mvc-weighted, CHILS for ``--seconds`` where installed (``pip install chils``; else greedy
weight/degree), against the policy + the heavy-set search (``predict --polish``'s) for what is
left of ``--seconds``, and greedy + the same search for all of them; path, Dijkstra (exact).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from graphtransfer.config import Decoding
from graphtransfer.graphs import Graph, barabasi_albert, erdos_renyi, random_geometric
from graphtransfer.graphs.weights import node_weights
from graphtransfer.solve.polishing import polish
from graphtransfer.solve.predict import predict_graph
from graphtransfer.tasks import TASKS, MatchingEnv, MaxCutEnv, PathEnv
from graphtransfer.tasks.matching.baselines import DEFAULT_MILP_SECONDS, exact_milp, greedy_by_weight
from graphtransfer.tasks.maxcut.baselines import greedy_one_flip
from graphtransfer.tasks.maxcut.search import tabu_search
from graphtransfer.tasks.mis.chils import chils_available, chils_cover
from graphtransfer.tasks.mvc.baselines import greedy_weight_degree
from graphtransfer.tasks.path.baselines import dijkstra_route

FAMILIES = {
    "er": lambda n, seed, degree: erdos_renyi(n, degree or 4.0, seed),
    "ba": lambda n, seed, degree: barabasi_albert(n, round(degree / 2) if degree else 4, seed),
    "rgg": lambda n, seed, degree: random_geometric(n, degree or 6.0, seed),
}
TRAIN_STEPS = 10_000


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


def timed(fn):
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def ensure_model(runs: Path, task: str, steps: int) -> Path:
    """The tiny model of ``task`` under ``runs``, trained by the CLI if it is not there yet."""
    folder = runs / task
    if not (folder / "config.yaml").exists():
        command = [str(Path(sys.executable).parent / "graphtransfer"), "train", "--task", task, "--graphs", "small"]
        subprocess.run([*command, "--steps", str(steps), "--no-progress", "--device", "cpu", "--out", str(folder)], check=True)
    return folder


def policy(model: Path, graph: Graph):
    solution, _ = predict_graph(str(model), graph, Decoding(rollouts=1))
    return solution


def maxcut_row(model: Path, graph: Graph, seconds: float) -> str:
    found = policy(model, graph)
    left = max(seconds - found.seconds, 0.1)
    searched = polish(TASKS["maxcut"], graph, found.solution, left).objective  # predict --polish's search
    start = np.random.default_rng(0).integers(0, 2, graph.num_nodes, dtype=np.int8)
    anchor = tabu_search(graph, start, seconds).cut
    from_random = polish(TASKS["maxcut"], graph, start, seconds).objective
    one_flip = MaxCutEnv.objective(graph, greedy_one_flip(graph))
    return (
        f"| {graph.name} | {graph.num_nodes:,} | {found.objective / anchor:.4f} ({found.seconds:.1f} s) | "
        f"{searched / anchor:.4f} ({seconds:.0f} s) | {anchor:,} ({seconds:.0f} s) | "
        f"{one_flip / anchor:.4f} ({from_random / anchor:.4f}) | {load()} |"
    )


def matching_row(model: Path, graph: Graph, seconds: float) -> str:
    found = policy(model, graph)
    left = max(seconds - found.seconds, 0.1)
    searched = polish(TASKS["matching"], graph, found.solution, left).objective  # predict --polish's local search
    exact, exact_seconds = timed(lambda: exact_milp(graph, time_limit=max(seconds, DEFAULT_MILP_SECONDS)))
    optimum = MatchingEnv.objective(graph, exact.solution)
    start = greedy_by_weight(graph)
    greedy = MatchingEnv.objective(graph, start)
    greedy_searched = polish(TASKS["matching"], graph, start, seconds).objective
    proven = "optimal" if exact.optimal else "not proven"
    anchor = f"{optimum:,.1f} ({proven}, {exact_seconds:.1f} s)"
    as_long = polish(TASKS["matching"], graph, found.solution, max(exact_seconds - found.seconds, 0.05)).objective  # the anchor's seconds
    searches = f"{searched / optimum:.4f} ({seconds:.0f} s); {as_long / optimum:.4f} (the anchor's s)"
    return (
        f"| {graph.name} | {graph.num_nodes:,} | {found.objective / optimum:.4f} ({found.seconds:.1f} s) | {searches} | {anchor} | "
        f"{greedy / optimum:.4f} ({greedy_searched / optimum:.4f}) | {load()} |"
    )


def mvc_weighted_row(model: Path, graph: Graph, seconds: float) -> str:
    found = policy(model, graph)
    left = max(seconds - found.seconds, 0.1)
    searched = polish(TASKS["mvc-weighted"], graph, found.solution, left).objective  # predict --polish's search
    weights = node_weights(graph)
    if chils_available():
        cover, anchor_seconds = timed(lambda: chils_cover(graph, seconds))
        name = "CHILS"
    else:
        cover, anchor_seconds = timed(lambda: greedy_weight_degree(graph))
        name = "greedy w/d (CHILS not installed)"
    anchor = float(weights[cover].sum())
    start = greedy_weight_degree(graph)
    greedy = float(weights[start].sum())
    greedy_searched = polish(TASKS["mvc-weighted"], graph, start, seconds).objective
    return (
        f"| {graph.name} | {graph.num_nodes:,} | {found.objective / anchor:.4f} ({found.seconds:.1f} s) | "
        f"{searched / anchor:.4f} ({seconds:.0f} s) | {anchor:,.0f} ({name}, {anchor_seconds:.1f} s) | "
        f"{greedy / anchor:.4f} ({greedy_searched / anchor:.4f}) | {load()} |"
    )


def path_row(model: Path, graph: Graph, seconds: float) -> str:
    found = policy(model, graph)
    shortest, dijkstra_seconds = timed(lambda: PathEnv.objective(graph, dijkstra_route(graph)))
    ok = "" if found.feasible else ", infeasible"
    return (
        f"| {graph.name} | {graph.num_nodes:,} | {found.objective / shortest:.4f} ({found.seconds:.1f} s{ok}) | — | "
        f"{shortest:,.2f} (Dijkstra, {dijkstra_seconds:.2f} s) | — | {load()} |"
    )


ROWS = {"maxcut": maxcut_row, "matching": matching_row, "mvc-weighted": mvc_weighted_row, "path": path_row}
SENSE = {"maxcut": "higher is better", "matching": "higher is better", "mvc-weighted": "lower is better", "path": "lower is better"}
OTHER = {
    "maxcut": "one-flip / anchor (the search from the random cut, same s)",
    "matching": "greedy by weight / anchor (+ search, same s)",
    "mvc-weighted": "greedy w/d / anchor (+ search, same s)",
    "path": "—",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", choices=sorted(ROWS), default=list(ROWS))
    parser.add_argument("--families", nargs="+", choices=sorted(FAMILIES), default=list(FAMILIES))
    parser.add_argument("--sizes", nargs="+", type=int, default=[1000, 10_000])
    parser.add_argument("--degree", type=float, default=None, help="every family's average degree (default: ER 4, BA m = 4, RGG 6)")
    parser.add_argument("--seconds", type=float, default=5.0, help="the anchor's and policy + search's budget")
    parser.add_argument("--runs", type=Path, default=Path("runs/anchors"), help="the tiny models, one folder per task")
    parser.add_argument("--steps", type=int, default=TRAIN_STEPS, help="training steps of a model trained here")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    for task in args.tasks:
        model = ensure_model(args.runs, task, args.steps)
        print(f"\n### {task} ({SENSE[task]}; policy from {model}, {load()})\n")
        print(f"| graph | nodes | policy / anchor (s) | policy + search / anchor (s) | anchor (s) | {OTHER[task]} | load |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for family in args.families:
            for size in args.sizes:
                print(ROWS[task](model, FAMILIES[family](size, args.seed, args.degree), args.seconds), flush=True)


if __name__ == "__main__":
    main()
