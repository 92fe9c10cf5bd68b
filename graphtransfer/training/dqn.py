"""DQN for node choice in the style of S2V-DQN: a Q-value per node from a shared head
(:class:`~graphtransfer.nn.NodeQPolicy`), invalid nodes masked when acting and in the target.

:class:`GraphDQN` is SB3's DQN with three steps overridden:

- acting (``_sample_action``, ``predict``): epsilon-greedy among the valid actions only, from the
  envs' ``action_masks()``: a random valid node with probability epsilon (always before
  ``learning_starts``), else the valid node of highest Q-value;
- storing (``_store_transition``): the next states' masks go to the
  :class:`~graphtransfer.training.replay.GraphReplayBuffer` with the transition;
- the update (``train``): the TD target is double DQN's -- the online network picks the next
  state's best *valid* action, the target network values it -- which curbs the max's
  overestimation; with the plain max, the greedy policy first learned to prefer nodes that leave
  many valid nodes behind (MVC, ``bench/algos.sh``).

Nothing here knows what an action is beyond an index into ``(B, num_actions)`` Q-values and
masks, so an edge-choice head plugs in with its Q-network alone (see
:mod:`graphtransfer.nn.qnetwork`).

The policy is the online Q-network, so a model folder holds it like any other policy; the target
network is held here, not saved, and each ``learn`` starts with it equal to the online network
(a resumed run restarts it so, and refills its replay buffer, which is not saved either).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3 import DQN

from graphtransfer.nn import ActionQPolicy, configure_runtime
from graphtransfer.training.replay import GraphReplayBuffer
from graphtransfer.training.runtime import RuntimeSettings


class GraphDQN(RuntimeSettings, DQN):
    """SB3's DQN over :class:`~graphtransfer.nn.ActionQPolicy` with masks (see the module)."""

    algorithm_name = "DQN"
    # SB3 types DQN's networks and buffer as its own classes; policy_class and replay_buffer_class plug in these
    policy: ActionQPolicy  # type: ignore[assignment]
    q_net: ActionQPolicy  # type: ignore[assignment]
    q_net_target: ActionQPolicy  # type: ignore[assignment]
    replay_buffer: GraphReplayBuffer | None  # type: ignore[assignment]

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, replay_buffer_class=GraphReplayBuffer, **kwargs)

    def _create_aliases(self) -> None:
        self.q_net = self.policy
        self.q_net_target = type(self.policy)(
            self.policy.observation_space, self.policy.action_space, self.lr_schedule, **self.policy_kwargs
        )
        self.q_net_target = self.q_net_target.to(self.device)
        self.q_net_target.requires_grad_(False)
        self._sync_target()

    def _sync_target(self) -> None:
        self.q_net_target.load_state_dict(self.policy.state_dict())
        self.q_net_target.set_training_mode(False)
        configure_runtime(self.q_net_target, self.max_nodes_per_batch, self.mixed_precision)

    def _setup_learn(self, *args: Any, **kwargs: Any):
        self._sync_target()  # weights may have been loaded into the policy since the target was built
        return super()._setup_learn(*args, **kwargs)

    def _sample_action(self, learning_starts: int, action_noise=None, n_envs: int = 1) -> tuple[np.ndarray, np.ndarray]:
        masks = self._env_masks()
        rate = 1.0 if self.num_timesteps < learning_starts else self.exploration_rate
        actions = self._epsilon_greedy(self._last_obs, masks, rate)
        return actions, actions

    def predict(self, observation, state=None, episode_start=None, deterministic: bool = False, action_masks: np.ndarray | None = None):
        """Actions for a batch of observations: the valid node of highest Q-value, or (not
        ``deterministic``) a random valid one with probability epsilon. Without
        ``action_masks`` only padding is excluded."""
        return self._epsilon_greedy(observation, action_masks, 0.0 if deterministic else self.exploration_rate), state

    def _epsilon_greedy(self, observation, masks: np.ndarray | None, rate: float) -> np.ndarray:
        obs, _ = self.policy.obs_to_tensor(observation)
        self.policy.set_training_mode(False)
        with torch.no_grad():
            actions = self.policy.masked_q_values(obs, masks).argmax(dim=1).cpu().numpy()
        for row in np.flatnonzero(np.random.rand(actions.size) < rate):
            valid = None if masks is None else np.asarray(masks).reshape(actions.size, -1)[row].astype(np.int8)
            actions[row] = self.action_space.sample(mask=valid if valid is not None and valid.any() else None)
        return actions

    def _env_masks(self) -> np.ndarray:
        """The action masks of the env's current states (``(n_envs, num_actions)``)."""
        if self.env is None:
            raise RuntimeError("DQN reads action masks while it learns, from its env; this model has none")
        return get_action_masks(self.env)

    def _store_transition(self, replay_buffer, buffer_action, new_obs, reward, dones, infos) -> None:
        replay_buffer.expect_masks(self._env_masks())  # the masks of new_obs, the next states
        super()._store_transition(replay_buffer, buffer_action, new_obs, reward, dones, infos)

    def train(self, gradient_steps: int, batch_size: int = 100) -> None:
        """SB3's DQN update with a double-DQN target over the next state's valid actions."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        losses = []
        if self.replay_buffer is None:
            raise RuntimeError("DQN's update samples its replay buffer, which setting the model up builds")
        for _ in range(gradient_steps):
            batch = self.replay_buffer.sample(batch_size)
            with torch.no_grad():  # double DQN: the online network picks the next valid action, the target values it
                chosen = self.policy.masked_q_values(batch.next_observations, batch.next_masks).argmax(dim=1, keepdim=True)
                best_next = self.q_net_target.q_values(batch.next_observations).gather(1, chosen)[:, 0]
                ended = batch.dones.bool() | ~batch.next_masks.any(dim=1)
                target = batch.rewards + self.gamma * torch.where(ended, torch.zeros_like(best_next), best_next)
            current = self.policy.q_values(batch.observations).gather(1, batch.actions[:, None])[:, 0]
            loss = F.smooth_l1_loss(current, target)
            losses.append(loss.item())
            self.policy.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()
        self._n_updates += gradient_steps
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/loss", float(np.mean(losses)))
