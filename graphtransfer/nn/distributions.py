"""Action distributions over the nodes of padded graphs."""

from __future__ import annotations

import torch
from stable_baselines3.common.distributions import Distribution


class NodeWiseCategorical(Distribution):
    """Every real node draws one of ``k`` actions independently; padding nodes contribute nothing.

    ``log_prob`` is the joint log-probability (a sum over real nodes). ``entropy`` is the mean
    per real node, so that an entropy coefficient means the same on 20-node and 60-node graphs.

    The per-node categoricals are computed class-major, ``(k, B, max_nodes)``: torch's softmax
    over a last dimension of 2 or 3 runs one row at a time, 8x slower than over the first
    (``(1, 250000, 3)``: 11.2 ms for ``log_softmax(-1)``, 1.3 ms this way with the copy), and a
    ``torch.distributions.Categorical`` adds a softmax and argument checks of its own. The numbers
    are those of ``Categorical(logits=logits)`` to float rounding (``tests/test_nn.py``).

    Shapes:
        logits: ``(B, max_nodes, k)``; node_mask: ``(B, max_nodes)``; actions: ``(B, max_nodes)``,
        with 0 in padding slots.
    """

    def __init__(self, logits: torch.Tensor, node_mask: torch.Tensor):
        super().__init__()
        self.class_log_probs = logits.movedim(-1, 0).contiguous().log_softmax(dim=0)  # (k, B, max_nodes)
        self.node_mask = node_mask

    @property
    def log_probs(self) -> torch.Tensor:
        """Each node's log-probability of each action, ``(B, max_nodes, k)`` (a view)."""
        return self.class_log_probs.movedim(0, -1)

    @property
    def probs(self) -> torch.Tensor:
        """Each node's probability of each action, ``(B, max_nodes, k)``."""
        return self.class_log_probs.exp().movedim(0, -1)

    def proba_distribution_net(self, *args, **kwargs):
        raise NotImplementedError("the node head lives in NodePolicy; this distribution has no net of its own")

    def proba_distribution(self, logits: torch.Tensor, node_mask: torch.Tensor) -> NodeWiseCategorical:
        return NodeWiseCategorical(logits, node_mask)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        per_node = self.class_log_probs.gather(0, actions.long().unsqueeze(0)).squeeze(0)  # (B, max_nodes)
        return (per_node * self.node_mask).sum(dim=1)

    def entropy(self) -> torch.Tensor:
        log_probs = self.class_log_probs
        per_node = -(log_probs.exp() * log_probs).sum(dim=0) * self.node_mask
        return per_node.sum(dim=1) / self.node_mask.sum(dim=1).clamp(min=1)

    def sample(self) -> torch.Tensor:
        classes = self.class_log_probs.shape[0]
        rows = self.probs.reshape(-1, classes).contiguous()  # multinomial draws differently from a strided view
        return torch.multinomial(rows, 1, True).view(self.node_mask.shape) * self.node_mask

    def mode(self) -> torch.Tensor:
        # max's indices, the first maximum as argmax's: argmax over the leading class dimension
        # took 34 ms for (3, 1, 250000) on one thread, max 3.5 ms
        return self.class_log_probs.max(dim=0).indices * self.node_mask

    def actions_from_params(self, logits: torch.Tensor, node_mask: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        return self.proba_distribution(logits, node_mask).get_actions(deterministic=deterministic)

    def log_prob_from_params(self, logits: torch.Tensor, node_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        distribution = self.proba_distribution(logits, node_mask)
        actions = distribution.sample()
        return actions, distribution.log_prob(actions)
