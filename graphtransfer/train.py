"""Training a node-wise GNN policy with Stable-Baselines3's PPO on a set of small graphs."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env

from graphtransfer.checkpoint import save_checkpoint
from graphtransfer.config import RunConfig
from graphtransfer.envs import TASKS
from graphtransfer.errors import UsageError
from graphtransfer.graphs import load_graphs
from graphtransfer.nn import NodePolicy, policy_kwargs


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


def task_env_class(task: str):
    if task not in TASKS:
        raise UsageError(f"unknown task {task!r}; choose one of {sorted(TASKS)}")
    return TASKS[task]


def default_run_folder(config: RunConfig) -> Path:
    """``runs/<task>/<graph set name>``."""
    return Path("runs") / config.task / Path(config.graphs).stem


def train(config: RunConfig, folder: str | Path | None = None, progress: bool = False, log: Callable[[str], None] = print) -> TrainResult:
    """Train PPO on ``config.graphs`` and save the policy to ``folder`` (default
    :func:`default_run_folder`)."""
    env_class = task_env_class(config.task)
    graphs = load_graphs(config.graphs)
    ppo = config.ppo
    if ppo.batch_size > ppo.n_steps * ppo.n_envs:
        raise UsageError(f"batch_size={ppo.batch_size} exceeds n_steps * n_envs = {ppo.n_steps * ppo.n_envs}; lower it or raise n_steps")
    torch.set_num_threads(ppo.threads)
    envs = make_vec_env(lambda: env_class(graphs, horizon=config.horizon), n_envs=ppo.n_envs, seed=ppo.seed)
    model = PPO(
        NodePolicy,
        envs,
        policy_kwargs=policy_kwargs(config.model),
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
    sizes = [g.num_nodes for g in graphs]
    log(f"training {config.task} on {len(graphs)} graphs of {min(sizes)}-{max(sizes)} nodes for {ppo.total_timesteps} steps")
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
