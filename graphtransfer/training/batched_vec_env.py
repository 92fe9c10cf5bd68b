"""SB3's ``VecEnv`` over a :class:`~graphtransfer.envs.batched.Batch`: one Python step advances
all K episodes (``--vec-env batched``, the default where the env class declares ``batched``).

It does what ``DummyVecEnv`` around SB3's ``Monitor`` does, in the same order for each episode:
count the step, cut the episode at the batch's ``horizon``, hand back the last observation of an
episode that ended (``terminal_observation``, with ``TimeLimit.truncated``) and its return and
length (``episode``, as ``Monitor`` reports them), and begin the next one. The seeds of the first
reset are ``seed + i`` as ``make_vec_env`` gives them."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn

from graphtransfer.envs.batched import Batch, Observation
from graphtransfer.envs.contract import box_shape


class BatchedVecEnv(VecEnv):
    """K envs of one class, stepped by the batch their class declares (``type(env).batched``)."""

    def __init__(self, envs: Sequence[gym.Env]):
        self.envs = list(envs)
        first = self.envs[0]
        super().__init__(len(self.envs), first.observation_space, first.action_space)
        self.batch: Batch = type(first.unwrapped).batched([env.unwrapped for env in self.envs])
        self.observation = empty_observation_rows(first.observation_space, self.num_envs)
        self.steps = np.zeros(self.num_envs, dtype=np.int64)
        self.returns = np.zeros(self.num_envs)
        self.started = time.time()
        self.actions: np.ndarray = np.zeros(0)

    def reset(self) -> Observation:
        everyone = np.ones(self.num_envs, dtype=bool)
        self.batch.reset(everyone, self._seeds)
        self.batch.observe(everyone, self.observation)
        self.steps[:] = 0
        self.returns[:] = 0.0
        self._reset_seeds()
        self._reset_options()
        return copied(self.observation)

    def step_async(self, actions: np.ndarray) -> None:
        self.actions = np.asarray(actions)

    def step_wait(self) -> VecEnvStepReturn:
        rewards, terminated = self.batch.apply(self.actions)
        self.steps += 1
        self.returns += rewards
        truncated = ~terminated & (self.steps >= self.batch.horizon)
        done = terminated | truncated
        everyone = np.ones(self.num_envs, dtype=bool)
        self.batch.observe(everyone, self.observation)
        infos: list[dict[str, Any]] = [{"TimeLimit.truncated": bool(cut)} for cut in truncated]
        for index in np.flatnonzero(done):
            infos[index]["terminal_observation"] = {key: rows[index].copy() for key, rows in self.observation.items()}
            elapsed = round(time.time() - self.started, 6)
            infos[index]["episode"] = {"r": round(float(self.returns[index]), 6), "l": int(self.steps[index]), "t": elapsed}
        if done.any():
            self.batch.reset(done, [None] * self.num_envs)
            self.batch.observe(done, self.observation)
            self.steps[done] = 0
            self.returns[done] = 0.0
        return copied(self.observation), rewards.astype(np.float32), done, infos

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [getattr(env, attr_name) for env in self._targets(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        for env in self._targets(indices):
            setattr(env, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs) -> list[Any]:
        """The envs' method, except ``action_masks`` of a batch that has it: the masks of the batch's
        episodes, one row per env (what MaskablePPO and DQN ask of node- and edge-choice envs)."""
        if method_name == "action_masks" and hasattr(self.batch, "action_masks"):
            rows = self.batch.action_masks()
            return [rows[i] for i in self._get_indices(indices)]
        return [getattr(env, method_name)(*method_args, **method_kwargs) for env in self._targets(indices)]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return [isinstance(env, wrapper_class) for env in self._targets(indices)]

    def _targets(self, indices: VecEnvIndices) -> list[gym.Env]:
        return [self.envs[i] for i in self._get_indices(indices)]


def empty_observation_rows(space, count: int) -> Observation:
    """Zeroed rows for ``count`` observations of ``space``, key by key."""
    return {key: np.zeros((count, *box_shape(space, key)), dtype=box.dtype) for key, box in space.spaces.items()}


def copied(observation: Observation) -> Observation:
    """A copy the caller may keep (SB3's rollout buffer keeps what it is handed until it copies it)."""
    return {key: value.copy() for key, value in observation.items()}


def batched(env: gym.Env) -> bool:
    """Whether ``env``'s class declares a batch to train on (:class:`BatchedVecEnv`)."""
    return callable(getattr(type(env.unwrapped), "batched", None))
