"""Rollouts on a Ray cluster: each env a Ray actor behind SB3's ``VecEnv`` interface (``--vec-env ray``).

It pays when an env's step is expensive (a simulator behind the graph): the envs step in
parallel on the cluster's CPUs while the policy and the PPO update stay in this process. Each
step costs a round trip to every actor (about a millisecond on one machine), so for the built-in
tasks, whose steps take microseconds, ``dummy`` is faster. Every actor holds a one-env
``DummyVecEnv``, so seeding, auto-reset and ``terminal_observation`` are SB3's own and a run gives
the numbers ``dummy`` gives for the same seed. On a cluster, graphtransfer (and a user env's
module) must be importable on every node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from graphtransfer.solve.parallel import get_from_cluster, import_ray, init_ray


class EnvActor:
    """One env, in a Ray actor (made remote by :class:`RayVecEnv`; Ray is optional)."""

    def __init__(self, env_fn: Callable[[], gym.Env]):
        import torch

        torch.set_num_threads(1)  # an env's own torch work must not take the node's every core
        self.venv = DummyVecEnv([env_fn])

    def spaces(self) -> tuple[gym.Space, gym.Space]:
        return self.venv.observation_space, self.venv.action_space

    def reset(self, seed: int | None, options: dict[str, Any]) -> tuple[VecEnvObs, dict]:
        self.venv._seeds, self.venv._options = [seed], [options]
        return self.venv.reset(), self.venv.reset_infos[0]

    def step(self, action: np.ndarray) -> VecEnvStepReturn:
        return self.venv.step(action[None])

    def call(self, what: str, name: str, *args, **kwargs) -> Any:
        """``get_attr``, ``set_attr``, ``env_method`` or ``env_is_wrapped`` of the one env."""
        return getattr(self.venv, what)(name, *args, **kwargs)[0] if what != "set_attr" else self.venv.set_attr(name, *args)


class RayVecEnv(VecEnv):
    """``env_fns`` as Ray actors, one per env, on the cluster at ``address`` (``None``: the one
    ``RAY_ADDRESS`` names, else a local instance; ``"auto"``: the running cluster; ``host:port``).
    A Ray instance started here is shut down by :meth:`close`; one the caller started is left."""

    def __init__(self, env_fns: list[Callable[[], gym.Env]], address: str | None = None):
        self.ray = import_ray()
        self.started_here = not self.ray.is_initialized()
        if self.started_here:
            init_ray(self.ray, address, include_dashboard=False)
        # a CPU per env where the cluster has them; else shares, so that every actor starts at once
        cpus = min(1.0, float(self.ray.cluster_resources().get("CPU", 1)) / len(env_fns))
        actor = self.ray.remote(num_cpus=cpus)(EnvActor)
        self.actors = [actor.remote(env_fn) for env_fn in env_fns]
        observation_space, action_space = self.ray.get(self.actors[0].spaces.remote())
        super().__init__(len(env_fns), observation_space, action_space)
        self.actions: np.ndarray | None = None

    def reset(self) -> VecEnvObs:
        futures = [actor.reset.remote(self._seeds[i], self._options[i]) for i, actor in enumerate(self.actors)]
        results = get_from_cluster(self.ray, futures)
        self.reset_infos = [info for _, info in results]
        self._reset_seeds()
        self._reset_options()
        return _stack([obs for obs, _ in results])

    def step_async(self, actions: np.ndarray) -> None:
        self.futures = [actor.step.remote(actions[i]) for i, actor in enumerate(self.actors)]

    def step_wait(self) -> VecEnvStepReturn:
        results = get_from_cluster(self.ray, self.futures)
        obs = _stack([r[0] for r in results])
        rewards = np.concatenate([r[1] for r in results])
        dones = np.concatenate([r[2] for r in results])
        infos = [r[3][0] for r in results]
        return obs, rewards, dones, infos

    def close(self) -> None:
        for actor in self.actors:
            self.ray.kill(actor)
        self.actors = []
        if self.started_here and self.ray.is_initialized():
            self.ray.shutdown()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return self._call("get_attr", attr_name, indices)

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        self._call("set_attr", attr_name, indices, value)

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs) -> list[Any]:
        return self._call("env_method", method_name, indices, *method_args, **method_kwargs)

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return self._call("env_is_wrapped", wrapper_class, indices)

    def _call(self, what: str, name: Any, indices: VecEnvIndices, *args, **kwargs) -> list[Any]:
        """One of the VecEnv's per-env calls on the actors ``indices`` names, results in order; an
        env's own error (e.g. AttributeError, which ``has_attr`` relies on) is raised here as itself."""
        futures = [self.actors[i].call.remote(what, name, *args, **kwargs) for i in self._get_indices(indices)]
        return get_from_cluster(self.ray, futures)


def _stack(observations: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Per-env observations (each batched as one env, ``(1, ...)``) as one batch ``(n_envs, ...)``."""
    return {key: np.concatenate([obs[key] for obs in observations]) for key in observations[0]}
