"""Building the SB3 algorithm for a run -- by ``algo`` and head: PPO or MaskablePPO, A2C or
MaskableA2C, DQN for node choice -- its rollout or replay buffer checked against available
memory, the vector env, the device; and :func:`load_model`, a saved model as an SB3 algorithm
for other graphs."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBuffer
from stable_baselines3.common.buffers import DictRolloutBuffer
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from graphtransfer.config import PPOConfig, RunConfig, schedule
from graphtransfer.envs.contract import box_shape, check_contract
from graphtransfer.envs.protocol import Head, head_of
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, load_graphs
from graphtransfer.nn import POLICIES, Q_POLICIES, policy_kwargs, q_policy_kwargs
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.solve.memory import available_bytes
from graphtransfer.tasks.factory import run_env
from graphtransfer.training.a2c import GraphA2C, GroupedA2CUpdate, MaskableA2C
from graphtransfer.training.batched_vec_env import BatchedVecEnv, batch_of, batched, overridden_by
from graphtransfer.training.buffers import (
    CompactDictRolloutBuffer,
    CompactMaskableDictRolloutBuffer,
    CompactStorage,
    estimate_rollout_bytes,
)
from graphtransfer.training.dqn import GraphDQN
from graphtransfer.training.ppo import BudgetMaskablePPO, BudgetPPO, NodeBudgetUpdate
from graphtransfer.training.ray_vec_env import RayVecEnv
from graphtransfer.training.replay import estimate_replay_bytes
from graphtransfer.training.runtime import RuntimeSettings

VEC_ENVS = {"dummy": DummyVecEnv, "subproc": SubprocVecEnv, "ray": RayVecEnv}


ALGO_HEADS: dict[str, tuple[Head, ...]] = {"ppo": tuple(Head), "a2c": tuple(Head), "dqn": tuple(Q_POLICIES)}
"""the heads each algorithm trains"""


def check_algo(config: RunConfig) -> None:
    """Refuse an algorithm for a head it does not train, naming those that do."""
    if config.head and config.head not in ALGO_HEADS[config.algo]:
        fits = " or ".join(f"--algo {algo}" for algo, heads in ALGO_HEADS.items() if config.head in heads)
        raise UsageError(
            f"{config.name}: --algo {config.algo} trains {', '.join(map(str, ALGO_HEADS[config.algo]))} heads only (a Q-value "
            f"per node or edge), and this env's head is {config.head}; use {fits}"
        )


def build_model(config: RunConfig, envs: VecEnv, seed: int | None = None) -> RuntimeSettings:
    """The SB3 algorithm of ``config.algo`` for ``config.head`` on ``envs``, with the run's node
    budget and mixed-precision setting: PPO, or MaskablePPO for node choice (with the node budget
    in its update too); A2C, or :class:`MaskableA2C` for node choice; DQN for node choice. Node-
    and edge-choice heads are masked (MaskablePPO, MaskableA2C)."""
    check_algo(config)
    if Head(config.head).chooses and not envs.has_attr("action_masks"):
        raise UsageError(
            f"{config.name}: a {config.head} env (Discrete(max_nodes or max_edges) actions) needs an action_masks() method for masking"
        )
    runtime = {"max_nodes_per_batch": config.runtime.max_nodes_per_batch, "mixed_precision": config.runtime.mixed_precision}
    seed = config.ppo.seed if seed is None else seed
    return BUILDERS[config.algo](config, envs, seed, runtime)


def _ppo(config: RunConfig, envs: VecEnv, seed: int, runtime: dict[str, Any]) -> NodeBudgetUpdate:
    algorithm = BudgetMaskablePPO if Head(config.head).chooses else BudgetPPO
    buffer = buffer_class(config.head, check_contract(envs.observation_space), config.ppo.n_steps * envs.num_envs)
    kwargs = {**sb3_kwargs(config.ppo), "seed": seed, "device": config.runtime.device, **runtime, "rollout_buffer_class": buffer}
    return algorithm(POLICIES[Head(config.head)], envs, policy_kwargs=policy_kwargs(config.head, config.model), **kwargs)


def _a2c(config: RunConfig, envs: VecEnv, seed: int, runtime: dict[str, Any]) -> GroupedA2CUpdate:
    ppo = config.ppo
    names = ("n_steps", "gamma", "gae_lambda", "ent_coef")
    kwargs = {name: getattr(ppo, name) for name in names} | {"device": config.runtime.device}
    kwargs |= {"learning_rate": schedule(ppo.learning_rate), "seed": seed, "verbose": 0}
    buffer = buffer_class(config.head, check_contract(envs.observation_space), ppo.n_steps * envs.num_envs)
    kwargs |= {**runtime, "rollout_buffer_class": buffer, "policy_kwargs": policy_kwargs(config.head, config.model)}
    if Head(config.head).chooses:  # the whole rollout in one minibatch, one epoch, SB3's A2C loss: see training/a2c.py
        whole: dict[str, Any] = {"batch_size": ppo.n_steps * ppo.n_envs, "n_epochs": 1, "normalize_advantage": False}
        return MaskableA2C(POLICIES[Head(config.head)], envs, **whole, **kwargs)
    return GraphA2C(POLICIES[Head(config.head)], envs, **kwargs)


def _dqn(config: RunConfig, envs: VecEnv, seed: int, runtime: dict[str, Any]) -> GraphDQN:
    ppo, dqn = config.ppo, config.dqn
    kwargs = {name: getattr(ppo, name) for name in ("batch_size", "gamma")} | {"device": config.runtime.device} | asdict(dqn)
    kwargs |= {"learning_rate": schedule(ppo.learning_rate), "seed": seed, "verbose": 0, **runtime}
    return GraphDQN(Q_POLICIES[Head(config.head)], envs, policy_kwargs=q_policy_kwargs(config.model), **kwargs)


BUILDERS = {"ppo": _ppo, "a2c": _a2c, "dqn": _dqn}


COMPACT_FROM_BYTES = 16 * 2**20
"""Rollouts whose observations take fewer bytes in SB3's own buffer are kept there (see buffer_class)."""


