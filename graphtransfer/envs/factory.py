"""Building the env of a run: a built-in task, or the user's own env class or gymnasium id.

Every env is built as ``factory(graphs=[Graph, ...], **env_kwargs)``: graphtransfer hands an env
the graphs to sample from, which is how ``transfer`` points the same env at larger graphs.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from graphtransfer.envs import TASKS
from graphtransfer.envs.adapters import GraphObservationAdapter
from graphtransfer.envs.contract import check_contract, infer_head
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph


def make_env(task: str | None, env: str | None, env_kwargs: dict[str, Any], graphs: Sequence[Graph], horizon: int | None = None) -> gym.Env:
    """The env for a run, checked against the observation contract.

    Args:
        task: a built-in task name (ignored when ``env`` is given).
        env: ``"package.module:Class"`` or a registered gymnasium id.
        env_kwargs: extra constructor arguments.
        graphs: the graphs the env samples from.
        horizon: episode length for built-in tasks (``None``: the task's default).
    """
    if env is None:
        if task not in TASKS:
            raise UsageError(f"unknown task {task!r}; choose one of {sorted(TASKS)} or pass --env module:Class")
        kwargs = {**({"horizon": horizon} if horizon else {}), **env_kwargs}
        return _construct(TASKS[task], kwargs, graphs, task)
    built = _construct(_load(env), env_kwargs, graphs, env)
    if isinstance(built.observation_space, spaces.Graph):
        built = GraphObservationAdapter(built)
    check_contract(built.observation_space, where=env)
    return built


def head_of(env: gym.Env) -> str:
    """The env's declared ``head``, or the one its spaces imply."""
    declared = getattr(env.unwrapped, "head", None)
    return declared or infer_head(env.observation_space, env.action_space)


def _load(spec: str):
    if ":" in spec:
        module_name, _, attribute = spec.partition(":")
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())  # as `python -m` does: the user's modules live here
        try:
            return getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as err:
            raise UsageError(f"--env {spec!r}: cannot import it ({err}); expected 'package.module:Class' importable from here") from None
    if spec in gym.registry:
        return lambda **kwargs: gym.make(spec, **kwargs)
    raise UsageError(f"--env {spec!r}: not 'package.module:Class' and not a registered gymnasium id")


def _construct(factory, kwargs: dict[str, Any], graphs: Sequence[Graph], name: str) -> gym.Env:
    try:
        return factory(graphs=list(graphs), **kwargs)
    except TypeError as err:
        raise UsageError(
            f"env {name!r} could not be built with graphs=... and {sorted(kwargs)} ({err}); its constructor must accept graphs"
        ) from None
