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

Both backpropagate a rollout of more real nodes than the node budget (or than
:data:`~graphtransfer.training.ppo.UPDATE_GROUP_NODES` without one, on the CPU) in groups of
whole observations, as PPO's update does its minibatches (:class:`GroupedA2CUpdate`).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from stable_baselines3 import A2C
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.utils import explained_variance

from graphtransfer.training import ppo
from graphtransfer.training.runtime import RuntimeSettings

RMSPROP = {"optimizer_class": torch.optim.RMSprop, "optimizer_kwargs": {"alpha": 0.99, "eps": 1e-5, "weight_decay": 0}}
"""SB3's A2C optimizer (its ``use_rms_prop=True`` default with ``rms_prop_eps=1e-5``)"""


class GroupedA2CUpdate(RuntimeSettings, OnPolicyAlgorithm):
    """SB3's A2C update, one gradient step on the whole rollout, with the rollout's loss
    backpropagated in groups of whole observations when its real nodes exceed the node budget
    (``max_nodes_per_batch``), or :data:`~graphtransfer.training.ppo.UPDATE_GROUP_NODES` without
    one on the CPU (:func:`~graphtransfer.training.ppo.update_groups`). Each group's loss weighs
    its share of the rollout (every term is a mean over the samples), so the accumulated gradient
    is the whole rollout's to float rounding, in the memory of one group; advantages are
    normalised (where asked) over the whole rollout first and the gradient norm is clipped after
    accumulation, as SB3 does. A rollout within the limit is SB3's update as it is. Mixed in
    before the SB3 class."""

    normalize_advantage: bool
    """A2C's setting (MaskablePPO's, for :class:`MaskableA2C`), set by the class it is mixed into"""

    def _evaluate(self, rollout, actions: torch.Tensor):
        return self.policy.evaluate_actions(rollout.observations, actions)

    def train(self) -> None:
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        for rollout in self.rollout_buffer.get(batch_size=None):  # the whole rollout, once
            if self.normalize_advantage:
                advantages = rollout.advantages
                rollout = rollout._replace(advantages=(advantages - advantages.mean()) / (advantages.std() + 1e-8))
            self.policy.optimizer.zero_grad()
            terms = self._backward_in_groups(rollout)
            torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
            self.policy.optimizer.step()
        self._n_updates += 1
        buffer = self.rollout_buffer
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/explained_variance", explained_variance(buffer.values.flatten(), buffer.returns.flatten()))
        for name, value in terms.items():
            self.logger.record(f"train/{name}", value)

    def _backward_in_groups(self, rollout) -> dict[str, float]:
        """Backpropagate the rollout's A2C loss group by group; return the losses SB3 logs."""
        size = len(rollout.advantages)
        groups = ppo.update_groups(rollout, self.max_nodes_per_batch)
        sums = ppo.TermSums(("entropy_loss", "policy_loss", "value_loss"))
        for rows in groups:
            group = rollout if len(groups) == 1 else ppo.take(rollout, rows)
            share = (rows.stop - rows.start) / size
            terms = self._group_loss(group)
            (terms.pop("loss") if len(groups) == 1 else share * terms.pop("loss")).backward()
            sums.add(share, terms)
        return sums.read()

    def _group_loss(self, group) -> dict[str, torch.Tensor]:
        """SB3's A2C loss on one group, and its parts (means over the group)."""
        actions = group.actions.long().flatten() if isinstance(self.action_space, spaces.Discrete) else group.actions
        values, log_prob, entropy = self._evaluate(group, actions)
        policy_loss = -(group.advantages * log_prob).mean()
        value_loss = F.mse_loss(group.returns, values.flatten())
        entropy_loss = -torch.mean(-log_prob) if entropy is None else -torch.mean(entropy)
        loss = policy_loss + self.ent_coef * entropy_loss + self.vf_coef * value_loss
        return {"loss": loss, "entropy_loss": entropy_loss.detach(), "policy_loss": policy_loss.detach(), "value_loss": value_loss.detach()}


class GraphA2C(GroupedA2CUpdate, A2C):
    """SB3's A2C, with the node budget and mixed precision of the policy's extractor."""

    algorithm_name = "A2C"


class MaskableA2C(GroupedA2CUpdate, MaskablePPO):
    """A2C with invalid actions masked: MaskablePPO's rollouts, SB3's A2C update (see the module).

    Takes PPO's arguments; the update ignores ``batch_size``, ``n_epochs`` and ``clip_range``.
    """

    algorithm_name = "MaskableA2C"

    def __init__(self, *args: Any, policy_kwargs: dict[str, Any] | None = None, **kwargs: Any):
        super().__init__(*args, policy_kwargs={**RMSPROP, **(policy_kwargs or {})}, **kwargs)

    def _evaluate(self, rollout, actions: torch.Tensor):
        return self.policy.evaluate_actions(rollout.observations, actions, action_masks=rollout.action_masks)