def buffer_class(head: str, observation_space: spaces.Dict | None = None, steps: int = 0) -> type[DictRolloutBuffer]:
    """The rollout buffer for ``head``'s algorithm (MaskablePPO's keeps action masks): the compact
    one, or SB3's own when ``steps`` observations of ``observation_space`` take less than
    :data:`COMPACT_FROM_BYTES` there (float32, as SB3 stores them). Packing and rebuilding cost
    13% of training's env steps/s at 50 nodes and 6% at 1,000 (``bench.buffer_speed``), where a
    rollout of 64 steps holds 0.2 and 4.6 MB; from 10,000 nodes (46 MB) up it saves 92-95% of the
    memory. Training is the same, weight for weight, with either (``tests/test_buffers.py``)."""
    if observation_space is not None and plain_rollout_bytes(observation_space, steps) < COMPACT_FROM_BYTES:
        return MaskableDictRolloutBuffer if Head(head).chooses else DictRolloutBuffer
    return CompactMaskableDictRolloutBuffer if Head(head).chooses else CompactDictRolloutBuffer


def plain_rollout_bytes(observation_space: spaces.Dict, steps: int) -> int:
    """What ``steps`` observations take in SB3's own buffer, which stores every key as float32."""
    return steps * sum(4 * math.prod(box_shape(observation_space, key)) for key in observation_space.spaces)


def sb3_kwargs(ppo: PPOConfig) -> dict[str, Any]:
    """The arguments of SB3's ``PPO`` that :class:`PPOConfig` sets."""
    names = (
        "n_steps",
        "batch_size",
        "n_epochs",
        "learning_rate",
        "gamma",
        "gae_lambda",
        "clip_range",
        "ent_coef",
        "target_kl",
        "seed",
    )
    kwargs = {name: getattr(ppo, name) for name in names} | {"verbose": 0}
    return kwargs | {"learning_rate": schedule(ppo.learning_rate), "clip_range": schedule(ppo.clip_range)}


def check_buffer_fits(config: RunConfig, env, log: Callable[[str], None]) -> None:
    """Print the rollout (or DQN's replay) buffer's estimated size; refuse, with an n_steps (a
    buffer_size) that fits, when it would not. The estimate fills a real buffer with a short probe
    of ``env`` (which it steps)."""
    if config.algo == "dqn":
        return check_replay_fits(config, env, log)
    ppo = config.ppo
    steps = ppo.n_steps * ppo.n_envs
    chosen = buffer_class(config.head, env.observation_space, steps)
    if not issubclass(chosen, CompactStorage):
        plain = plain_rollout_bytes(env.observation_space, steps)
        below = COMPACT_FROM_BYTES // 2**20
        log(f"rollout buffer: {plain / 2**20:.1f} MiB for {ppo.n_steps} steps x {ppo.n_envs} envs (SB3's own buffer, below {below} MiB)")
        return
    estimate = estimate_rollout_bytes(chosen, env)
    needed = estimate.total(ppo.n_steps, ppo.n_envs)
    budget = memory_budget()
    log(f"rollout buffer: {needed / 2**20:.1f} MiB for {ppo.n_steps} steps x {ppo.n_envs} envs (estimated from a 16-step probe)")
    if needed > budget:
        fits = max(1, estimate.steps_that_fit(budget, ppo.n_envs))
        raise UsageError(
            f"the rollout buffer needs {needed / 2**30:.1f} GiB but {budget / 2**30:.1f} GiB is half of the available memory; "
            f"use n_steps={fits} or fewer (or fewer envs, or smaller graphs)"
        )


def memory_budget() -> int:
    """Bytes a buffer may take: half the available memory, leaving room for the model, activations and the envs."""
    available = available_bytes()
    return (available[0] if available else 2**63) // 2


