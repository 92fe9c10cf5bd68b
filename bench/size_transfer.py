"""How the same MIS model holds as the graph grows: the built-in model (``--model mis``, trained on
the 24 ``small`` graphs of 20-60 nodes, about 40 on average) at 10x, 100x, 1000x (and 10,000x)
its training size, with ``predict``'s default decoding, one torch thread. From 150,000 nodes on, predict's default
decodes in haste (fewer passes); there the table also shows the patience it has below that size,
asked for with ``--commit-fraction``, so that one decoding is compared at every size.

Random regular graphs (degree 3, 5, 20), against what is known of their independence ratio as
the number of nodes grows (the limits below are asymptotic densities, set size / nodes):

- upper: the 1-RSB formula, an upper bound for every degree >= 3 by the interpolation method and
  exact for large degree (Ding, Sly and Sun, "Maximum independent sets on random regular graphs",
  2016), as Harangi states it ("Improved replica bounds for the independence ratio of random
  regular graphs", arXiv 2204.01353, 2022); values from Harangi's table
  (users.renyi.hu/~harangi/ind_ratio.htm): 0.45086 (3), 0.37927 (5), 0.19481 (20).
- best known: degree 3, 0.445327, extrapolated from a prioritized local algorithm by Marino and
  Kirkpatrick ("Large independent sets on random d-regular graphs with d small", arXiv 2020;
  Computation 11(10) 206, 2023); degree 5 and 20, the lower bounds of the same Harangi table
  (its "augmented" column): 0.35090 (5), 0.18097 (20).
- min-degree greedy: on random cubic graphs it reaches 6 ln(3/2) - 2 = 0.43279 (Frieze and Suen,
  "On the independence number of random cubic graphs", 1994; Wormald, "Differential equations
  for random processes and random graphs", 1995); measured here on every graph.

Erdős–Rényi (degree 16), Barabási–Albert (m = 8) and random geometric (degree 16) graphs (at
degree 4-6 the exact rules decide nearly every node and all three columns tie), against
CHILS (``pip install chils``) for ``--seconds`` (10), and the model + ``predict --polish`` for
as many seconds (the search's, the policy's own printed beside it); without chils installed the
CHILS column says so.

    PYTHONPATH=. .venv/bin/python -m bench.size_transfer              # ~8 min on 2 cores
    PYTHONPATH=. .venv/bin/python -m bench.size_transfer --part regular --largest 4000
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import numpy as np
import torch

from graphtransfer.config import Decoding
from graphtransfer.config.schema import PATIENT_BELOW_NODES
from graphtransfer.graphs import Graph, barabasi_albert, erdos_renyi, random_geometric
from graphtransfer.graphs.graph import from_edges
from graphtransfer.solve.polishing import polish
from graphtransfer.solve.predict import predict_graph
from graphtransfer.tasks import TASKS
from graphtransfer.tasks.mis.baselines import greedy_min_degree
from graphtransfer.tasks.mis.chils import chils_available, chils_mis
from graphtransfer.zoo import zoo_folder

TRAIN_NODES = 40
"""the mean size of the ``small`` training graphs (20-60 nodes)"""
UPPER = {3: 0.45086, 5: 0.37927, 20: 0.19481}
"""the 1-RSB upper bound on the asymptotic independence ratio, by degree (see the docstring)"""
BEST_KNOWN = {3: 0.445327, 5: 0.35090, 20: 0.18097}
"""the best known asymptotic independence ratio reached (3: extrapolated; 5, 20: proved lower bounds)"""
LARGEST_REGULAR = {3: 400_000, 5: 400_000, 20: 40_000}
"""the largest random regular graph of each degree, runnable in about a minute on 2 cores"""
FAMILIES = {
    "er": lambda n, seed: erdos_renyi(n, 16.0, seed),
    "ba": lambda n, seed: barabasi_albert(n, 8, seed),
    "rgg": lambda n, seed: random_geometric(n, 16.0, seed),
}


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def random_regular(num_nodes: int, degree: int, seed: int) -> Graph:
    """A random ``degree``-regular simple graph: the pairing (configuration) model, its loops and
    repeated edges removed by degree-preserving switches with uniformly drawn pairs."""
    if num_nodes * degree % 2 or degree >= num_nodes:
        raise ValueError(f"no {degree}-regular graph on {num_nodes} nodes: need degree < nodes and an even degree x nodes")
    rng = np.random.default_rng(seed)
    pairs = rng.permutation(np.repeat(np.arange(num_nodes, dtype=np.int64), degree)).reshape(-1, 2)
    while True:
        lo, hi = pairs.min(axis=1), pairs.max(axis=1)
        _, first = np.unique(lo * num_nodes + hi, return_index=True)
        bad = np.ones(len(pairs), dtype=bool)
        bad[first] = False
        bad = np.flatnonzero(bad | (lo == hi))
        if bad.size == 0:
            break
        partner = rng.integers(0, len(pairs), bad.size)
        values, counts = np.unique(np.concatenate([bad, partner]), return_counts=True)
        once = values[counts == 1]  # switch only pairs that take part in one switch this round
        keep = np.isin(bad, once) & np.isin(partner, once)
        b, p = bad[keep], partner[keep]
        (b0, b1), (p0, p1) = pairs[b].T.copy(), pairs[p].T.copy()
        pairs[b] = np.stack([b0, p0], axis=1)
        pairs[p] = np.stack([b1, p1], axis=1)
    graph, _, _ = from_edges(pairs[:, 0], pairs[:, 1], num_nodes, f"rr-n{num_nodes}-d{degree}-s{seed}")
    return graph


def sizes(largest: int) -> list[int]:
    """10x, 100x, ... the training size, up to ``largest`` nodes."""
    return [TRAIN_NODES * 10**k for k in range(1, 8) if TRAIN_NODES * 10**k <= largest]


def seeds_for(num_nodes: int, seeds: int) -> range:
    """``seeds`` graphs up to 4,000 nodes (small graphs vary more), one above."""
    return range(seeds if num_nodes <= 4000 else 1)


def regular_table(model: str, largest: int, seeds: int) -> None:
    print(f"\n### Random regular graphs (model {model}, load {load()})\n")
    header = "| degree | nodes | x training | decoding | policy density (s) | greedy density | policy / upper | policy / best known"
    print(header + " | policy / greedy | load |")
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---|")
    for degree in UPPER:
        ratios, hurried = {"default": [], "same": []}, False
        for n in sizes(min(largest, LARGEST_REGULAR[degree])):
            decodings = {"default": Decoding()}
            if n >= PATIENT_BELOW_NODES:  # predict's default hurries from here on; the patience it has below, asked for
                decodings["same"] = Decoding(rollouts=1, commit_fraction=patient_share(degree))
            for label, decoding in decodings.items():
                found, greedy, seconds = [], [], []
                for seed in seeds_for(n, seeds):
                    graph = random_regular(n, degree, seed)
                    started = time.perf_counter()
                    solution, _ = predict_graph(model, graph, decoding)
                    seconds.append(time.perf_counter() - started)
                    found.append(solution.objective / n)
                    greedy.append(float(greedy_min_degree(graph).sum()) / n)
                density, greedy_density = float(np.mean(found)), float(np.mean(greedy))
                ratios[label].append(density / UPPER[degree])
                if label == "default" and "same" not in decodings:
                    ratios["same"].append(density / UPPER[degree])
                shown = "predict's default" if label == "default" else f"--commit-fraction {decoding.commit_fraction:.4f}"
                cells = f"{density:.5f} ({np.mean(seconds):.1f} s) | {greedy_density:.5f} | {density / UPPER[degree]:.4f}"
                ratios_cells = f"{density / BEST_KNOWN[degree]:.4f} | {density / greedy_density:.4f}"
                print(f"| {degree} | {n:,} | {n // TRAIN_NODES:,} | {shown} | {cells} | {ratios_cells} | {load()} |", flush=True)
                hurried = hurried or label == "same"
        for label, kept in ratios.items() if hurried else [("default", ratios["default"])]:
            steps = ", ".join(f"{earlier - later:+.4f}" for earlier, later in zip(kept, kept[1:], strict=False))
            shown = "predict's default" if label == "default" else "one patience at every size"
            print(f"| {degree} | loss per 10x | | {shown} | {steps} (policy / upper) | | | | | |")


def patient_share(degree: int) -> float:
    """``--commit-fraction`` of the patience predict's default has below :data:`PATIENT_BELOW_NODES`
    nodes on a sparse ``degree``-regular graph: 0.02 of the Caro-Wei bound, ``n / (degree + 1)``."""
    return 0.02 / (degree + 1)


def families_table(model: str, largest: int, seconds: float, seed: int) -> None:
    anchor = f"CHILS {seconds:.0f} s" if chils_available() else "CHILS not installed (pip install chils)"
    print(f"\n### Erdős–Rényi, Barabási–Albert, random geometric (model {model}, load {load()})\n")
    polish_column = f"policy + polish {seconds:.0f} s"
    print(f"| graph | nodes | x training | policy (s) | {polish_column} | {anchor} | policy / CHILS | polish / CHILS | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    task = TASKS["mis"]
    for family, make in FAMILIES.items():
        ratios = []
        for n in sizes(largest):
            graph = make(n, seed)
            started = time.perf_counter()
            solution, _ = predict_graph(model, graph, Decoding(seed=seed))
            took = time.perf_counter() - started
            polished = polish(task, graph, solution.solution, seconds, seed).objective  # predict --polish SECONDS: the policy's time on top
            if chils_available():
                best = float(chils_mis(graph, seconds, seed).sum())
                cells = f"{best:,.0f} | {solution.objective / best:.4f} | {polished / best:.4f}"
                ratios.append(solution.objective / best)
            else:
                cells = "— | — | —"
            policy_cell = f"{solution.objective:,.0f} ({took:.1f} s)"
            print(f"| {family} | {n:,} | {n // TRAIN_NODES:,} | {policy_cell} | {polished:,.0f} | {cells} | {load()} |", flush=True)
        steps = [later - earlier for earlier, later in zip(ratios, ratios[1:], strict=False)]
        if steps:
            print(f"| {family} | loss per 10x | | {', '.join(f'{-step:+.4f}' for step in steps)} (policy / CHILS) | | | | | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mis", help="a model folder or a built-in name (default: the built-in MIS model)")
    parser.add_argument("--part", choices=["regular", "families", "both"], default="both")
    parser.add_argument("--largest", type=int, default=400_000, help="the largest graph (nodes); degree 20 stops at 40,000")
    parser.add_argument("--families-largest", type=int, default=40_000, help="the largest ER/BA/RGG graph (nodes)")
    parser.add_argument("--seconds", type=float, default=10.0, help="CHILS's and policy + polish's budget")
    parser.add_argument("--seeds", type=int, default=3, help="random regular graphs per size up to 4,000 nodes")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not math.isfinite(args.seconds) or args.seconds <= 0:
        parser.error(f"--seconds {args.seconds} must be a positive number")
    torch.set_num_threads(1)
    model = str(zoo_folder(args.model) or Path(args.model))
    if args.part in ("regular", "both"):
        regular_table(model, args.largest, args.seeds)
    if args.part in ("families", "both"):
        families_table(model, args.families_largest, args.seconds, args.seed)


if __name__ == "__main__":
    main()
