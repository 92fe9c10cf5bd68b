"""Training throughput, plain SB3 + PyG recipe vs graphtransfer: env steps/s, rollout vs update.

Both models learn MIS on the same Erdős–Rényi graphs (average degree 4) with the same PPO
settings; repeats alternate between the two so that machine noise hits both alike.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import torch
from stable_baselines3.common.base_class import BaseAlgorithm

from bench.harness import SIDES, bench_config, er_graphs, markdown_table, median, print_preamble, vec_env, verdict
from graphtransfer.training.callbacks import PhaseTimer

# PPO iterations (of n_steps env steps) per timed repeat, and repeats, per graph size: enough for
# a stable rate while the whole run stays near 10 minutes on 2 busy cores. One plain iteration at
# N=10,000 takes minutes (SB3 builds one torch Categorical per node), hence a single repeat there.
PLAN = {50: (4, 3), 1000: (2, 3), 10000: (1, 1)}
TARGETS = {50: 3.0, 1000: 10.0, 10000: 10.0}  # env steps/s, ours / plain (issue 5)


@dataclass
class Run:
    steps: int
    seconds: float
    rollout: float
    update: float

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.seconds


def timed_learn(model: BaseAlgorithm, iterations: int) -> Run:
    """Continue training for ``iterations`` PPO iterations and time them."""
    timer = PhaseTimer()
    before = model.num_timesteps
    started = time.perf_counter()
    model.learn(iterations * model.n_steps * model.n_envs, callback=timer, reset_num_timesteps=False)
    return Run(model.num_timesteps - before, time.perf_counter() - started, timer.rollout, timer.update)


def compare_at(num_nodes: int, iterations: int, repeats: int) -> dict[str, list[Run]]:
    """``repeats`` timed runs per side on graphs of ``num_nodes`` nodes."""
    graphs = er_graphs(num_nodes)
    config = bench_config(graphs)
    models = {side: build(config, vec_env(config, graphs)) for side, build in SIDES.items()}
    for model in models.values():  # one forward first, so that lazy initialisation is not timed
        model.predict(model.env.reset())
    runs: dict[str, list[Run]] = {side: [] for side in models}
    for _ in range(repeats):
        for side, model in models.items():
            runs[side].append(timed_learn(model, iterations))
    return runs


def row(num_nodes: int, runs: dict[str, list[Run]], iterations: int) -> list[object]:
    plain, ours = runs["plain"], runs["ours"]
    ratio = median([o.steps_per_second / p.steps_per_second for p, o in zip(plain, ours, strict=True)])
    update_speedup = median([p.update / o.update for p, o in zip(plain, ours, strict=True)])
    return [
        f"{num_nodes:,}",
        f"{iterations} × {len(plain)}",
        f"{median([r.steps_per_second for r in plain]):.1f}",
        f"{median([r.steps_per_second for r in ours]):.1f}",
        f"**{ratio:.1f}×**",
        verdict(ratio, TARGETS[num_nodes]) if num_nodes in TARGETS else "",
        f"{update_speedup:.1f}×",
        phase_split(plain),
        phase_split(ours),
    ]


def phase_split(runs: list[Run]) -> str:
    """Median rollout and update seconds per repeat, and the update's share of the time."""
    rollout, update = median([r.rollout for r in runs]), median([r.update for r in runs])
    return f"{rollout:.2f} / {update:.2f} ({update / (rollout + update):.0%} update)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(PLAN), help="graph sizes (nodes)")
    parser.add_argument("--repeats", type=int, help="repeats at every size (default: as PLAN says)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print_preamble("Training speed: env steps/s (median over repeats)", args.threads)
    rows = []
    for num_nodes in args.sizes:
        iterations, repeats = PLAN.get(num_nodes, (1, 1))
        repeats = args.repeats or repeats
        rows.append(row(num_nodes, compare_at(num_nodes, iterations, repeats), iterations))
        print(f"N={num_nodes:,} done: {iterations} iteration(s) × {repeats} repeat(s)", flush=True)
    headers = ["N", "iterations × repeats", "plain steps/s", "ours steps/s", "ours / plain", "target met"]
    headers += ["update phase: plain s / ours s", "plain rollout / update s", "ours rollout / update s"]
    print()
    print(markdown_table(headers, rows))
    print(
        "\nMIS on 3 Erdős–Rényi graphs, average degree 4 (≈4N directed edges); 2-layer GCN, width 64; "
        "PPO n_steps 64, batch 32, 2 epochs, 1 env. Ratios: medians of paired repeats; seconds: per repeat."
    )


if __name__ == "__main__":
    main()
