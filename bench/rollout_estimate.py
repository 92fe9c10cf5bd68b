"""The rollout-memory estimate against what a rollout really stores, task by task.

``train`` sizes its rollout buffer from :func:`graphtransfer.training.buffers.estimate_rollout_bytes`
(a 16-step probe under random actions) and refuses an ``n_steps`` that would not fit. This fills
the compact buffer with one real rollout of an untrained policy (2 envs, seeded, as
tests/test_buffers.py does) and prints stored / estimate per task, graph set and ``n_steps``:
below 1 the estimate is on the safe side, above 1 it runs low.

    .venv/bin/python -m bench.rollout_estimate [--tasks mis,matching] [--n-steps 64,256]

Prints a Markdown table for bench/RESULTS.md. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import platform
from dataclasses import replace
from datetime import date

import torch
from stable_baselines3.common.env_util import make_vec_env

from graphtransfer.config import ModelConfig, PPOConfig, RunConfig, Runtime
from graphtransfer.envs.protocol import head_of
from graphtransfer.graphs import erdos_renyi, random_geometric
from graphtransfer.tasks.factory import run_env
from graphtransfer.training import model as training_model
from graphtransfer.training.buffers import estimate_rollout_bytes, held_bytes
from graphtransfer.training.model import buffer_class, build_model

TASKS = ("mis", "mvc", "epidemic", "maxcut", "matching", "path")
GRAPH_SETS = {
    "ER 20-30 nodes, degree 3 (the test's)": lambda: [erdos_renyi(n, 3.0, s) for s, n in enumerate((20, 30, 25))],
    "ER 200 nodes, degree 6": lambda: [erdos_renyi(200, 6.0, s) for s in range(3)],
    "RGG 300 nodes, degree 8": lambda: [random_geometric(300, 8.0, s) for s in range(2)],
}


def stored_over_estimate(task: str, graphs: list, n_steps: int, seed: int = 3) -> tuple[float, int, int]:
    """stored / estimate, the bytes stored, and the estimate, for one rollout of ``n_steps`` x 2 envs."""
    config = RunConfig(task=task, model=ModelConfig(width=16, head_width=16, num_layers=2))
    config = replace(
        config, ppo=PPOConfig(n_steps=n_steps, batch_size=16, n_epochs=2, n_envs=2, seed=seed), runtime=Runtime(device="cpu", threads=1)
    )
    config = replace(config, head=head_of(run_env(config, graphs)))
    estimate = estimate_rollout_bytes(buffer_class(config.head), run_env(config, graphs)).total(n_steps, 2)
    model = build_model(config, make_vec_env(lambda: run_env(config, graphs), n_envs=2, seed=seed))
    _, callback = model._setup_learn(2 * n_steps, None)
    model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)
    stored = held_bytes(model.rollout_buffer)
    return stored / estimate, stored, estimate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated built-in tasks")
    parser.add_argument("--n-steps", default="64,256", help="comma-separated rollout lengths (per env)")
    args = parser.parse_args()
    training_model.COMPACT_FROM_BYTES = 0  # the compact buffer at every size, as the estimate assumes
    torch.set_num_threads(1)
    steps = [int(s) for s in args.n_steps.split(",")]
    print(f"Command: `.venv/bin/python -m bench.rollout_estimate --tasks {args.tasks} --n-steps {args.n_steps}`  ")
    print(f"Date: {date.today()}; {platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}\n")
    print("| task | graphs | " + " | ".join(f"n_steps {n}: stored / estimate (KiB)" for n in steps) + " |")
    print("|---|---|" + "---:|" * len(steps))
    for task in args.tasks.split(","):
        for name, graphs in GRAPH_SETS.items():
            cells = []
            for n in steps:
                ratio, stored, estimate = stored_over_estimate(task, graphs(), n)
                cells.append(f"{ratio:.3f} ({stored / 1024:.0f} / {estimate / 1024:.0f})")
            print(f"| {task} | {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
