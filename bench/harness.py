"""What the benchmarks share: the two compared models, the graphs, medians, tables, the machine.

Both sides are built from one :class:`RunConfig`, so they train on the same env with the same
PPO settings; ours always goes through ``graphtransfer.training.loop.build_model``, so a benchmark run
measures whatever the library currently does.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv

from bench.plain_recipe import plain_model
from graphtransfer.config import ModelConfig, PPOConfig, RunConfig
from graphtransfer.envs.factory import run_env
from graphtransfer.envs.protocol import head_of
from graphtransfer.graphs import Graph, barabasi_albert, erdos_renyi
from graphtransfer.training.model import build_model

# The architecture and PPO settings of the measurements in project issue 5.
BENCH_MODEL = ModelConfig(conv="gcn", num_layers=2, width=64)
BENCH_PPO = PPOConfig(n_steps=64, batch_size=32, n_epochs=2, n_envs=1, device="cpu")
LARGE_NODES = 250_151


def bench_config(graphs: Sequence[Graph], ppo: PPOConfig = BENCH_PPO, model: ModelConfig = BENCH_MODEL) -> RunConfig:
    """An MIS run on ``graphs`` with the head filled in from the env, as ``train()`` does."""
    config = RunConfig(task="mis", model=model, ppo=ppo)
    return replace(config, head=head_of(run_env(config, list(graphs))))


def vec_env(config: RunConfig, graphs: Sequence[Graph]) -> VecEnv:
    return make_vec_env(lambda: run_env(config, list(graphs)), n_envs=config.ppo.n_envs, seed=config.ppo.seed)


def build_plain(config: RunConfig, envs: VecEnv) -> BaseAlgorithm:
    return plain_model(envs, config.ppo, config.model.width)


# Each side turns the same config and env into an SB3 model; plain first, the baseline.
SIDES: dict[str, Callable[[RunConfig, VecEnv], BaseAlgorithm]] = {"plain": build_plain, "ours": build_model}


def er_graphs(num_nodes: int, count: int = 3) -> list[Graph]:
    """``count`` Erdős–Rényi graphs of average degree 4: about ``4 * num_nodes`` directed edges."""
    return [erdos_renyi(num_nodes, 4.0, seed) for seed in range(count)]


def large_graph() -> Graph:
    """The issue's large graph: 250,151 nodes, about a million undirected edges (power law)."""
    return barabasi_albert(LARGE_NODES, 4, 7)


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


def verdict(ratio: float, target: float, higher_is_better: bool = True) -> str:
    """Whether ``ratio`` meets ``target``, and by what factor it clears or misses it."""
    margin = ratio / target if higher_is_better else target / ratio
    return f"yes, {margin:.1f}× margin" if margin >= 1 else f"no, {1 / margin:.1f}× short"


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
