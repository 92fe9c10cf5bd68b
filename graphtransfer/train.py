"""Training a GNN policy with Stable-Baselines3's PPO (MaskablePPO for node choice) on small graphs."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv

from graphtransfer.checkpoint import save_checkpoint
from graphtransfer.config import RunConfig
from graphtransfer.envs.factory import head_of, make_env
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, load_graphs
from graphtransfer.nn import POLICIES, policy_kwargs


@dataclass
class TrainResult:
    folder: Path
    steps: int
    seconds: float
    rollout_seconds: float
    update_seconds: float

    @property
    def steps_per_second(self) -> float:
        return self.steps / max(self.seconds, 1e-9)


class PhaseTimer(BaseCallback):
    """Splits wall time into rollout collection and PPO updates."""

    def __init__(self):
        super().__init__()
        self.rollout = self.update = 0.0
        self._mark: float | None = None

    def _on_rollout_start(self) -> None:
        now = time.perf_counter()
        if self._mark is not None:
            self.update += now - self._mark
        self._mark = now

    def _on_rollout_end(self) -> None:
        now = time.perf_counter()
        self.rollout += now - self._mark
        self._mark = now

    def _on_training_end(self) -> None:
        self._on_rollout_start()

    def _on_step(self) -> bool:
        return True


def default_run_folder(config: RunConfig) -> Path:
    """``runs/<task or env name>/<graph set name>``."""
    return Path("runs") / config.name / Path(config.graphs).stem


def run_env(config: RunConfig, graphs: list[Graph]):
    """The run's env over ``graphs``."""
    return make_env(config.task, config.env, config.env_kwargs, graphs, config.horizon)


def build_model(config: RunConfig, envs: VecEnv) -> PPO:
    """The SB3 algorithm for ``config.head`` on ``envs``: PPO, or MaskablePPO for node choice."""
    if config.head == "node-choice" and not hasattr(envs.envs[0].unwrapped, "action_masks"):
        raise UsageError(f"{config.name}: a node-choice env (Discrete(max_nodes) actions) needs an action_masks() method for MaskablePPO")
    ppo = config.ppo
    algorithm = MaskablePPO if config.head == "node-choice" else PPO
    return algorithm(
        POLICIES[config.head],
        envs,
        policy_kwargs=policy_kwargs(config.head, config.model),
        n_steps=ppo.n_steps,
        batch_size=ppo.batch_size,
        n_epochs=ppo.n_epochs,
        learning_rate=ppo.learning_rate,
        gamma=ppo.gamma,
        gae_lambda=ppo.gae_lambda,
        clip_range=ppo.clip_range,
        ent_coef=ppo.ent_coef,
        target_kl=ppo.target_kl,
        seed=ppo.seed,
        device=ppo.device,
        verbose=0,
    )


def rollout_buffer_bytes(observation_space: spaces.Dict, action_space: spaces.Space, n_steps: int, n_envs: int) -> int:
    """What SB3's rollout buffer allocates: every observation key and the actions as float32 for
    each of ``n_steps * n_envs`` steps, plus six float32 scalars per step (rewards, returns, ...)."""
    per_step = sum(int(np.prod(space.shape)) for space in observation_space.spaces.values())
    per_step += int(np.prod(action_space.shape or (1,))) + 6
    return 4 * per_step * n_steps * n_envs


def check_buffer_fits(config: RunConfig, env, log: Callable[[str], None]) -> None:
    """Print the rollout buffer's size; refuse, with an n_steps that fits, when it would not."""
    ppo = config.ppo
    needed = rollout_buffer_bytes(env.observation_space, env.action_space, ppo.n_steps, ppo.n_envs)
    budget = available_memory_bytes() // 2  # leave room for the model, activations and the envs
    log(f"rollout buffer: {needed / 2**20:.1f} MiB for {ppo.n_steps} steps x {ppo.n_envs} envs")
    if needed > budget:
        fits = max(1, budget * ppo.n_steps // needed)
        raise UsageError(
            f"the rollout buffer needs {needed / 2**30:.1f} GiB but {budget / 2**30:.1f} GiB is half of the available memory; "
            f"use n_steps={fits} or fewer (or fewer envs, or smaller graphs)"
        )


def available_memory_bytes() -> int:
    """MemAvailable from /proc/meminfo; ``$GRAPHTRANSFER_MEMORY_LIMIT_MB`` overrides it."""
    if "GRAPHTRANSFER_MEMORY_LIMIT_MB" in os.environ:
        return int(os.environ["GRAPHTRANSFER_MEMORY_LIMIT_MB"]) * 2**20
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 2**63


def train(config: RunConfig, folder: str | Path | None = None, progress: bool = False, log: Callable[[str], None] = print) -> TrainResult:
    """Train on ``config.graphs`` and save the policy to ``folder`` (default
    :func:`default_run_folder`)."""
    graphs = load_graphs(config.graphs)
    ppo = config.ppo
    if ppo.batch_size > ppo.n_steps * ppo.n_envs:
        raise UsageError(f"batch_size={ppo.batch_size} exceeds n_steps * n_envs = {ppo.n_steps * ppo.n_envs}; lower it or raise n_steps")
    probe = run_env(config, graphs)
    config = replace(config, head=head_of(probe))
    check_buffer_fits(config, probe, log)
    torch.set_num_threads(ppo.threads)
    envs = make_vec_env(lambda: run_env(config, graphs), n_envs=ppo.n_envs, seed=ppo.seed)
    model = build_model(config, envs)
    sizes = [g.num_nodes for g in graphs]
    what = f"{config.name} ({config.head} head, {type(model).__name__})"
    log(f"training {what} on {len(graphs)} graphs of {min(sizes)}-{max(sizes)} nodes for {ppo.total_timesteps} steps")
    timer = PhaseTimer()
    started = time.perf_counter()
    model.learn(ppo.total_timesteps, callback=timer, progress_bar=progress)
    result = TrainResult(
        Path(folder or default_run_folder(config)), model.num_timesteps, time.perf_counter() - started, timer.rollout, timer.update
    )
    info = {
        "trained_on": {"graphs": config.graphs, "num_graphs": len(graphs), "min_nodes": min(sizes), "max_nodes": max(sizes)},
        "training": {
            "steps": result.steps,
            "seconds": round(result.seconds, 2),
            "rollout_seconds": round(result.rollout_seconds, 2),
            "update_seconds": round(result.update_seconds, 2),
        },
    }
    save_checkpoint(result.folder, model.policy, config, info)
    return result
