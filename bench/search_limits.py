"""Where a policy could make the iterated local search better (MIS), three measurements on graphs
of ``bench.guided_search``'s families (``--seeds``, default 0), budgets in this process's CPU seconds, torch on one
thread, the policy's own seconds counted against its arm:

- ``budgets``: the search from min-degree greedy against the same search from the policy's set,
  at several budgets, the policy decoding by default and with ``--commit-fraction`` (fewer
  passes, more of the budget left to the search);
- ``rebuild``: after ``--seconds`` of search from greedy, ``--balls`` breadth-first balls of
  ``--ball`` nodes are cleared and rebuilt (the nodes of the ball not adjacent to the set outside
  it) by the policy, by greedy and exactly (HiGHS); how often each rebuild beats what the search
  had there, and its milliseconds: a policy-guided rebuild inside the search could gain only where
  the exact rebuild does;
- ``freeze``: the policy's most confident set members (a share ``--shares`` of its set, by its
  first-pass log-odds) are fixed with their neighbours, the search runs on the rest of the graph
  until it stalls, then on the whole graph for what is left; against the search from greedy and
  from the policy's set. ``degree`` freezes greedy's lowest-degree members instead (no policy).

    .venv/bin/python -m bench.search_limits budgets --sizes 100000 --families er-d16,rgg-d8,dl --budgets 3,5,10,20
    .venv/bin/python -m bench.search_limits rebuild --sizes 10000,100000 --families er-d16,rgg-d8,dl --ball 500 --balls 30
    .venv/bin/python -m bench.search_limits freeze --sizes 100000 --families er-d16,rgg-d8 --shares 0.5,0.8

Prints Markdown tables. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from bench.guided_search import FAMILIES
from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.graphs import Graph
from graphtransfer.graphs.graph import induced_subgraph
from graphtransfer.solve.evaluate import finish_rule
from graphtransfer.solve.inference import solve
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.solve.ordering import solving_order
from graphtransfer.solve.polishing import policy_starts
from graphtransfer.tasks import is_independent_set
from graphtransfer.tasks.mis.baselines import exact_milp, greedy_min_degree
from graphtransfer.tasks.mis.local_search import STALL_PER_NODE, iterated_local_search

clock = time.process_time


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def policy_set(checkpoint, graph: Graph, commit_fraction: float | None) -> np.ndarray:
    """One local-max rollout of the policy, seed 0, as predict's first rollout."""
    order = solving_order(checkpoint.config, graph)
    loaded = policy_for_graphs(checkpoint, [order.graph])
    found = solve(loaded.policy, loaded.env, finish=finish_rule(checkpoint.config), seed=0, commit_fraction=commit_fraction)
    return order.restore(found).solution.astype(bool)


def searched(graph: Graph, start: np.ndarray | None, budget: float, started: float) -> tuple[int, int, float]:
    """The search from ``start`` (None: greedy) for what is left of ``budget`` since ``started``:
    size, iterations, CPU seconds since ``started``."""
    left = budget - (clock() - started)
    if left <= 0:
        return int(start.sum()), 0, clock() - started
    result = iterated_local_search(graph, start=start, time_budget=left, seed=0, clock=clock)
    return int(result.solution.sum()), result.iterations, clock() - started


def budgets(checkpoint, graph: Graph, label: str, args) -> None:
    for budget in map(float, args.budgets.split(",")):
        started = clock()
        greedy = searched(graph, None, budget, started)
        arms = []
        for fraction in (None, args.commit_fraction):
            started = clock()
            arms.append(searched(graph, policy_set(checkpoint, graph, fraction), budget, started))
        cells = [f"{size:,} ({iterations:,}, {seconds:.1f})" for size, iterations, seconds in (greedy, *arms)]
        ratios = [f"{arm[0] / greedy[0]:.4f}" for arm in arms]
        print(f"| {label} | {budget:g} | " + " | ".join(cells + ratios) + f" | {load()} |", flush=True)


def ball(indptr: np.ndarray, indices: np.ndarray, root: int, size: int) -> list[int]:
    nodes, seen, i = [root], {root}, 0
    while i < len(nodes) and len(nodes) < size:
        for u in indices[indptr[nodes[i]] : indptr[nodes[i] + 1]].tolist():
            if u not in seen and len(nodes) < size:
                seen.add(u)
                nodes.append(u)
        i += 1
    return nodes


