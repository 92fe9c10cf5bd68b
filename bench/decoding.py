"""How the decodings of one MIS model compare on graphs of four families: sampled and
deterministic, every commit fraction asked for, each against greedy minimum degree, with the
passes and seconds it took. The finishing rule runs as in predict.

    .venv/bin/python -m bench.decoding --model runs/mis/small [--nodes 10000] [--fractions 1,0.1,0.03]

Prints a Markdown table for bench/RESULTS.md. Not part of the test run.
"""

from __future__ import annotations

import argparse
import time

from graphtransfer.baselines.mis import greedy_min_degree
from graphtransfer.envs.factory import inference_env
from graphtransfer.graphs import barabasi_albert, erdos_renyi, random_geometric
from graphtransfer.graphs.generators import delaunay
from graphtransfer.solve.evaluate import finish_rule
from graphtransfer.solve.inference import solve
from graphtransfer.solve.loading import policy_for_graphs


def families(nodes: int, seed: int) -> dict:
    return {
        "er": erdos_renyi(nodes, 8.0, seed),
        "ba": barabasi_albert(nodes, 4, seed),
        "rgg": random_geometric(nodes, 8.0, seed),
        "delaunay": delaunay(nodes, seed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="an MIS model folder")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1, help="graph seed (the training graphs are others)")
    parser.add_argument("--fractions", default="1,0.1,0.03", help="commit fractions of the sampled decoding")
    args = parser.parse_args()
    fractions = [float(f) for f in args.fractions.split(",")]
    modes = [("deterministic", True, None)] + [(f"sampled, fraction {f:g}", False, f) for f in fractions]
    print(f"`python -m bench.decoding --model {args.model} --nodes {args.nodes}`, {time.strftime('%Y-%m-%d')}\n")
    print("| graph | greedy | " + " | ".join(label for label, _, _ in modes) + " |")
    print("|---|---|" + "---|" * len(modes))
    for name, graph in families(args.nodes, args.seed).items():
        greedy = int(greedy_min_degree(graph).sum())
        loaded = policy_for_graphs(args.model, [graph])
        cells = []
        for _, deterministic, fraction in modes:
            env = inference_env(loaded.checkpoint.config, graph)
            found = solve(
                loaded.policy, env, deterministic=deterministic, commit_fraction=fraction, finish=finish_rule(loaded.checkpoint.config)
            )
            cells.append(f"{found.objective / greedy:.3f} ({found.passes} passes, {found.seconds:.1f} s)")
        print(f"| {name}-{args.nodes} | {greedy} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
