"""Zero-shot against adapted (``transfer --adapt SECONDS``) on the destination graph itself (MIS).

For each destination graph, ``transfer`` from ``--model`` with ``--adapt``: the policy's set
(the default decoding, rollouts auto) against min-degree greedy before and after adapting, the
adaptation's seconds and env steps, and which model was kept.

    .venv/bin/python bench/adapt.py --model runs/mis/small [--seconds 60] [--graphs er-n2000-d64,er-n10000-d8]
        [--subgraph-nodes 1000]

Graph names: FAMILY-nNODES-dDEGREE with FAMILY er, rgg (average degree) or ba (m = DEGREE).
Prints a Markdown table, one row per graph as it finishes. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import torch

from graphtransfer.graphs import Graph, barabasi_albert, erdos_renyi, random_geometric, write_npz
from graphtransfer.transferring.adaptation import ADAPT_SUBGRAPH_NODES
from graphtransfer.transferring.transfer import transfer

DEFAULT_GRAPHS = "er-n2000-d64,er-n5000-d64,er-n10000-d8,ba-n10000-d4,rgg-n10000-d8"


def make_graph(name: str, seed: int) -> Graph:
    family, nodes, degree = name.split("-")
    n, d = int(nodes[1:]), float(degree[1:])
    if family == "ba":
        return barabasi_albert(n, int(d), seed)
    return {"er": erdos_renyi, "rgg": random_geometric}[family](n, d, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="runs/mis/small")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--graphs", default=DEFAULT_GRAPHS)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--subgraph-nodes", type=int, default=ADAPT_SUBGRAPH_NODES, help="nodes per sampled subgraph")
    args = parser.parse_args()
    torch.set_num_threads(1)
    setup = f"--adapt {args.seconds:g}, subgraphs of {args.subgraph_nodes} nodes, model {args.model}"
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, {setup}\n")
    print("| graph | greedy | zero-shot (/ greedy) | adapted (/ greedy) | adapted / zero-shot | seconds (budget) | steps | kept |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name in args.graphs.split(","):
            path = Path(folder) / f"{name}.npz"
            write_npz(make_graph(name, args.seed), path)
            result = transfer(
                args.model,
                path,
                folder=Path(folder) / "out" / name,
                adapt_seconds=args.seconds,
                adapt_nodes=args.subgraph_nodes,
                log=lambda _: None,
            )
            before, after = result.rows[0], result.adapted_rows[0]
            greedy = next(b.objective for b in before.baselines if b.name == "greedy-min-degree")
            zero, adapted = before.policy.objective, after.policy.objective
            done = result.adapted
            cells = [name, f"{greedy:,.0f}", f"{zero:,.0f} ({zero / greedy:.3f})", f"{adapted:,.0f} ({adapted / greedy:.3f})"]
            cells += [f"{adapted / zero:.4f}", f"{done.seconds:.1f} ({done.budget:g})", f"{done.steps:,}", result.kept]
            print("| " + " | ".join(cells) + " |", flush=True)
    print(f"\nload {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
