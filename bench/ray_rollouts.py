"""When ``--vec-env ray`` pays: training on a toy env whose step sleeps ``delay`` seconds (a
simulator behind the graph), with every env in this process (dummy) and one Ray actor per env on
a local Ray instance (ray), everything else equal. Prints the rollout seconds of each and their
ratio (above 1: Ray is faster), per delay; repeats alternate between the two.

    .venv/bin/python -m bench.ray_rollouts [--n-envs 4] [--steps 256] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import ray
import torch

from bench.harness import markdown_table, median, print_preamble
from graphtransfer.config import ModelConfig, PPOConfig, RunConfig, Runtime
from graphtransfer.tasks.mis.env import MISEnv
from graphtransfer.training.loop import train

DELAYS = (0.0, 0.001, 0.01)


class SleepyMIS(MISEnv):
    """MIS whose every step also waits ``delay`` seconds, as an expensive simulator would."""

    def __init__(self, graphs, delay: float = 0.0):
        super().__init__(graphs)
        self.delay = delay

    def step(self, action):
        time.sleep(self.delay)
        return super().step(action)


def timed(vec_env: str, delay: float, n_envs: int, steps: int, folder: str) -> tuple[float, float]:
    """(rollout seconds, total seconds) of one training run."""
    config = RunConfig(
        env="bench.ray_rollouts:SleepyMIS",
        env_kwargs={"delay": delay},
        graphs="small",
        model=ModelConfig(width=32, head_width=32, num_layers=2),
        ppo=PPOConfig(total_timesteps=steps, n_envs=n_envs, n_steps=16, batch_size=32, n_epochs=2),
        runtime=Runtime(device="cpu", vec_env=vec_env),
    )
    started = time.perf_counter()
    result = train(config, os.path.join(folder, vec_env), log=lambda _: None)
    return result.rollout_seconds, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-envs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=256, help="env steps per run, summed over the envs")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print_preamble(f"Rollouts: dummy vs one Ray actor per env ({args.n_envs} envs, {args.steps} env steps per run)", 1)
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)  # started once, outside the timings
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for delay in DELAYS:
            runs: dict[str, list[tuple[float, float]]] = {"dummy": [], "ray": []}
            for _ in range(args.repeats):
                for kind in runs:
                    runs[kind].append(timed(kind, delay, args.n_envs, args.steps, folder))
            dummy, on_ray = runs["dummy"], runs["ray"]
            ratio = median([d[0] / r[0] for d, r in zip(dummy, on_ray, strict=True)])
            rows.append(
                [
                    f"{delay * 1000:g} ms",
                    f"{median([d[0] for d in dummy]):.2f}",
                    f"{median([r[0] for r in on_ray]):.2f}",
                    f"**{ratio:.2f}×**",
                    f"{median([d[1] for d in dummy]):.1f} / {median([r[1] for r in on_ray]):.1f}",
                ]
            )
    ray.shutdown()
    print(markdown_table(["env step delay", "dummy rollout s", "ray rollout s", "dummy / ray", "total s (dummy / ray)"], rows))


if __name__ == "__main__":
    main()