def rebuild(checkpoint, graph: Graph, label: str, args) -> None:
    chosen = iterated_local_search(graph, time_budget=args.seconds, seed=0, clock=clock).solution
    indptr, indices = graph.csr()
    src, dst = graph.edge_index
    rng = np.random.default_rng(0)
    rebuilders = {
        "policy": lambda sub, k: policy_starts(checkpoint, sub, 1, k).sets[0],
        "greedy": lambda sub, k: greedy_min_degree(sub),
        "exact": lambda sub, k: exact_milp(sub, time_limit=5.0).solution,
    }
    tally = {name: [0, 0, 0, 0.0] for name in rebuilders}  # better, equal, worse, CPU seconds
    free = []
    for k in range(args.balls):
        region = np.zeros(graph.num_nodes, dtype=bool)
        region[ball(indptr, indices, int(rng.integers(graph.num_nodes)), args.ball)] = True
        blocked = np.zeros(graph.num_nodes, dtype=bool)
        blocked[dst[(chosen & ~region)[src]]] = True
        sub, _ = induced_subgraph(graph, region & ~blocked)
        free.append(sub.num_nodes)
        current = int((chosen & region).sum())
        for name, rebuilt in rebuilders.items():
            started = clock()
            size = int(rebuilt(sub, k).sum())
            tally[name][3] += clock() - started
            tally[name][0 if size > current else 1 if size == current else 2] += 1
    cells = [f"{b} / {e} / {w} ({1000 * s / args.balls:.1f})" for b, e, w, s in tally.values()]
    print(f"| {label} | {int(chosen.sum()):,} | {np.mean(free):.0f} | " + " | ".join(cells) + f" | {load()} |", flush=True)


def frozen_search(
    graph: Graph, start: np.ndarray, confidence: np.ndarray, share: float, budget: float, started: float
) -> tuple[np.ndarray, int, int]:
    """Fix the ``share`` most confident members of ``start`` (their neighbours out), search the
    rest until it stalls, then the whole graph for what is left; the set, iterations, free nodes."""
    members = np.flatnonzero(start)
    fixed = np.zeros(graph.num_nodes, dtype=bool)
    fixed[members[np.argsort(-confidence[members], kind="stable")[: int(share * members.size)]]] = True
    src, dst = graph.edge_index
    blocked = fixed.copy()
    blocked[dst[fixed[src]]] = True
    sub, nodes = induced_subgraph(graph, ~blocked)
    left = max(budget - (clock() - started), 0.01)
    inner = iterated_local_search(
        sub, start=start[nodes], time_budget=left, max_stall=STALL_PER_NODE * max(sub.num_nodes, 1), seed=0, clock=clock
    )
    found = fixed.copy()
    found[nodes[inner.solution]] = True
    iterations = inner.iterations
    left = budget - (clock() - started)
    if left > 0.05:
        outer = iterated_local_search(graph, start=found, time_budget=left, seed=1, clock=clock)
        found, iterations = outer.solution, iterations + outer.iterations
    if not is_independent_set(graph, found):
        raise SystemExit(f"{graph.name}: a set that is not independent")
    return found, iterations, sub.num_nodes


def freeze(checkpoint, graph: Graph, label: str, args) -> None:
    budget = args.seconds
    started = clock()
    greedy = searched(graph, None, budget, started)
    started = clock()
    policy = searched(graph, policy_set(checkpoint, graph, None), budget, started)
    cells = [f"{greedy[0]:,}", f"{policy[0]:,} ({policy[0] / greedy[0]:.4f})"]
    shares = [float(share) for share in args.shares.split(",")]
    for share in shares:
        started = clock()
        starts = policy_starts(checkpoint, graph, 1, 0, 1, scores=True)
        found, iterations, free = frozen_search(graph, starts.sets[0], starts.scores, share, budget, started)
        cells.append(f"{int(found.sum()):,} ({found.sum() / greedy[0]:.4f}; {free:,} free, {iterations:,} it.)")
    started = clock()
    found, _, free = frozen_search(graph, greedy_min_degree(graph), -graph.degrees().astype(float), shares[0], budget, started)
    cells.append(f"{int(found.sum()):,} ({found.sum() / greedy[0]:.4f}; {free:,} free)")
    print(f"| {label} | " + " | ".join(cells) + f" | {load()} |", flush=True)


MODES = {"budgets": budgets, "rebuild": rebuild, "freeze": freeze}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=sorted(MODES))
    parser.add_argument("--model", default="runs/mis/small")
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--families", default="er-d16,rgg-d8,dl")
    parser.add_argument("--seeds", default="0", help="graph seeds (the searches and rollouts keep seed 0)")
    parser.add_argument("--budgets", default="3,5,10,20", help="budgets: CPU seconds per arm")
    parser.add_argument("--commit-fraction", type=float, default=0.03, help="budgets: the cheaper decoding's commit fraction")
    parser.add_argument("--seconds", type=float, default=10.0, help="rebuild: the search before the balls; freeze: CPU s per arm")
    parser.add_argument("--ball", type=int, default=500, help="rebuild: nodes per ball")
    parser.add_argument("--balls", type=int, default=30, help="rebuild: balls per graph")
    parser.add_argument("--shares", default="0.5,0.8", help="freeze: shares of the policy's set fixed; the first also for degree")
    args = parser.parse_args()
    torch.set_num_threads(1)
    checkpoint = read_checkpoint(args.model)
    print(f"{os.cpu_count()} cores, load {load()}, mode {args.mode}, model {args.model}\n")
    for size in map(int, args.sizes.split(",")):
        for family in args.families.split(","):
            for seed in map(int, args.seeds.split(",")):
                MODES[args.mode](checkpoint, FAMILIES[family](size, seed), f"{family} n={size:,} s{seed}", args)
    print(f"\nload {load()} at the end")


if __name__ == "__main__":
    main()
