"""A2C for every head, with the same GNN policies as PPO (so its model folders load, transfer
and predict exactly like PPO's).

Node-wise and graph-level heads use SB3's ``A2C`` as it is. Node choice needs its invalid nodes
masked, and sb3-contrib has MaskablePPO but no maskable A2C. The decision: :class:`MaskableA2C`
is MaskablePPO with one step overridden, the update. MaskablePPO already does everything masked
node choice needs outside the update -- it asks the envs for ``action_masks()`` at every step,
keeps the masks in its rollout buffer and hands them to the policy's distribution when acting
and when evaluating actions -- and A2C differs from PPO only in its update: one gradient step on
the whole rollout, loss ``-mean(advantage * log_prob) + vf_coef * value_loss + ent_coef *
entropy_loss`` without clipping or advantage normalisation, RMSprop as SB3's A2C sets it up.
The alternative, masks applied inside the policy's distribution from an observation key, would
tie the policy to a mask key that user envs need not have, and would differ from PPO's masking.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from sb3_contrib import MaskablePPO
from stable_baselines3 import A2C
from stable_baselines3.common.utils import explained_variance

from graphtransfer.training.runtime import RuntimeSettings

RMSPROP = {"optimizer_class": torch.optim.RMSprop, "optimizer_kwargs": {"alpha": 0.99, "eps": 1e-5, "weight_decay": 0}}
"""SB3's A2C optimizer (its ``use_rms_prop=True`` default with ``rms_prop_eps=1e-5``)"""


class GraphA2C(RuntimeSettings, A2C):
    """SB3's A2C, with the node budget and mixed precision of the policy's extractor."""

    algorithm_name = "A2C"


class MaskableA2C(RuntimeSettings, MaskablePPO):
    """A2C with invalid actions masked: MaskablePPO's rollouts, SB3's A2C update (see the module).

    Takes PPO's arguments; the update ignores ``batch_size``, ``n_epochs`` and ``clip_range``.
    """

    algorithm_name = "MaskableA2C"

    def __init__(self, *args: Any, policy_kwargs: dict[str, Any] | None = None, **kwargs: Any):
        super().__init__(*args, policy_kwargs={**RMSPROP, **(policy_kwargs or {})}, **kwargs)

    def train(self) -> None:
        """SB3's ``A2C.train`` with the rollout's action masks given to the policy."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        for rollout in self.rollout_buffer.get(batch_size=None):  # the whole rollout, once
            actions = rollout.actions.long().flatten()
            values, log_prob, entropy = self.policy.evaluate_actions(rollout.observations, actions, action_masks=rollout.action_masks)
            policy_loss = -(rollout.advantages * log_prob).mean()
            value_loss = F.mse_loss(rollout.returns, values.flatten())
            entropy_loss = -torch.mean(-log_prob) if entropy is None else -torch.mean(entropy)
            loss = policy_loss + self.ent_coef * entropy_loss + self.vf_coef * value_loss
            self.policy.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()
        self._n_updates += 1
        buffer = self.rollout_buffer
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/explained_variance", explained_variance(buffer.values.flatten(), buffer.returns.flatten()))
        self.logger.record("train/entropy_loss", entropy_loss.item())
        self.logger.record("train/policy_loss", policy_loss.item())
        self.logger.record("train/value_loss", value_loss.item())
