"""The default ``predict`` (``--rollouts auto``: the kernel, the rollouts and their patience) of a
built-in model against greedy, family x average degree x size, one graph at a time.

MIS against min-degree greedy's set, MVC against max-degree greedy's cover; every solution checked
(feasible), the seconds those of ``predict_graph`` (the kernel included, the model load not). Run
it from two checkouts (``PYTHONPATH=<checkout>``) to compare a change, one after the other on an
otherwise idle machine:

    PYTHONPATH=. .venv/bin/python -m bench.default_quality --task mis [--graphs er-d8:10000:0,dl:10000:1] > after.jsonl
    PYTHONPATH=. .venv/bin/python -m bench.default_quality --task mis --compare before.jsonl after.jsonl
    PYTHONPATH=. .venv/bin/python -m bench.default_quality --task mis --held-out > held-out.jsonl

``--others`` runs the nine families of :data:`NETWORKX_FAMILIES` (networkx's generators: small worlds,
random regular graphs, lattices, a power-law cluster graph, a block model) at 10^3 and 10^4 nodes,
graph seed 0. ``--held-out`` runs the 54 graphs of :data:`HELD_OUT_GRAPHS` instead (``family:nodes:degree:seed``, the
density families of :mod:`bench.transfer_quality`: Erdős–Rényi, Barabási–Albert and random geometric
graphs of 10^3 and 10^4 nodes at average degree 4, 64 and 200, seeds 1-3, which no build saw).

Prints one JSON line per graph; ``--compare`` prints the Markdown table of two such runs.
Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np

from bench.path_matching_quality import grid
from bench.transfer_quality import DENSE_FAMILIES
from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.graphs import Graph, barabasi_albert, delaunay, erdos_renyi, random_geometric
from graphtransfer.graphs.graph import from_edges
from graphtransfer.solve.predict import predict_graph
from graphtransfer.tasks.mis.baselines import greedy_min_degree
from graphtransfer.tasks.mvc.baselines import greedy_max_degree

FAMILIES: dict[str, Callable[[int, int], Graph]] = {
    **{f"er-d{d}": (lambda n, seed, d=d: erdos_renyi(n, float(d), seed)) for d in (4, 8, 12, 16, 64)},
    **{f"ba-m{m}": (lambda n, seed, m=m: barabasi_albert(n, m, seed)) for m in (2, 4)},
    **{f"rgg-d{d}": (lambda n, seed, d=d: random_geometric(n, float(d), seed)) for d in (8, 16)},
    "dl": lambda n, seed: delaunay(n, seed),
    "grid": lambda n, seed: grid(n, seed),
    "bip-d8": lambda n, seed: bipartite(n, 8.0, 0.0, seed),
    "nbip-d8": lambda n, seed: bipartite(n, 8.0, 0.002, seed),
    "nbip2-d8": lambda n, seed: bipartite(n, 8.0, 0.004, seed, both_sides=True),
    "gdiag": lambda n, seed: grid_with_diagonals(n, 0.01, seed),
}


def bipartite(num_nodes: int, degree: float, odd_share: float, seed: int, both_sides: bool = False) -> Graph:
    """A random bipartite graph of two equal sides and average ``degree`` (a user-item graph's
    shape), with ``odd_share`` of its edge count added inside the first side, or half inside each
    with ``both_sides`` (odd cycles: nearly bipartite)."""
    rng = np.random.default_rng(seed)
    half, edges = num_nodes // 2, round(num_nodes * degree / 2)
    inside = round(odd_share * edges)
    first, second = (inside // 2, inside - inside // 2) if both_sides else (inside, 0)
    src = np.concatenate([rng.integers(0, half, edges), rng.integers(0, half, first), rng.integers(half, num_nodes, second)])
    dst = np.concatenate([rng.integers(half, num_nodes, edges), rng.integers(0, half, first), rng.integers(half, num_nodes, second)])
    return from_edges(src, dst, num_nodes, f"bipartite-{num_nodes}-{odd_share:g}{'-both' if both_sides else ''}")[0]


def grid_with_diagonals(num_nodes: int, share: float, seed: int) -> Graph:
    """The square grid of about ``num_nodes`` nodes with ``share`` of its edge count added as random
    diagonals (each closes two triangles: a lattice nearly bipartite)."""
    rng = np.random.default_rng(seed)
    side = round(num_nodes**0.5)
    ids = np.arange(side * side).reshape(side, side)
    count = round(share * 2 * side * side)
    row, column = rng.integers(0, side - 1, count), rng.integers(0, side - 1, count)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel(), ids[row, column]])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel(), ids[row + 1, column + 1]])
    return from_edges(src, dst, side * side, f"grid-{side}x{side}-diagonals-{share:g}")[0]


def from_networkx(made, name: str) -> Graph:
    """A networkx graph as a :class:`Graph`, its nodes numbered in networkx's order."""
    import networkx as nx

    made = nx.convert_node_labels_to_integers(made)
    edges = np.array(made.edges(), dtype=np.int64).reshape(-1, 2)
    return from_edges(edges[:, 0], edges[:, 1], made.number_of_nodes(), name)[0]


def _blocks(nx, n: int, seed: int):
    """20 blocks, about 30 neighbours inside a node's block and 12 outside (average degree about 42)."""
    count, size = 20, n // 20
    inside, outside = 30 / size, 12 / (n - size)
    chances = [[inside if i == j else outside for j in range(count)] for i in range(count)]
    return nx.stochastic_block_model([size] * count, chances, seed=seed)


