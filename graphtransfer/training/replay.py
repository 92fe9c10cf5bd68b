"""DQN's replay buffer for graph observations, and its memory estimate.

SB3's ``DictReplayBuffer`` preallocates ``buffer_size`` padded copies of every key, twice
(observation and next observation): at 250,000 nodes that is ~22 MB per copy, 440 GB for 10,000
transitions. Here a transition keeps

- its observation trimmed to the real nodes and edges (``x[:num_nodes]``, ``edge_index[:,
  :num_edges]`` as int32, ``edge_attr[:num_edges]``), other keys as they are;
- its next observation as a reference: consecutive steps of an env share one stored
  observation (the next observation of step t is the observation of step t + 1), so a transition
  costs about one observation, not two;
- the next state's action mask, a bit per action, for the target's max over valid actions only;
- action, reward and done.

Memory is therefore about ``buffer_size x`` (one trimmed observation + ``num_actions / 8``
bytes); :func:`estimate_replay_bytes` measures it on the run's env, and training refuses a
buffer that would not fit, with a ``buffer_size`` that does. Nothing is allocated up front.

A cut-off episode (horizon reached) is stored as ended: the mask of its last state is gone once
the vector env resets, so its target does not bootstrap. The built-in node-choice task (MVC)
ends every episode by covering the graph before its horizon, so this never happens there.
"""

from __future__ import annotations

from typing import NamedTuple

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.buffers import BaseBuffer

from graphtransfer.envs.contract import EDGE_ATTR, box_shape, check_contract
from graphtransfer.envs.protocol import features_of
from graphtransfer.errors import UsageError
from graphtransfer.training.buffers import held_bytes

Observation = dict[str, np.ndarray]


class ReplaySamples(NamedTuple):
    """A minibatch of transitions as padded tensors.

    Shapes:
        observations, next_observations: the contract's keys with a leading ``(B,)``; actions
        ``(B,)`` int64; rewards, dones ``(B,)`` float32; next_masks ``(B, num_actions)`` bool.
    """

    observations: dict[str, torch.Tensor]
    actions: torch.Tensor
    next_observations: dict[str, torch.Tensor]
    dones: torch.Tensor
    rewards: torch.Tensor
    next_masks: torch.Tensor


class Transition(NamedTuple):
    """One stored step; ``next_observation`` is often the very object the env's following step
    stores as its ``observation``."""

    observation: Observation
    next_observation: Observation
    action: int
    reward: float
    done: bool
    next_mask: np.ndarray  # packed bits, (ceil(num_actions / 8),) uint8


def trim(obs: Observation, num_nodes_limit: int) -> Observation:
    """One env's observation cut to its real nodes and edges; node ids as int32 when every id
    fits (``num_nodes_limit``, the padding, below 2^31)."""
    nodes, edges = int(obs["num_nodes"][0]), int(obs["num_edges"][0])
    ids = np.int32 if num_nodes_limit < 2**31 else np.int64
    trimmed = {}
    for key, value in obs.items():
        if key == "x":
            value = value[:nodes]
        elif key == "edge_index":
            value = value[:, :edges].astype(ids)
        elif key == EDGE_ATTR:
            value = value[:edges]
        trimmed[key] = np.array(value, copy=True)
    return trimmed


def same_observation(a: Observation, b: Observation) -> bool:
    return a.keys() == b.keys() and all(a[key].shape == b[key].shape and np.array_equal(a[key], b[key]) for key in a)


