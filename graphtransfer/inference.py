"""Running a policy on one graph until the task is solved: no gradients, no SB3 predict detour."""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass

import numpy as np
import torch

from graphtransfer.envs.base import GraphEnv


@dataclass
class Solution:
    """A policy's answer on one graph."""

    solution: np.ndarray  # (num_nodes,) the task's per-node decision
    objective: float
    feasible: bool
    passes: int  # policy forward passes (env steps) it took
    seconds: float
    peak_rss_mib: float  # the process's peak resident memory so far


def obs_to_tensors(obs: dict[str, np.ndarray], device: torch.device) -> dict[str, torch.Tensor]:
    """One observation as a batch of one; ``from_numpy`` shares memory, so no copy on the CPU."""
    return {key: torch.from_numpy(value).unsqueeze(0).to(device) for key, value in obs.items()}


def solve(policy: torch.nn.Module, env: GraphEnv, deterministic: bool = True, seed: int = 0) -> Solution:
    """Run ``policy`` on the env's single graph until the episode ends (solved or horizon)."""
    started = time.perf_counter()
    policy.set_training_mode(False)
    obs, _ = env.reset(seed=seed)
    done, passes = False, 0
    with torch.inference_mode():
        while not done:
            actions = policy._predict(obs_to_tensors(obs, policy.device), deterministic=deterministic)
            obs, _, terminated, truncated, _ = env.step(actions[0].cpu().numpy())
            done, passes = terminated or truncated, passes + 1
    solution = env.solution()
    return Solution(
        solution=solution,
        objective=env.objective(env.graph, solution),
        feasible=env.feasible(env.graph, solution),
        passes=passes,
        seconds=time.perf_counter() - started,
        peak_rss_mib=peak_rss_mib(),
    )


def peak_rss_mib() -> float:
    """Peak resident set size of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
