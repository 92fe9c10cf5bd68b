"""What the compact rollout buffer costs in training time: graphtransfer's model with it vs the
same model with SB3's ``DictRolloutBuffer``, same env and PPO settings, repeats alternating.

Packing (rollout) and rebuilding (update) the observations is the buffer's extra work; storing
less is its gain. Paired repeats in one process keep machine noise out of the ratio.
"""

from __future__ import annotations

import argparse

import torch
from stable_baselines3.common.buffers import DictRolloutBuffer

from bench.harness import bench_config, er_graphs, markdown_table, median, print_preamble, timed_learn, vec_env
from graphtransfer.training.model import build_model

PLAN = {50: (4, 5), 1000: (2, 3), 10000: (1, 3)}  # PPO iterations per repeat, repeats


def with_sb3_buffer(model):
    """``model`` with the rollout buffer SB3 builds by default for a Dict observation."""
    model.rollout_buffer = DictRolloutBuffer(
        model.n_steps, model.observation_space, model.action_space, model.device, model.gae_lambda, model.gamma, model.n_envs
    )
    return model


def compare_at(num_nodes: int, iterations: int, repeats: int) -> list[object]:
    graphs = er_graphs(num_nodes)
    config = bench_config(graphs)
    models = {"sb3": with_sb3_buffer(build_model(config, vec_env(config, graphs))), "compact": build_model(config, vec_env(config, graphs))}
    for model in models.values():  # one forward first, so that lazy initialisation is not timed
        model.predict(model.env.reset())
    runs = {side: [] for side in models}
    for _ in range(repeats):
        for side, model in models.items():
            runs[side].append(timed_learn(model, iterations))
    ratio = median([c.steps_per_second / s.steps_per_second for s, c in zip(runs["sb3"], runs["compact"], strict=True)])
    rollout = median([c.rollout / s.rollout for s, c in zip(runs["sb3"], runs["compact"], strict=True)])
    update = median([c.update / s.update for s, c in zip(runs["sb3"], runs["compact"], strict=True)])
    rates = [f"{median([r.steps_per_second for r in runs[side]]):.2f}" for side in models]
    return [f"{num_nodes:,}", f"{iterations} × {repeats}", *rates, f"**{ratio:.2f}**", f"{rollout:.2f}", f"{update:.2f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(PLAN), help="graph sizes (nodes)")
    parser.add_argument("--repeats", type=int, help="repeats at every size (default: as PLAN says)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print_preamble("Training speed: compact rollout buffer vs SB3's", 1)
    rows = []
    for num_nodes in args.sizes:
        iterations, repeats = PLAN.get(num_nodes, (1, 3))
        rows.append(compare_at(num_nodes, iterations, args.repeats or repeats))
    headers = ["N", "iterations × repeats", "SB3 buffer steps/s", "compact steps/s", "steps/s compact / SB3"]
    headers += ["rollout s, compact / SB3", "update s, compact / SB3"]
    print(markdown_table(headers, rows))
    print("\nMIS, as in the training-speed table (GCN 2 × 64, n_steps 64, batch 32, 2 epochs, 1 env). Ratios: medians of paired repeats.")


if __name__ == "__main__":
    main()
