"""A whole local-max episode on the policy's device (a GPU), for tasks that declare passes that run
there (``device_passes``, :class:`graphtransfer.envs.protocol.TaskMembers`): the solve reads the
declaration, the task's own module holds the passes (MIS: :mod:`graphtransfer.tasks.mis.device`).
"""

from __future__ import annotations

import numpy as np
import torch

from graphtransfer.nn.local_max import Until
from graphtransfer.tasks import Task


def runs_on_device(env, policy) -> bool:
    """Whether :func:`device_passes` can run this solve: the policy on a GPU and the env's own class
    declaring ``device_passes`` (a subclass that inherits them may change the features or rules they
    copy, so it does not), on one graph."""
    task = env.unwrapped
    return policy.device.type == "cuda" and Task.of(type(task)).device_passes is not None and len(task.graphs) == 1


def whole_graph(env) -> dict[str, np.ndarray]:
    """What :func:`graphtransfer.solve.inference.local_max_candidates` reads of an episode's first
    observation, from the env's one graph without building the observation."""
    graph = env.unwrapped.graphs[0]
    return {"num_nodes": np.array([graph.num_nodes]), "num_edges": np.array([graph.edge_index.shape[1]]), "edge_index": graph.edge_index}


def device_passes(
    policy,
    env,
    seed: int,
    candidates: int,
    order_noise: float,
    generator: torch.Generator,
    reductions: bool = True,
    until: Until | None = None,
) -> list[float]:
    """The env's declared ``device_passes``: an episode from its start to its end on ``policy.device``;
    returns each pass's reward."""
    passes = Task.of(type(env.unwrapped)).device_passes
    if passes is None:
        raise ValueError(f"{type(env.unwrapped).__name__} declares no device_passes; ask runs_on_device first")
    return passes(policy, env, seed, candidates, order_noise, generator, reductions, until)
