"""What the benchmarks that compare graphtransfer with itself share (dummy vs subproc vector
envs, buffers, node budgets, workers): the run settings, the graphs, timed training, fresh
processes, medians, tables, the machine. Comparisons with the plain SB3 + PyG recipe run
``../shared/plain-recipe`` as it is (bench/forward.py, bench/training_recipe.py).
"""

from __future__ import annotations

import gc
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from multiprocessing import get_context
from pathlib import Path

import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv

from graphtransfer.config import ModelConfig, PPOConfig, RunConfig, Runtime
from graphtransfer.envs.protocol import head_of
from graphtransfer.graphs import Graph, erdos_renyi
from graphtransfer.tasks.factory import run_env
from graphtransfer.training.callbacks import PhaseTimer

# The architecture and PPO settings of the measurements in project issue 5.
BENCH_MODEL = ModelConfig(conv="gcn", num_layers=2, width=64)
BENCH_PPO = PPOConfig(n_steps=64, batch_size=32, n_epochs=2, n_envs=1)


def bench_config(graphs: Sequence[Graph], ppo: PPOConfig = BENCH_PPO, model: ModelConfig = BENCH_MODEL) -> RunConfig:
    """An MIS run on ``graphs`` with the head filled in from the env, as ``train()`` does."""
    config = RunConfig(task="mis", model=model, ppo=ppo, runtime=Runtime(device="cpu"))
    return replace(config, head=head_of(run_env(config, list(graphs))))


def vec_env(config: RunConfig, graphs: Sequence[Graph]) -> VecEnv:
    return make_vec_env(lambda: run_env(config, list(graphs)), n_envs=config.ppo.n_envs, seed=config.ppo.seed)


@dataclass
class Run:
    """One timed stretch of training."""

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


MIB = 1024  # ru_maxrss is in KiB on Linux


def in_fresh_process(function: Callable, *args):
    """``function(*args)`` in a newly spawned interpreter; its memory high-water mark is its own."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(function, *args).result()


def rss_before_call() -> int:
    """Lower the high-water mark to the current RSS (Linux), so that ``ru_maxrss`` afterwards
    measures only what follows; without that, the larger of the two is what gets reported."""
    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def er_graphs(num_nodes: int, count: int = 3) -> list[Graph]:
    """``count`` Erdős–Rényi graphs of average degree 4: about ``4 * num_nodes`` directed edges."""
    return [erdos_renyi(num_nodes, 4.0, seed) for seed in range(count)]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def seconds_per_call(call: Callable[[], object], calls: int = 1) -> float:
    """Wall seconds per call of ``call``, averaged over ``calls`` back-to-back calls."""
    started = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - started) / calls


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def print_preamble(title: str, threads: int) -> None:
    """Title, the command that reproduces the run, date and machine, as RESULTS.md records them."""
    module = f"bench.{Path(sys.argv[0]).stem}"
    print(f"### {title}\n")
    print(f"Command: `.venv/bin/python -m {' '.join([module, *sys.argv[1:]])}`  ")
    print(f"Date: {time.strftime('%Y-%m-%d')}; machine: {os.cpu_count()} cores, {cpu_model()}; ", end="")
    print(f"torch {torch.__version__} with {threads} thread(s); Python {platform.python_version()}\n")
