"""Path and matching quality of trained policies, zero-shot on graphs far larger than their
training graphs (issue 30): path against Dijkstra (and the rule that follows the env's guide
alone), matching against greedy-by-weight (and greedy-by-gain, the rule the env's gain features
point at). Prints one markdown row per graph; the policy runs as ``predict`` runs it (one
rollout), sampled and deterministic.

    python -m bench.path_matching_quality --task path --model runs/path/small
    python -m bench.path_matching_quality --task matching --model runs/matching/small --sizes 1000 10000 100000
    python -m bench.path_matching_quality --task rounds --sizes 10000    # greedy by gain per PRICE_ROUNDS, no model
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from graphtransfer.config import Decoding
from graphtransfer.graphs import Graph, barabasi_albert, delaunay, erdos_renyi, random_geometric
from graphtransfer.graphs.graph import from_edges
from graphtransfer.solve.predict import predict_graph
from graphtransfer.tasks import MatchingEnv, PathEnv
from graphtransfer.tasks.matching.baselines import greedy_by_gain, greedy_by_weight
from graphtransfer.tasks.path.baselines import dijkstra_route


def grid(num_nodes: int, seed: int = 0) -> Graph:
    """The square grid of about ``num_nodes`` nodes (4-neighbour lattice)."""
    side = round(num_nodes**0.5)
    ids = np.arange(side * side).reshape(side, side)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    return from_edges(src, dst, side * side, f"grid-{side}x{side}")[0]


FAMILIES = {
    "rgg": lambda n, seed: random_geometric(n, 8.0, seed),
    "grid": grid,
    "delaunay": delaunay,
    "er": lambda n, seed: erdos_renyi(n, 4.0, seed),
    "ba": lambda n, seed: barabasi_albert(n, 4, seed),
}
DEFAULT_FAMILIES = {"path": ["rgg", "grid", "delaunay"], "matching": ["rgg", "grid", "er", "ba"], "rounds": ["er", "ba", "rgg", "grid"]}
ROUNDS = (1, 2, 3, 5, 8, 12, 20)


def guide_rule(graph: Graph) -> tuple[float, int]:
    """The route of the rule that follows the env's guide alone: the allowed neighbour with the
    least edge length plus guide potential (both as the observation shows them)."""
    env = PathEnv([graph], horizon=2**31 - 1)
    obs, _ = env.reset(seed=0)
    done, steps = False, 0
    while not done:
        allowed = np.flatnonzero(env.action_masks())
        node = allowed[np.argmin(obs["x"][allowed, 4] + obs["x"][allowed, 6])]
        obs, _, terminated, truncated, _ = env.step(int(node))
        done, steps = terminated or truncated, steps + 1
    return PathEnv.objective(graph, env.solution()), steps


def timed(fn):
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def policy_cells(model: str, graph: Graph, reference: float, digits: int) -> str:
    """The policy's table cells, sampled then deterministic, one rollout each: its objective over
    ``reference``, whether it is feasible, its passes and seconds; ends the row."""
    cells = []
    for deterministic in (False, True):
        solution, _ = predict_graph(model, graph, Decoding(rollouts=1, deterministic=deterministic))
        ok = "yes" if solution.feasible else "NO"
        cells.append(f"{solution.objective / reference:.{digits}f} ({ok}, {solution.passes} passes, {solution.seconds:.1f} s)")
    return " | ".join(cells) + " |"


def path_row(model: str, graph: Graph) -> str:
    shortest, dijkstra_seconds = timed(lambda: PathEnv.objective(graph, dijkstra_route(graph)))
    (rule, _), _ = timed(lambda: guide_rule(graph))
    cells = policy_cells(model, graph, shortest, digits=3)
    return f"| {graph.name} | {graph.num_nodes:,} | {shortest:.2f} ({dijkstra_seconds:.2f} s) | {rule / shortest:.3f} | " + cells


def matching_row(model: str, graph: Graph) -> str:
    greedy, greedy_seconds = timed(lambda: MatchingEnv.objective(graph, greedy_by_weight(graph)))
    gain, gain_seconds = timed(lambda: MatchingEnv.objective(graph, greedy_by_gain(graph)))
    cells = policy_cells(model, graph, greedy, digits=4)
    return (
        f"| {graph.name} | {graph.num_nodes:,} | {greedy:.1f} ({greedy_seconds:.2f} s) | {gain / greedy:.4f} ({gain_seconds:.2f} s) | "
        + cells
    )


def rounds_row(model: str | None, graph: Graph) -> str:
    """Greedy by gain over greedy by weight for each number of message-passing rounds."""
    greedy = MatchingEnv.objective(graph, greedy_by_weight(graph))
    return (
        f"| {graph.name} | " + " | ".join(f"{MatchingEnv.objective(graph, greedy_by_gain(graph, r)) / greedy:.4f}" for r in ROUNDS) + " |"
    )


HEADERS = {
    "path": "| graph | nodes | Dijkstra length (s) | guide rule / Dijkstra | policy sampled / Dijkstra | deterministic / Dijkstra |\n"
    "|---|---:|---:|---:|---:|---:|",
    "matching": "| graph | nodes | greedy by weight (s) | greedy by gain / greedy | policy sampled / greedy | deterministic / greedy |\n"
    "|---|---:|---:|---:|---:|---:|",
    "rounds": "| graph | " + " | ".join(map(str, ROUNDS)) + " |\n|---|" + "---:|" * len(ROUNDS),
}
ROWS = {"path": path_row, "matching": matching_row, "rounds": rounds_row}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=sorted(ROWS), required=True)
    parser.add_argument("--model", help="model folder trained on small graphs (path, matching)")
    parser.add_argument("--families", nargs="+", choices=sorted(FAMILIES))
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 50_000, 250_000])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.task != "rounds" and args.model is None:
        parser.error(f"--task {args.task} needs --model")
    print(HEADERS[args.task])
    row = ROWS[args.task]
    for family in args.families or DEFAULT_FAMILIES[args.task]:
        for size in args.sizes:
            print(row(args.model, FAMILIES[family](size, args.seed)), flush=True)


if __name__ == "__main__":
    main()
