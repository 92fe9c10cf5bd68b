"""How the decodings of one MIS model compare on graphs of four families: the drawn decoding
(every node acts as sampled, and patiently with a commit fraction) and the local-max decoding at
every commit fraction asked for, each against greedy minimum degree, with the passes, wall seconds
and CPU seconds it took. The finishing rule runs as in predict.

    .venv/bin/python -m bench.decoding --model runs/mis/small [--nodes 10000] [--fractions 1,0.1,0.03] [--large] [--no-drawn]

Prints a Markdown table for bench/RESULTS.md. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from graphtransfer.graphs import Graph, barabasi_albert, erdos_renyi, load_graph, random_geometric
from graphtransfer.graphs.generators import delaunay
from graphtransfer.solve.evaluate import finish_rule
from graphtransfer.solve.inference import solve
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.tasks.factory import inference_env
from graphtransfer.tasks.mis.baselines import greedy_min_degree


def families(nodes: int, seed: int) -> dict[str, Graph]:
    return {
        "er": erdos_renyi(nodes, 8.0, seed),
        "ba": barabasi_albert(nodes, 4, seed),
        "rgg": random_geometric(nodes, 8.0, seed),
        "delaunay": delaunay(nodes, seed),
    }


def modes(fractions: list[float], patience: float, drawn: bool = True) -> list[tuple[str, dict]]:
    """(column label, solve options) of every decoding compared; ``drawn``: the drawn ones too."""
    drawn_modes = [("drawn", {"decoding": "drawn"}), (f"drawn, fraction {patience:g}", {"decoding": "drawn", "commit_fraction": patience})]
    return (drawn_modes if drawn else []) + [
        (f"local-max, fraction {f:g}", {"decoding": "local-max", "commit_fraction": f}) for f in fractions
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="an MIS model folder")
    parser.add_argument("--nodes", default="10000", help="comma-separated node counts")
    parser.add_argument("--seed", type=int, default=1, help="graph seed (the training graphs are others)")
    parser.add_argument("--fractions", default="1,0.1,0.03", help="commit fractions of the local-max decoding")
    parser.add_argument("--patience", type=float, default=0.03, help="commit fraction of the patient drawn decoding")
    parser.add_argument("--large", action="store_true", help="also the 250k-node sample graph 'large'")
    parser.add_argument("--no-drawn", action="store_true", help="local-max only (the patient drawn decoding is slow at 10^6 nodes)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    columns = modes([float(f) for f in args.fractions.split(",")], args.patience, not args.no_drawn)
    print(f"`python -m bench.decoding --model {args.model} --nodes {args.nodes}`, {time.strftime('%Y-%m-%d %H:%M')}\n")
    print("| graph | greedy | " + " | ".join(label for label, _ in columns) + " | load |")
    print("|---|---|" + "---|" * (len(columns) + 1))
    graphs = [(f"{name}-{n}", g) for n in map(int, args.nodes.split(",")) for name, g in families(n, args.seed).items()]
    for name, graph in graphs + ([("large (BA, 250k)", load_graph("large"))] if args.large else []):
        greedy = int(greedy_min_degree(graph).sum())
        loaded = policy_for_graphs(args.model, [graph])
        cells = []
        for _, options in columns:
            env = inference_env(loaded.checkpoint.config, graph)
            cpu = time.process_time()
            found = solve(loaded.policy, env, finish=finish_rule(loaded.checkpoint.config), **options)
            cells.append(f"{found.objective / greedy:.3f} ({found.passes}, {found.seconds:.2f} s, {time.process_time() - cpu:.2f} CPU-s)")
        print(f"| {name} | {greedy} | " + " | ".join(cells) + f" | {os.getloadavg()[0]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
