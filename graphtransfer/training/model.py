"""Building the SB3 algorithm for a run: PPO or MaskablePPO by head, the compact rollout buffer
checked against available memory, the vector env, the device; and :func:`load_model`, a saved
model as an SB3 algorithm for other graphs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from graphtransfer.config import PPOConfig, RunConfig, schedule
from graphtransfer.envs.factory import run_env
from graphtransfer.envs.protocol import Head, head_of
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, load_graphs
from graphtransfer.nn import POLICIES, policy_kwargs
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.solve.memory import available_bytes
from graphtransfer.training.buffers import CompactDictRolloutBuffer, CompactMaskableDictRolloutBuffer, estimate_rollout_bytes
from graphtransfer.training.ppo import BudgetMaskablePPO, BudgetPPO
from graphtransfer.training.ray_vec_env import RayVecEnv

VEC_ENVS = {"dummy": DummyVecEnv, "subproc": SubprocVecEnv, "ray": RayVecEnv}


def build_model(config: RunConfig, envs: VecEnv, seed: int | None = None) -> PPO:
    """The SB3 algorithm for ``config.head`` on ``envs``: PPO, or MaskablePPO for node or edge choice,
    each with the run's node budget and mixed-precision setting (SB3's own update without a budget)."""
    chooses = Head(config.head).chooses
    if chooses and not envs.has_attr("action_masks"):
        raise UsageError(
            f"{config.name}: a {config.head} env (Discrete(max_nodes or max_edges) actions) needs an action_masks() method for MaskablePPO"
        )
    algorithm = BudgetMaskablePPO if chooses else BudgetPPO
    kwargs = {**sb3_kwargs(config.ppo), "seed": config.ppo.seed if seed is None else seed}
    kwargs |= {"max_nodes_per_batch": config.ppo.max_nodes_per_batch, "mixed_precision": config.ppo.mixed_precision}
    kwargs["rollout_buffer_class"] = buffer_class(config.head)
    return algorithm(POLICIES[config.head], envs, policy_kwargs=policy_kwargs(config.head, config.model), **kwargs)


def buffer_class(head: str) -> type[CompactDictRolloutBuffer | CompactMaskableDictRolloutBuffer]:
    """The compact rollout buffer for ``head``'s algorithm (MaskablePPO's keeps action masks)."""
    return CompactMaskableDictRolloutBuffer if Head(head).chooses else CompactDictRolloutBuffer


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
        "device",
    )
    kwargs = {name: getattr(ppo, name) for name in names} | {"verbose": 0}
    return kwargs | {"learning_rate": schedule(ppo.learning_rate), "clip_range": schedule(ppo.clip_range)}


def check_buffer_fits(config: RunConfig, env, log: Callable[[str], None]) -> None:
    """Print the rollout buffer's estimated size; refuse, with an n_steps that fits, when it
    would not. The estimate fills a real buffer with a short probe of ``env`` (which it steps)."""
    ppo = config.ppo
    estimate = estimate_rollout_bytes(buffer_class(config.head), env)
    needed = estimate.total(ppo.n_steps, ppo.n_envs)
    available = available_bytes()
    budget = (available[0] if available else 2**63) // 2  # leave room for the model, activations and the envs
    log(f"rollout buffer: {needed / 2**20:.1f} MiB for {ppo.n_steps} steps x {ppo.n_envs} envs (estimated from a 16-step probe)")
    if needed > budget:
        fits = max(1, estimate.steps_that_fit(budget, ppo.n_envs))
        raise UsageError(
            f"the rollout buffer needs {needed / 2**30:.1f} GiB but {budget / 2**30:.1f} GiB is half of the available memory; "
            f"use n_steps={fits} or fewer (or fewer envs, or smaller graphs)"
        )


def check_device(device: str) -> None:
    """Refuse a CUDA run where torch sees no GPU, before anything is built."""
    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError(f"device cuda: torch {torch.__version__} sees no CUDA GPU on this machine; use --device cpu or auto")


def make_model(config: RunConfig, graphs: list[Graph], seed: int) -> PPO:
    """The run's algorithm on its vector env, with a logger that writes nothing (without one, SB3's
    ``learn`` makes an empty folder in the temp dir every call); :func:`_learn` sets the run's own."""
    torch.set_num_threads(config.ppo.threads)
    ppo = config.ppo
    options = {"vec_env_kwargs": {"address": ppo.ray_address}} if ppo.vec_env == "ray" else {}
    envs = make_vec_env(lambda: run_env(config, graphs), n_envs=ppo.n_envs, seed=seed, vec_env_cls=VEC_ENVS[ppo.vec_env], **options)
    try:
        model = build_model(config, envs, seed)
        model.set_logger(Logger(None, []))
        return model
    except BaseException:
        envs.close()  # subprocess envs would outlive the error
        raise


def load_model(folder: str | Path, graphs: str | Path | list[Graph], env: str | None = None) -> PPO:
    """The model in ``folder`` as an SB3 algorithm (``PPO``, or ``MaskablePPO`` for a node- or
    edge-choice head) on ``graphs`` (a sample set name, a graph file, a folder, or :class:`Graph` objects),
    with the folder's weights loaded strictly. ``env`` names the user env of a model trained on one.

    The weights do not depend on the graphs' size, so a model trained on 50-node graphs loads for
    a 250,000-node one. The algorithm's env is the run's env over ``graphs`` (for one graph, built
    for inference as ``predict`` does); ``model.predict`` takes its observations, ``model.learn``
    trains on it. Memory is checked first, as for every loaded model.

    Example::

        model = load_model("runs/mis/small", "large")
        obs = model.env.reset()
        actions, _ = model.predict(obs, deterministic=True)
    """
    graphs = graphs if isinstance(graphs, list) else load_graphs(graphs)
    loaded = policy_for_graphs(folder, graphs, env=env)
    config = loaded.checkpoint.config
    config = replace(config, head=config.head or head_of(loaded.env), ppo=replace(config.ppo, n_envs=1))
    check_buffer_fits(config, loaded.env, lambda _: None)  # SB3's constructor allocates the rollout buffer
    model = build_model(config, DummyVecEnv([lambda: loaded.env]))
    model.policy.load_state_dict(loaded.policy.state_dict())
    model.set_logger(Logger(None, []))
    return model