NETWORKX_FAMILIES: dict[str, Callable] = {
    "ws-k4": lambda nx, n, seed: nx.watts_strogatz_graph(n, 4, 0.1, seed=seed),
    "ws-k6": lambda nx, n, seed: nx.watts_strogatz_graph(n, 6, 0.05, seed=seed),
    "regular3": lambda nx, n, seed: nx.random_regular_graph(3, n, seed=seed),
    "regular4": lambda nx, n, seed: nx.random_regular_graph(4, n, seed=seed),
    "regular10": lambda nx, n, seed: nx.random_regular_graph(10, n, seed=seed),
    "triangular": lambda nx, n, seed: nx.triangular_lattice_graph(round(n**0.5), round(n**0.5)),
    "hexagonal": lambda nx, n, seed: nx.hexagonal_lattice_graph(round((n / 2) ** 0.5), round((n / 2) ** 0.5)),
    "powerlaw-cluster": lambda nx, n, seed: nx.powerlaw_cluster_graph(n, 3, 0.5, seed=seed),
    "blocks": _blocks,
}
"""``build(nx, nodes, seed)`` of each family the default grid does not hold (the lattices' sizes are the nearest their
shapes allow)"""


def other_family_graph(family: str, num_nodes: int, seed: int) -> Graph:
    """A graph of :data:`NETWORKX_FAMILIES`' ``family``."""
    import networkx as nx

    return from_networkx(NETWORKX_FAMILIES[family](nx, num_nodes, seed), f"{family}-{num_nodes}-s{seed}")


OTHER_GRAPHS = [f"{family}:{n}:0" for n in (1000, 10_000) for family in NETWORKX_FAMILIES]

GREEDY = {"mis": greedy_min_degree, "mvc": greedy_max_degree}
SIZES = ((1000, 0), (1000, 1), (10_000, 0), (10_000, 1), (100_000, 0))
"""nodes and graph seed of each family's graphs by default"""
DEFAULT_GRAPHS = [f"{family}:{n}:{seed}" for family in FAMILIES for n, seed in SIZES]
HELD_OUT_GRAPHS = [
    f"{family}:{n}:{degree}:{seed}"
    for n in (1000, 10_000)
    for family in ("er", "ba", "rgg")
    for degree in (4, 64, 200)
    for seed in (1, 2, 3)
]
"""``family:nodes:degree:seed`` of the held-out density grid (the family's generator in :data:`DENSE_FAMILIES`)"""


def measure(task: str, spec: str) -> dict:
    """One graph ``family:nodes:seed`` (or ``family:nodes:degree:seed`` of :data:`DENSE_FAMILIES`):
    greedy's objective, the default predict's, its passes, rollouts, the weight set that gave it
    (``expert``: 0 the model's own) and seconds; on a nearly bipartite graph also the policy's own
    objective (``own``) and whether König's set (:mod:`graphtransfer.tasks.mis.near_bipartite`) was
    the answer."""
    parts = spec.split(":")
    if len(parts) == 4:
        graph = DENSE_FAMILIES[parts[0]](int(parts[1]), float(parts[2]), int(parts[3]))
    elif parts[0] in NETWORKX_FAMILIES:
        graph = other_family_graph(parts[0], int(parts[1]), int(parts[2]))
    else:
        graph = FAMILIES[parts[0]](int(parts[1]), int(parts[2]))
    started = time.perf_counter()
    solution, _ = predict_graph(read_checkpoint(task), graph)
    seconds = time.perf_counter() - started
    greedy = int(GREEDY[task](graph).sum())
    row = {
        "graph": spec,
        "greedy": greedy,
        "policy": int(solution.objective),
        "feasible": bool(solution.feasible),
        "passes": solution.passes,
        "rollouts": solution.rollouts,
        "expert": solution.expert,
        "seconds": round(seconds, 2),
    }
    rival = solution.rival
    if rival is not None:
        own = solution.objective - rival.margin if task == "mis" else solution.objective + rival.margin
        row |= {"own": int(own if rival.taken else solution.objective), "koenig": rival.taken, "koenig_seconds": round(rival.seconds, 2)}
    return row


def compare(before: str, after: str) -> None:
    """The Markdown table of two runs' JSON lines, by graph."""
    old = {row["graph"]: row for row in map(json.loads, open(before))}
    print("| graph | greedy | before (x greedy) | passes x rollouts | s | after (x greedy) | passes x rollouts | s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for new in map(json.loads, open(after)):
        was = old.get(new["graph"])
        cells = [new["graph"], f"{new['greedy']:,}"]
        for row in (was, new):
            if row is None:
                cells += ["not run", "", ""]
                continue
            mark = "" if row["feasible"] else " INFEASIBLE"
            ratio = row["policy"] / row["greedy"]
            cells += [f"{row['policy']:,} ({ratio:.4f}){mark}", f"{row['passes']} x {row['rollouts']}", f"{row['seconds']:.2f}"]
        print("| " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=sorted(GREEDY), default="mis")
    parser.add_argument("--graphs", default=",".join(DEFAULT_GRAPHS), help="family:nodes:seed, comma-separated")
    parser.add_argument("--held-out", action="store_true", help="the 54 graphs of HELD_OUT_GRAPHS instead of --graphs")
    parser.add_argument("--others", action="store_true", help="the graphs of OTHER_GRAPHS (networkx's families) instead of --graphs")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="two runs' JSON lines: print their table")
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare)
        return
    specs = HELD_OUT_GRAPHS if args.held_out else OTHER_GRAPHS if args.others else args.graphs.split(",")
    for spec in specs:
        print(json.dumps(measure(args.task, spec)), flush=True)


if __name__ == "__main__":
    main()