class GraphReplayBuffer(BaseBuffer):
    """A ring of ``buffer_size`` transitions (all envs together) stored as the module describes.

    ``add`` takes SB3's arguments; the next state's action masks come first through
    :meth:`expect_masks` (SB3's ``_store_transition`` does not pass them; ``GraphDQN`` does).
    ``optimize_memory_usage`` is accepted because SB3 passes it, and ignored: sharing
    observations between consecutive steps is what it would do.
    """

    observation_space: spaces.Dict

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Dict,
        action_space: spaces.Discrete,
        device: torch.device | str = "auto",
        n_envs: int = 1,
        optimize_memory_usage: bool = False,
    ):
        super().__init__(buffer_size, observation_space, action_space, device, n_envs)
        self.max_nodes = box_shape(observation_space, "x")[0]
        self.num_actions = int(action_space.n)
        self.transitions: list[Transition | None] = [None] * buffer_size
        self.last_next: dict[int, Observation] = {}  # env -> its last stored next observation
        self.pending_masks: np.ndarray | None = None

    def expect_masks(self, masks: np.ndarray) -> None:
        """The ``(n_envs, num_actions)`` action masks of the next observations of the coming ``add``."""
        self.pending_masks = np.asarray(masks, dtype=bool).reshape(self.n_envs, self.num_actions)

    def add(self, obs, next_obs, action, reward, done, infos) -> None:
        """Store one step of every env (SB3's arguments, each with a leading ``(n_envs,)``)."""
        masks, self.pending_masks = self.pending_masks, None
        if masks is None:
            raise ValueError("GraphReplayBuffer.add needs the next states' action masks first: call expect_masks(masks)")
        actions = np.asarray(action).reshape(self.n_envs)
        for env in range(self.n_envs):
            observation = self._stored(env, {key: np.asarray(value[env]) for key, value in obs.items()})
            next_observation = trim({key: np.asarray(value[env]) for key, value in next_obs.items()}, self.max_nodes)
            self.last_next[env] = next_observation
            taken, mask = int(actions[env]), np.packbits(masks[env])
            self.transitions[self.pos] = Transition(observation, next_observation, taken, float(reward[env]), bool(done[env]), mask)
            self.pos = (self.pos + 1) % self.buffer_size
            self.full = self.full or self.pos == 0

    def _stored(self, env: int, obs: Observation) -> Observation:
        """The env's observation, as the object stored for its previous next observation when equal."""
        trimmed = trim(obs, self.max_nodes)
        previous = self.last_next.get(env)
        return previous if previous is not None and same_observation(previous, trimmed) else trimmed

    def sample(self, batch_size: int, env=None) -> ReplaySamples:
        """``batch_size`` transitions drawn uniformly with replacement, as SB3's buffers draw."""
        return self._get_samples(np.random.randint(0, self.size(), size=batch_size))

    def _get_samples(self, batch_inds: np.ndarray, env=None) -> ReplaySamples:  # type: ignore[override]  # SB3 types samples as its own two kinds
        chosen = [self.transitions[i] for i in batch_inds]
        masks = np.unpackbits(np.stack([t.next_mask for t in chosen]), axis=1, count=self.num_actions).astype(bool)
        return ReplaySamples(
            self._padded([t.observation for t in chosen]),
            self.to_torch(np.array([t.action for t in chosen], dtype=np.int64)),
            self._padded([t.next_observation for t in chosen]),
            self.to_torch(np.array([t.done for t in chosen], dtype=np.float32)),
            self.to_torch(np.array([t.reward for t in chosen], dtype=np.float32)),
            self.to_torch(masks),
        )

    def _padded(self, observations: list[Observation]) -> dict[str, torch.Tensor]:
        """Stored observations as the padded batch the contract defines (padding zero)."""
        batch = {}
        for key, space in self.observation_space.spaces.items():
            out = np.zeros((len(observations), *box_shape(self.observation_space, key)), dtype=space.dtype)
            for row, obs in enumerate(observations):
                value = obs[key]
                index: tuple[int | slice, ...] = (row, *(slice(0, size) for size in value.shape))
                out[index] = value
            batch[key] = self.to_torch(out)
        return batch

    def stored_bytes(self) -> int:
        """Bytes the transitions hold, each shared observation counted once."""
        seen: dict[int, Observation] = {}
        masks = 0
        for step in self.transitions:
            if step is not None:
                seen[id(step.observation)] = step.observation
                seen[id(step.next_observation)] = step.next_observation
                masks += step.next_mask.nbytes
        return held_bytes(list(seen.values())) + masks


def estimate_replay_bytes(env: gym.Env, probe_steps: int = 16) -> float:
    """Bytes per transition of a :class:`GraphReplayBuffer` on ``env``, measured by storing
    ``probe_steps`` steps of uniformly random valid actions (what DQN does before it learns).
    Episodes start on their largest observation and shrink, so this overestimates a full buffer.
    ``env`` is reset and stepped."""
    masks_of = features_of(env).action_masks
    if masks_of is None or not isinstance(env.action_space, spaces.Discrete):
        raise UsageError(
            f"DQN chooses one valid node or edge: {type(env.unwrapped).__name__} needs a Discrete action space and action_masks()"
        )
    buffer = GraphReplayBuffer(probe_steps, check_contract(env.observation_space), env.action_space, device="cpu")
    obs, _ = env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(probe_steps):
        mask = masks_of()
        action = env.action_space.sample(mask=mask.astype(np.int8)) if mask.any() else env.action_space.sample()
        next_obs, reward, terminated, truncated, _ = env.step(action)
        buffer.expect_masks(masks_of()[None])
        batch = {key: np.asarray(value)[None] for key, value in obs.items()}
        next_batch = {key: np.asarray(value)[None] for key, value in next_obs.items()}
        buffer.add(batch, next_batch, np.array([action]), np.array([reward]), np.array([terminated or truncated]), [{}])
        obs = env.reset()[0] if terminated or truncated else next_obs
    return buffer.stored_bytes() / probe_steps
