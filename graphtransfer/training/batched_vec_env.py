"""SB3's ``VecEnv`` over a :class:`~graphtransfer.envs.batched.Batch`: one Python step advances
all K episodes (``--vec-env batched``; ``auto``, the default, picks it from two envs up where the
env class declares ``batched``).

It does what ``DummyVecEnv`` around SB3's ``Monitor`` does, in the same order for each episode:
count the step, cut the episode at the batch's ``horizon``, hand back the last observation of an
episode that ended (``terminal_observation``, with ``TimeLimit.truncated``) and its return and
length (``episode``, as ``Monitor`` reports them), and begin the next one. The seeds of the first
reset are ``seed + i`` as ``make_vec_env`` gives them."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn

from graphtransfer.envs.batched import Batch, Observation
from graphtransfer.envs.contract import box_shape
from graphtransfer.envs.protocol import batch_masks


class BatchedVecEnv(VecEnv):
    """K envs of one class, stepped by the batch their class declares (``type(env).batched``)."""

    def __init__(self, envs: Sequence[gym.Env]):
        self.envs = list(envs)
        first = self.envs[0]
        super().__init__(len(self.envs), first.observation_space, first.action_space)
        declared = batch_of(first)
        if declared is None:
            raise ValueError(f"{type(first.unwrapped).__name__} declares no batch (`batched`); train it on DummyVecEnv")
        self.batch: Batch = declared([env.unwrapped for env in self.envs])
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
        masks = batch_masks(self.batch)
        if method_name == "action_masks" and masks is not None:
            rows = masks()
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


KEPT_BY_A_SUBCLASS = frozenset({"__module__", "__qualname__", "__doc__", "__init__", "__firstlineno__", "__static_attributes__"})
"""what a subclass of an env with a batch may define and still train on its parent's batch: the
batch reads the instances its ``__init__`` builds, never the subclass's own methods"""


def batched(env: gym.Env) -> bool:
    """Whether ``env`` trains on the batch its class declares (:class:`BatchedVecEnv`): where the
    class declares one and no class between it and the declaring one defines a method or setting of
    its own (a subclass that overrides ``step`` would see its ``step`` skipped: it trains one by one)."""
    return bool(batch_of(env)) and not overridden_by(env)


def batch_of(env: gym.Env):
    """The batch ``env``'s class declares (a class or function of the K envs), or None."""
    declared = getattr(type(env.unwrapped), "batched", None)
    return declared if callable(declared) else None


def overridden_by(env: gym.Env) -> list[str]:
    """The members that classes between ``env``'s class and the one declaring its batch define,
    which the batch would not run."""
    found: list[str] = []
    for cls in type(env.unwrapped).__mro__:
        if "batched" in vars(cls):
            return found
        found += [f"{cls.__name__}.{name}" for name in vars(cls) if name not in KEPT_BY_A_SUBCLASS]
    return found


def first_difference(make_env: Callable[[], gym.Env], n_envs: int = 5, steps: int = 60, seed: int = 0) -> str | None:
    """Where the batch of ``make_env``'s class departs from its envs stepped one by one
    (``DummyVecEnv`` around ``Monitor``, as ``--vec-env dummy`` trains), for the same seeds and
    the same random actions over ``steps`` steps; ``None`` where every observation, reward, end
    and info agrees bit for bit. A test of a user's batch is one line:
    ``assert first_difference(lambda: MyEnv(graphs)) is None``. Choice envs draw valid actions
    from their masks."""
    single = make_vec_env(make_env, n_envs=n_envs, seed=seed, vec_env_cls=DummyVecEnv)
    together = BatchedVecEnv([make_env() for _ in range(n_envs)])
    together.seed(seed)
    try:
        found = _differs("reset", cast(Observation, single.reset()), together.reset())
        rng = np.random.default_rng(seed)
        for step in range(steps):
            actions = random_actions(single, rng)
            found = found or _step_differs(step, single.step(actions), together.step(actions))
            if found:
                return found
        return found
    finally:
        single.close()
        together.close()


def random_actions(envs: VecEnv, rng: np.random.Generator) -> np.ndarray:
    """One valid action per env, drawn with ``rng``: a valid node or edge of a choice env's mask."""
    if envs.has_attr("action_masks"):
        return np.array([rng.choice(np.flatnonzero(mask)) for mask in envs.env_method("action_masks")])
    space = envs.action_space
    if isinstance(space, spaces.MultiDiscrete):
        return rng.integers(0, space.nvec, (envs.num_envs, *space.shape))
    return np.array([space.sample() for _ in range(envs.num_envs)])


def _step_differs(step: int, single: tuple, together: tuple) -> str | None:
    for name, a, b in zip(("reward", "done"), single[1:3], together[1:3], strict=True):
        if not np.array_equal(a, b):
            return f"step {step}: {name}s differ: {a} one by one, {b} batched"
    found = _differs(f"step {step}", single[0], together[0])
    for env, (a, b) in enumerate(zip(single[3], together[3], strict=True)):
        found = found or _info_differs(f"step {step}, env {env}", a, b)
    return found


def _info_differs(where: str, single: dict, together: dict) -> str | None:
    if single.get("TimeLimit.truncated") != together.get("TimeLimit.truncated"):
        return f"{where}: TimeLimit.truncated differs"
    if ("terminal_observation" in single) != ("terminal_observation" in together):
        return f"{where}: only one side ended the episode"
    if "terminal_observation" in single:
        found = _differs(f"{where}, terminal observation", single["terminal_observation"], together["terminal_observation"])
        a, b = single["episode"], together["episode"]
        return found or (None if (a["r"], a["l"]) == (b["r"], b["l"]) else f"{where}: episode return/length {a} one by one, {b} batched")
    return None


def _differs(where: str, single: Observation, together: Observation) -> str | None:
    for key in single:
        if not np.array_equal(single[key], together[key]):
            at = np.argwhere(single[key] != together[key])[0].tolist()
            return f"{where}: observation key {key!r} differs at {at}"
    return None
