"""Which vector env to default to: every env in this process (SB3's DummyVecEnv) or one process per
env (SubprocVecEnv), measured as env steps/s of real MIS training with everything else equal.

Repeats alternate between the two so that machine noise hits both alike; the ratio is the median
of the per-repeat ratios subproc / dummy (above 1: subprocesses are faster).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import torch
from stable_baselines3.common.env_util import make_vec_env

from bench.harness import Run, bench_config, er_graphs, markdown_table, median, print_preamble, timed_learn
from graphtransfer.config import PPOConfig
from graphtransfer.graphs import load_graphs
from graphtransfer.tasks.factory import run_env
from graphtransfer.training.model import VEC_ENVS, build_model

# (graphs, n_envs, PPO iterations per timed repeat): the default run (the small sample set, 8
# envs), and bigger graphs whose env steps cost more, where subprocesses have the most to win.
CASES = [("small", 8, 4), ("er-1000", 8, 2), ("er-1000", 2, 4)]


def graphs_for(name: str):
    return load_graphs("small") if name == "small" else er_graphs(int(name.split("-")[1]))


def measure(name: str, n_envs: int, iterations: int, repeats: int) -> dict[str, list[Run]]:
    graphs = graphs_for(name)
    ppo = replace(PPOConfig(), n_envs=n_envs)
    config = bench_config(graphs, ppo=ppo, model=replace(bench_config(graphs).model, conv="sage", num_layers=3))
    models = {}
    for kind in ("dummy", "subproc"):  # ray: bench.ray_rollouts
        envs = make_vec_env(lambda: run_env(config, graphs), n_envs=n_envs, seed=0, vec_env_cls=VEC_ENVS[kind])
        models[kind] = build_model(replace(config, runtime=replace(config.runtime, vec_env=kind)), envs)
        timed_learn(models[kind], 1)  # warm up: subprocesses started, lazy initialisation done
    runs: dict[str, list[Run]] = {kind: [] for kind in models}
    for _ in range(repeats):
        for kind, model in models.items():
            runs[kind].append(timed_learn(model, iterations))
    for model in models.values():
        model.env.close()
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print_preamble("Vector env: one process (dummy) vs a process per env (subproc)", 1)
    rows = []
    for name, n_envs, iterations in CASES:
        runs = measure(name, n_envs, iterations, args.repeats)
        dummy, sub = runs["dummy"], runs["subproc"]
        ratio = median([s.steps_per_second / d.steps_per_second for d, s in zip(dummy, sub, strict=True)])
        rows.append(
            [
                name,
                n_envs,
                f"{iterations} × {args.repeats}",
                f"{median([r.steps_per_second for r in dummy]):.0f}",
                f"{median([r.steps_per_second for r in sub]):.0f}",
                f"**{ratio:.2f}×**",
                f"{median([r.rollout for r in dummy]):.2f} / {median([r.rollout for r in sub]):.2f}",
            ]
        )
    headers = ["graphs", "n_envs", "iterations × repeats", "dummy steps/s", "subproc steps/s", "subproc / dummy"]
    headers.append("rollout s (dummy / subproc)")
    print(markdown_table(headers, rows))


if __name__ == "__main__":
    main()
