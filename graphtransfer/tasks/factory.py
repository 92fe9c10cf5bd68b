"""Every env construction: a built-in task, or the user's own env class or gymnasium id.

Every env is built as ``factory(graphs=[Graph, ...], **env_kwargs)``: graphtransfer hands an env
the graphs to sample from, which is how ``transfer`` points the same env at larger graphs.
Built-in tasks come from the package's registry (:data:`graphtransfer.tasks.TASKS`); a user env
is imported only under the name the user gave (a model folder's config is checked against it
before anything is built, see :func:`graphtransfer.checkpoint.read_checkpoint`).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, cast

import gymnasium as gym
from gymnasium import spaces

from graphtransfer.config import MAX_PASSES, RunConfig
from graphtransfer.envs.adapters import GraphObservationAdapter
from graphtransfer.envs.contract import check_contract
from graphtransfer.envs.protocol import EnvFeatures, SettableHorizon, features_of
from graphtransfer.envs.transforms import KernelRule
from graphtransfer.envs.user_task import USER_PASSES, UserTask
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph
from graphtransfer.tasks import TASKS, Task
from graphtransfer.tasks.path.env import query_positions


def task_of(config: RunConfig) -> Task:
    """The run's task: a built-in one from the registry, or what the user env's class declares
    (:class:`graphtransfer.tasks.Task`, the same members read the same way)."""
    if config.env is None:
        return _task(config.task)
    return Task.of(_env_class(config.env), config.name)


def renumberable(config: RunConfig) -> bool:
    """Whether the run's task lets inference renumber a graph's nodes: its env class declares
    :attr:`~graphtransfer.envs.base.GraphEnv.renumberable`."""
    return task_of(config).renumberable


def graph_kernel(config: RunConfig) -> KernelRule | None:
    """The run's task's :attr:`~graphtransfer.envs.base.GraphEnv.kernel` rule, where its env class declares one."""
    return task_of(config).kernel


def run_env(config: RunConfig, graphs: Sequence[Graph]) -> gym.Env:
    """The run's env over ``graphs``, with the run's training horizon."""
    return make_env(config.task, config.env, config.env_kwargs, graphs, config.horizon)


def inference_env(config: RunConfig, graph: Graph, max_passes: int | None = None, query: tuple[int, int] | None = None) -> gym.Env:
    """The run's env on one graph, built for inference. Tasks that end once solved (MIS, MVC)
    run longer than in training, their ``inference_horizon``; ``max_passes`` overrides either.
    A built-in task gets the horizon in its constructor; a user env becomes a
    :class:`~graphtransfer.envs.user_task.UserTask` whose pass budget is ``max_passes``, else its
    ``inference_horizon``, else :data:`~graphtransfer.envs.user_task.USER_PASSES` where it
    declares ``active_nodes`` (an env with a settable ``horizon`` gets it set too); its own
    truncation ends the solve only where it declares neither and no ``max_passes`` is given. ``query``, the positions of a
    source and a target, is for the ``path`` task alone."""
    if query is not None:
        _check_routes(config)
    if max_passes is not None and (isinstance(max_passes, bool) or not 1 <= max_passes <= MAX_PASSES):
        raise UsageError(f"max_passes {max_passes!r} must be a whole number from 1 to {MAX_PASSES:,} (None: the task's)")
    if config.env is None:
        horizon = max_passes or _task(config.task).env.inference_horizon
        kwargs = {**config.env_kwargs, **({"horizon": horizon} if horizon else {}), **({"query": query} if query else {})}
        return make_env(config.task, None, kwargs, [graph], config.horizon)
    built = _user_env(config.env, config.env_kwargs, [graph])
    features = features_of(built)
    budget = max_passes or features.inference_horizon
    if budget and isinstance(getattr(built.unwrapped, "horizon", None), int):
        cast(SettableHorizon, built.unwrapped).horizon = budget
    # an env that says which nodes are undecided, or a solve given its passes, is not cut at a training horizon
    own_episodes = max_passes is None and features.active_nodes is None
    budget = budget or (MAX_PASSES if own_episodes else USER_PASSES)
    return as_task(built, config.env, config.env_kwargs, [graph], budget, own_episodes)


def named_query(config: RunConfig, graph: Graph, source: str | None, target: str | None) -> tuple[int, int] | None:
    """The route query a user named by the graph's own ids ``source`` and ``target``, as
    positions for :func:`inference_env`: both or neither (``None``: the graph's own query), for
    a path model only, checked by :func:`graphtransfer.tasks.path.env.query_positions` (ids that
    exist, differ, and are connected); each refusal a :class:`UsageError` that says the fix."""
    if source is None and target is None:
        return None
    _check_routes(config)
    if source is None or target is None:
        raise UsageError("--source and --target go together: give both, or neither for the graph's own query")
    return query_positions(graph, source, target)


def _check_routes(config: RunConfig) -> None:
    if not task_of(config).takes_query:
        raise task_of(config).refuse("--source and --target", "takes_query")


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
        kwargs = {**({"horizon": horizon} if horizon else {}), **env_kwargs}
        return _construct(_task(task).env, kwargs, graphs, task)
    built = _user_env(env, env_kwargs, graphs)
    return as_task(built, env, env_kwargs, graphs) if _views_residual(features_of(built)) else built


def _user_env(env: str, env_kwargs: dict[str, Any], graphs: Sequence[Graph]) -> gym.Env:
    """The user's env as its class builds it, checked against the contract and the protocol."""
    built = _construct(_load(env), env_kwargs, graphs, env)
    if isinstance(built.observation_space, spaces.Graph):
        built = GraphObservationAdapter(built)
    check_contract(built.observation_space, where=env)
    features_of(built)  # the optional members it declares must be usable
    return built


def _views_residual(features: EnvFeatures) -> bool:
    """Whether the policy of a user env sees the residual graph (it declares ``active_nodes``)."""
    return features.active_nodes is not None


def as_task(
    built: gym.Env, env: str, env_kwargs: dict[str, Any], graphs: Sequence[Graph], budget: int | None = None, own_episodes: bool = True
) -> UserTask:
    """The user's env ``built`` as a :class:`UserTask` (``budget``, ``own_episodes``: its inference
    pass budget, and whether the env's own truncation still ends a solve), rebuilt on a kernel's
    graph the same way."""
    return UserTask(built, lambda graph: _user_env(env, env_kwargs, [graph]), list(graphs), budget, own_episodes)


def _task(name: str | None) -> Task:
    if name is None or name not in TASKS:
        raise UsageError(f"unknown task {name!r}; choose one of {sorted(TASKS)} or pass --env module:Class")
    return TASKS[name]


def _env_class(spec: str):
    """The class (or factory) ``--env`` names, whose members declare the task: a gymnasium id's entry point."""
    if ":" not in spec and spec in gym.registry:
        entry = gym.spec(spec).entry_point
        return _load(entry) if isinstance(entry, str) else entry
    return _load(spec)


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


def _construct(factory, kwargs: dict[str, Any], graphs: Sequence[Graph], name: str | None) -> gym.Env:
    try:
        return factory(graphs=list(graphs), **kwargs)
    except TypeError as err:
        raise UsageError(
            f"env {name!r} could not be built with graphs=... and {sorted(kwargs)} ({err}); its constructor must accept graphs"
        ) from None
