"""A user's node-choice env decoded one pick per pass against several picks per pass
(``step_many``, with and without ``open_nodes``): the minimum dominating set of
``examples/dominating_set.py``, trained on ``small``, on graphs of three families.

    graphtransfer train --env examples.dominating_set:DominatingSetEnv --graphs small --steps 20000 --out runs/domset
    python -m bench.node_choice --model runs/domset --sizes 10000,100000 --one-pick-up-to 10000

Prints one line per graph: set sizes as a ratio of sequential greedy's (smaller is better), passes
and seconds of each decoding.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace

from examples.dominating_set import greedy_dominating_set
from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.config import Decoding
from graphtransfer.graphs import barabasi_albert, erdos_renyi, random_geometric
from graphtransfer.solve.predict import predict_graph

ENVS = {
    "one pick": "examples.dominating_set:OnePickDominatingSetEnv",
    "step_many": "examples.dominating_set:ManyPicksDominatingSetEnv",
    "step_many + open_nodes": "examples.dominating_set:DominatingSetEnv",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a model folder trained on examples.dominating_set:DominatingSetEnv")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--one-pick-up-to", type=int, default=10_000, help="largest graph decoded one pick per pass")
    args = parser.parse_args()
    checkpoint = read_checkpoint(args.model, ENVS["step_many + open_nodes"])
    print(f"load average {os.getloadavg()[0]:.2f}; ratio: set size / sequential greedy's (smaller is better)")
    for size in (int(s) for s in args.sizes.split(",")):
        for graph in (barabasi_albert(size, 3, 1), erdos_renyi(size, 8.0, 1), random_geometric(size, 8.0, 1)):
            greedy = int(greedy_dominating_set(graph).sum())
            cells = []
            for label, env in ENVS.items():
                if label == "one pick" and size > args.one_pick_up_to:
                    continue
                model = replace(checkpoint, config=replace(checkpoint.config, env=env))
                started = time.perf_counter()
                solution, _ = predict_graph(model, graph, Decoding(rollouts=1))
                seconds = time.perf_counter() - started
                cells.append(f"{label}: {solution.objective / greedy:.3f}x, {solution.passes} passes, {seconds:.1f} s")
            print(f"{graph.name:22s} greedy {greedy:6d} | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
