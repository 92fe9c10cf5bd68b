"""An SB3 actor-critic policy whose actor scores every node with one shared MLP.

For ``MultiDiscrete([k] * max_nodes)`` action spaces (every node acts at once). The weights of
the node head, the value head and the extractor depend on feature widths only, so a policy
trained on 50-node graphs loads strictly into one built for 250,000 nodes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import Schedule
from torch import nn

from graphtransfer.config import ModelConfig
from graphtransfer.nn.distributions import NodeWiseCategorical
from graphtransfer.nn.extractor import GNNExtractor


def mlp(sizes: list[int]) -> nn.Sequential:
    """Linear layers with ReLU between them (none after the last)."""
    layers: list[nn.Module] = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(n_in, n_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


class NodePolicy(ActorCriticPolicy):
    """Node-wise actor (k logits per node) and a value head on the pooled graph embedding.

    Args:
        observation_space: the contract's ``Dict`` space.
        action_space: ``MultiDiscrete([k] * max_nodes)``.
        lr_schedule: SB3's learning-rate schedule.
        head_width: hidden width of both heads.
        features_extractor_kwargs: passed to :class:`GNNExtractor`.
    """

    def __init__(
        self, observation_space: spaces.Dict, action_space: spaces.MultiDiscrete, lr_schedule: Schedule, head_width: int = 64, **kwargs: Any
    ):
        nvec = np.asarray(action_space.nvec)
        if nvec.ndim != 1 or (nvec != nvec[0]).any():
            raise ValueError(f"NodePolicy needs MultiDiscrete([k] * max_nodes); got nvec {nvec[:5]}...")
        self.num_actions = int(nvec[0])
        self.head_width = head_width
        kwargs.setdefault("features_extractor_class", GNNExtractor)
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def _build(self, lr_schedule: Schedule) -> None:
        width = self.features_extractor.width
        self.node_head = mlp([width, self.head_width, self.num_actions])
        self.value_head = mlp([self.features_dim, self.head_width, 1])
        if self.ortho_init:
            for module, gain in ((self.features_extractor, np.sqrt(2)), (self.node_head, np.sqrt(2)), (self.value_head, np.sqrt(2))):
                module.apply(lambda m, g=gain: self.init_weights(m, gain=g))
            self.init_weights(self.node_head[-1], gain=0.01)
            self.init_weights(self.value_head[-1], gain=1.0)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "head_width": self.head_width}

    def _heads(self, obs: dict[str, torch.Tensor]) -> tuple[NodeWiseCategorical, torch.Tensor]:
        h, graph = self.features_extractor.node_embeddings(obs)
        node_logits = self.node_head(h)  # (total_nodes, k)
        logits = node_logits.new_zeros((*graph.node_mask.shape, self.num_actions))
        logits[graph.node_mask] = node_logits  # back to the padded layout (B, max_nodes, k)
        values = self.value_head(self.features_extractor.pool(h, graph))  # (B, 1)
        return NodeWiseCategorical(logits, graph.node_mask), values

    def forward(self, obs: dict[str, torch.Tensor], deterministic: bool = False):
        distribution, values = self._heads(obs)
        actions = distribution.get_actions(deterministic=deterministic)
        return actions, values, distribution.log_prob(actions)

    def evaluate_actions(self, obs: dict[str, torch.Tensor], actions: torch.Tensor):
        distribution, values = self._heads(obs)
        return values, distribution.log_prob(actions), distribution.entropy()

    def get_distribution(self, obs: dict[str, torch.Tensor]) -> NodeWiseCategorical:
        return self._heads(obs)[0]

    def predict_values(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        h, graph = self.features_extractor.node_embeddings(obs)
        return self.value_head(self.features_extractor.pool(h, graph))


def policy_kwargs(model: ModelConfig) -> dict[str, Any]:
    """SB3 ``policy_kwargs`` for :class:`NodePolicy` from the run's model settings."""
    extractor = {"conv": model.conv, "num_layers": model.num_layers, "width": model.width, "aggr": model.aggr}
    return {"features_extractor_class": GNNExtractor, "features_extractor_kwargs": extractor, "head_width": model.head_width}


def build_policy(model: ModelConfig, observation_space: spaces.Dict, action_space: spaces.MultiDiscrete, device: str = "cpu") -> NodePolicy:
    """A fresh policy for the given spaces, for loading weights into (no optimizer state kept)."""
    policy = NodePolicy(observation_space, action_space, lambda _: 0.0, **policy_kwargs(model))
    return policy.to(device)
