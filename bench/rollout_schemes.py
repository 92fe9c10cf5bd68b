"""Which rollouts `--rollouts auto` should alternate on small graphs: for each scheme, on how many
of the 36 graphs of 100-300 nodes (ER, BA, random geometric, Delaunay; seeds 0-2) the best of k
rollouts is within 2% of the exact optimum (HiGHS MILP), and the mean of the best over it.

    .venv/bin/python -m bench.rollout_schemes --model runs/mis/small [--noise 0.25,0.5,1] [--time-limit 15]

A scheme alternates local-max (rollouts 0, 2, ...) with another decoding (rollouts 1, 3, ...):
drawn, or local-max-sampled at each Gumbel scale of ``--noise``. MIS or MVC models. Prints a
Markdown table for bench/RESULTS.md. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from bench.transfer_quality import FAMILIES
from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.solve import inference
from graphtransfer.solve.evaluate import finish_rule
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.tasks import TASKS
from graphtransfer.tasks.factory import inference_env

COUNTS = (1, 32, 64)


def rollouts(loaded, graph, config, decoding: str, noise: float, count: int) -> list[float]:
    """Objectives of ``count`` rollouts alternating local-max with ``decoding`` (seeds 0..count-1)."""
    env, finish = inference_env(config, graph), finish_rule(config)
    inference.ORDER_NOISE = noise  # the scale local-max-sampled reads at solve time
    return [
        inference.solve(loaded.policy, env, seed=i, finish=finish, decoding="local-max" if i % 2 == 0 else decoding).objective
        for i in range(count)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="an MIS or MVC model folder")
    parser.add_argument("--noise", default="0.25,0.5,1", help="Gumbel scales of local-max-sampled to compare")
    parser.add_argument("--time-limit", type=float, default=15.0, help="seconds the MILP may take per graph")
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = read_checkpoint(args.model).config
    maximise = config.task == "mis"
    schemes = [("drawn", "drawn", 0.0)] + [(f"sampled ({n})", "local-max-sampled", float(n)) for n in args.noise.split(",")]
    graphs = [make(n, seed) for seed in (0, 1, 2) for n in (100, 200, 300) for make in FAMILIES.values()]
    within = {(label, k): 0 for label, _, _ in schemes for k in COUNTS}
    ratios: dict[str, list[float]] = {label: [] for label, _, _ in schemes}
    for graph in graphs:
        optimum = float(TASKS[config.task].exact["milp"](graph, time_limit=args.time_limit).solution.sum())
        loaded = policy_for_graphs(args.model, [graph])
        for label, decoding, noise in schemes:
            found = rollouts(loaded, graph, config, decoding, noise, max(COUNTS))
            for k in COUNTS:
                best = max(found[:k]) if maximise else min(found[:k])
                within[label, k] += best >= 0.98 * optimum if maximise else best <= 1.02 * optimum
            ratios[label].append((max(found) if maximise else min(found)) / optimum)
    print(f"`python -m bench.rollout_schemes --model {args.model}`, {time.strftime('%Y-%m-%d %H:%M')}, load {os.getloadavg()[0]:.1f}\n")
    columns = [f"within 2%, best of {k}" for k in COUNTS] + [f"mean best of {max(COUNTS)} / optimum"]
    print("| local-max alternated with | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * (len(COUNTS) + 1))
    for label, _, _ in schemes:
        cells = " | ".join(f"{within[label, k]} of {len(graphs)}" for k in COUNTS)
        print(f"| {label} | {cells} | {np.mean(ratios[label]):.4f} |")


if __name__ == "__main__":
    main()
