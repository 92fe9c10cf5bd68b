"""Action distributions over the nodes of padded graphs."""

from __future__ import annotations

import torch
from stable_baselines3.common.distributions import Distribution
from torch.distributions import Categorical


class NodeWiseCategorical(Distribution):
    """Every real node draws one of ``k`` actions independently; padding nodes contribute nothing.

    ``log_prob`` is the joint log-probability (a sum over real nodes). ``entropy`` is the mean
    per real node, so that an entropy coefficient means the same on 20-node and 60-node graphs.

    Shapes:
        logits: ``(B, max_nodes, k)``; node_mask: ``(B, max_nodes)``; actions: ``(B, max_nodes)``,
        with 0 in padding slots.
    """

    def __init__(self, logits: torch.Tensor, node_mask: torch.Tensor):
        super().__init__()
        self.distribution = Categorical(logits=logits)
        self.node_mask = node_mask

    def proba_distribution_net(self, *args, **kwargs):
        raise NotImplementedError("the node head lives in NodePolicy; this distribution has no net of its own")

    def proba_distribution(self, logits: torch.Tensor, node_mask: torch.Tensor) -> NodeWiseCategorical:
        return NodeWiseCategorical(logits, node_mask)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        per_node = self.distribution.log_prob(actions.long())  # (B, max_nodes)
        return (per_node * self.node_mask).sum(dim=1)

    def entropy(self) -> torch.Tensor:
        per_node = self.distribution.entropy() * self.node_mask
        return per_node.sum(dim=1) / self.node_mask.sum(dim=1).clamp(min=1)

    def sample(self) -> torch.Tensor:
        return self.distribution.sample() * self.node_mask

    def mode(self) -> torch.Tensor:
        return self.distribution.logits.argmax(dim=-1) * self.node_mask

    def actions_from_params(self, logits: torch.Tensor, node_mask: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        return self.proba_distribution(logits, node_mask).get_actions(deterministic=deterministic)

    def log_prob_from_params(self, logits: torch.Tensor, node_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        distribution = self.proba_distribution(logits, node_mask)
        actions = distribution.sample()
        return actions, distribution.log_prob(actions)