def check_replay_fits(config: RunConfig, env, log: Callable[[str], None]) -> None:
    """Print DQN's replay buffer's estimated size at ``buffer_size`` transitions; refuse, with a
    buffer_size that fits, when it would not (see :mod:`graphtransfer.training.replay`)."""
    per_transition = estimate_replay_bytes(env)
    size = config.dqn.buffer_size
    needed, budget = per_transition * size, memory_budget()
    log(f"replay buffer: {needed / 2**20:.1f} MiB for {size} transitions (estimated from a 16-step probe)")
    if needed > budget:
        fits = max(1, int(budget // max(per_transition, 1)))
        raise UsageError(
            f"the replay buffer needs {needed / 2**30:.1f} GiB for dqn.buffer_size={size} but {budget / 2**30:.1f} GiB is half of the "
            f"available memory; use --set dqn.buffer_size={fits} or fewer (or smaller graphs)"
        )


def make_model(config: RunConfig, graphs: list[Graph], seed: int) -> RuntimeSettings:
    """The run's algorithm on its vector env, with a logger that writes nothing (without one, SB3's
    ``learn`` makes an empty folder in the temp dir every call); :func:`_learn` sets the run's own."""
    runtime = config.runtime
    torch.set_num_threads(runtime.threads or 1)
    envs = vector_env(config, graphs, seed)
    try:
        model = build_model(config, envs, seed)
        model.set_logger(Logger(None, []))
        return model
    except BaseException:
        envs.close()  # subprocess envs would outlive the error
        raise


def vector_env(config: RunConfig, graphs: list[Graph], seed: int) -> VecEnv:
    """The run's ``n_envs`` envs as the VecEnv ``runtime.vec_env`` names: ``auto`` is
    :class:`BatchedVecEnv` where the env class declares a batch and there are two envs or more, else
    ``DummyVecEnv``; ``batched`` for an env without one is refused in one line."""
    runtime = config.runtime
    kind = runtime.vec_env
    if kind in ("auto", "batched"):
        probe = run_env(config, graphs)
        check_vec_env(config, probe)
        if batched(probe) and (kind == "batched" or config.ppo.n_envs > 1):  # one env has nothing to batch (and steps faster alone)
            envs = BatchedVecEnv([probe, *(run_env(config, graphs) for _ in range(config.ppo.n_envs - 1))])
            envs.seed(seed)
            return envs
        probe.close()
        kind = "dummy"
    ray = {"address": runtime.ray_address} if kind == "ray" else None
    vec_env = VEC_ENVS[kind]
    return make_vec_env(lambda: run_env(config, graphs), n_envs=config.ppo.n_envs, seed=seed, vec_env_cls=vec_env, vec_env_kwargs=ray)  # type: ignore[arg-type]  # SB3 types it as its own two VecEnv classes


def check_vec_env(config: RunConfig, env) -> None:
    """Refuse ``--vec-env batched`` for an env whose class declares no batch, or whose class overrides
    what its parent's batch runs, in one line."""
    if config.runtime.vec_env != "batched" or batched(env):
        return
    if batch_of(env) is None:
        raise UsageError(
            f"{config.name}: --vec-env batched needs an env class that declares `batched` (see docs/guide/your-env.md); "
            "use --vec-env auto or dummy"
        )
    raise UsageError(
        f"{config.name}: --vec-env batched would skip {', '.join(overridden_by(env))}, which its parent's batch does not run; "
        "use --vec-env auto or dummy (or declare a batch on the subclass)"
    )


def load_model(folder: str | Path, graphs: str | Path | list[Graph], env: str | None = None) -> RuntimeSettings:
    """The model in ``folder`` as the SB3 algorithm it was trained with (``PPO`` or ``MaskablePPO``,
    ``A2C`` or :class:`MaskableA2C`, :class:`GraphDQN`) on ``graphs`` (a sample set name, a graph
    file, a folder, or :class:`Graph` objects), with the folder's weights loaded strictly. ``env``
    names the user env of a model trained on one.

    The weights do not depend on the graphs' size, so a model trained on 50-node graphs loads for
    a 250,000-node one. The algorithm's env is the run's env over ``graphs`` (for one graph, built
    for inference as ``predict`` does); ``model.predict`` takes its observations, ``model.learn``
    trains on it. Memory is checked first, as for every loaded model (a DQN's replay buffer holds
    nothing until ``learn``, and is not checked here).

    Example::

        model = load_model("runs/mis/small", "large")
        obs = model.env.reset()
        actions, _ = model.predict(obs, deterministic=True)
    """
    graphs = graphs if isinstance(graphs, list) else load_graphs(graphs)
    loaded = policy_for_graphs(folder, graphs, env=env)
    config = loaded.checkpoint.config
    config = replace(config, head=config.head or head_of(loaded.env).value, ppo=replace(config.ppo, n_envs=1))
    if config.algo != "dqn":
        check_buffer_fits(config, loaded.env, lambda _: None)  # SB3's constructor allocates the rollout buffer
    model = build_model(config, DummyVecEnv([lambda: loaded.env]))
    model.policy.load_state_dict(loaded.policy.state_dict())
    model.set_logger(Logger(None, []))
    return model
