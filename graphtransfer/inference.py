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


def solve(policy: torch.nn.Module, env: GraphEnv, deterministic: bool = False, seed: int = 0) -> Solution:
    """Run ``policy`` on the env's single graph until the episode ends (solved or horizon).

    Actions are sampled from the policy by default, seeded by ``seed`` so a run repeats exactly.
    Node-wise policies learn to break ties between look-alike neighbours by chance; taking each
    node's most likely action (``deterministic``) can leave such pairs rolling back until the
    pass limit (measured: 0.89-0.95 of greedy MIS against 0.99 sampled, 2,000-node graphs).
    """
    started = time.perf_counter()
    policy.set_training_mode(False)
    obs, _ = env.reset(seed=seed)
    torch.manual_seed(seed)
    done, passes = False, 0
    with torch.inference_mode():
        while not done:
            active = np.flatnonzero(env.active_nodes())
            actions = np.zeros(env.graph.num_nodes, dtype=np.int64)
            if active.size:
                compact = obs_to_tensors(active_subgraph(obs, active), policy.device)
                actions[active] = policy._predict(compact, deterministic=deterministic)[0].cpu().numpy()
            obs, _, terminated, truncated, _ = env.step(actions)
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


def active_subgraph(obs: dict[str, np.ndarray], active: np.ndarray) -> dict[str, np.ndarray]:
    """The observation restricted to the ``active`` node ids, renumbered ``0..len(active)-1``.

    Exact for the active nodes because no observed edge joins them to inactive ones (the
    :meth:`GraphEnv.active_nodes` contract); later passes shrink as nodes get decided.
    """
    num_nodes, num_edges = int(obs["num_nodes"][0]), int(obs["num_edges"][0])
    if active.size == num_nodes:
        return {**obs, "x": obs["x"][:num_nodes], "edge_index": obs["edge_index"][:, :num_edges]}
    new_id = np.full(num_nodes, -1, dtype=np.int64)
    new_id[active] = np.arange(active.size)
    edge_index = new_id[obs["edge_index"][:, :num_edges]]
    return {
        "x": obs["x"][active],
        "edge_index": edge_index,
        "num_nodes": np.array([active.size], dtype=np.int64),
        "num_edges": np.array([num_edges], dtype=np.int64),
    }


def peak_rss_mib() -> float:
    """Peak resident set size of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
