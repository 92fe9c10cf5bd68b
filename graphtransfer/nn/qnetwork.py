"""Q-networks for DQN in the style of S2V-DQN: the GNN embeds every node, and shared heads turn
embeddings into a Q-value per action, so no weight depends on the graph's size.

The Q-value is split, as in dueling networks: ``Q(s, a) = V(s) + A(s, a) - mean_a A(s, a)``,
with ``V`` from the pooled embedding of the real nodes (the remaining cost, a property of the
whole graph that no node's few-hop embedding sees) and ``A`` from the action's own embedding.
Without ``V``, every node's output had to predict the graph's remaining cost: DQN learned far
slower (measured on MVC by ``bench/algos.sh``). Which action is best depends on ``A`` alone, and ``A``
of a node depends only on its neighbourhood, so inference on the active nodes only
(:func:`graphtransfer.solve.inference.active_subgraph`) ranks nodes exactly as on the whole graph.

:class:`ActionQPolicy` is what DQN needs of any head: ``q_values(obs)``, ``(B, num_actions)``
with padding at :data:`~graphtransfer.nn.policy.PADDING_LOGIT`. A head fills in two steps,
:meth:`ActionQPolicy.action_scores` (embeddings → padded advantages and which actions are real)
and the input width of its scoring MLP. :class:`NodeQPolicy` scores nodes (``Discrete(max_nodes)``),
:class:`EdgeQPolicy` edges (``Discrete(max_edges)``, from the endpoints' embeddings and the edge's
features); the DQN algorithm, its masks and its replay buffer only ever see ``(B, num_actions)``.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import PyTorchObs, Schedule

from graphtransfer.config import ModelConfig
from graphtransfer.envs.protocol import Head
from graphtransfer.nn.batching import DisjointGraph
from graphtransfer.nn.compaction import Compaction
from graphtransfer.nn.extractor import GNNExtractor
from graphtransfer.nn.policy import PADDING_LOGIT, ActorCritic, NoOptimizer, edge_inputs, edge_mlp, mlp, policy_kwargs, run_mlp


class ActionQPolicy(BasePolicy):
    """The online Q-network of DQN over a Discrete action space of graph elements; the policy acts
    greedily (``_predict``), DQN adds epsilon-greedy exploration among the valid actions.

    Its parameters are the extractor's and the head's only, in the optimizer's order, so a model
    folder stores it like an actor-critic policy. The target network is a second instance that
    the algorithm holds (:class:`graphtransfer.training.dqn.GraphDQN`), never saved.

    Args:
        observation_space: the contract's ``Dict`` space.
        action_space: ``Discrete(max_actions)``.
        lr_schedule: SB3's learning-rate schedule.
        head_width: hidden width of the scoring head.
    """

    observation_space: spaces.Dict
    action_space: spaces.Discrete
    features_extractor: GNNExtractor

    def __init__(
        self,
        observation_space: spaces.Dict,
        action_space: spaces.Discrete,
        lr_schedule: Schedule,
        head_width: int = 64,
        features_extractor_class: type[GNNExtractor] = GNNExtractor,
        features_extractor_kwargs: dict[str, Any] | None = None,
        optimizer_class: type[torch.optim.Optimizer] = torch.optim.Adam,
        optimizer_kwargs: dict[str, Any] | None = None,
    ):
        super().__init__(
            observation_space,
            action_space,
            features_extractor_class,
            features_extractor_kwargs or {},
            optimizer_class=optimizer_class,
            optimizer_kwargs=optimizer_kwargs,
            normalize_images=False,
        )
        self.head_width = head_width
        extractor = self.make_features_extractor()
        if not isinstance(extractor, GNNExtractor):
            raise TypeError(f"a Q-network reads node embeddings from a GNNExtractor; got {type(extractor).__name__}")
        self.features_extractor = extractor
        self.q_head = mlp([self._action_inputs(), head_width, 1])  # A: per action
        self.value_head = mlp([self.features_extractor.features_dim, head_width, 1])  # V: per graph
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]  # SB3 types optimizer_class as the base Optimizer, which takes no lr

    def _action_inputs(self) -> int:
        """Input width of the scoring MLP: a node embedding here; a head may widen it."""
        return self.features_extractor.width

    def action_scores(
        self, h: torch.Tensor, graph: DisjointGraph, compaction: Compaction | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The advantages ``A`` ``(B, max_actions)`` from the node embeddings ``h``
        ``(total_nodes, width)`` of ``graph`` (padding at :data:`PADDING_LOGIT` or 0), and which
        actions are real ``(B, max_actions)`` bool; where ``h`` embeds a ``compaction``'s batch,
        for the actions of the batch it came from. The step every head defines."""
        raise NotImplementedError

    def node_scores(self, obs: PyTorchObs, with_values: bool = True) -> tuple[torch.Tensor, None]:
        """Advantages over :data:`SAMPLING_TEMPERATURE` ``(B, max_actions)`` as a choice
        policy's scores (padding at :data:`PADDING_LOGIT`; the inference path asks every choice
        head by this name); no values."""
        advantages, real = self.action_scores(*self.features_extractor.compacted_embeddings(obs))
        return (advantages / SAMPLING_TEMPERATURE).masked_fill(~real, PADDING_LOGIT), None

    def q_values(self, obs: PyTorchObs) -> torch.Tensor:
        """``(B, num_actions)`` Q-values ``V + A - mean A`` (the mean over real actions), padding
        at :data:`PADDING_LOGIT`. Equal isolated nodes are embedded once (graphtransfer.nn.compaction)."""
        h, graph, compaction = self.features_extractor.compacted_embeddings(obs)
        advantages, real = self.action_scores(h, graph, compaction)
        centred = advantages.masked_fill(~real, 0.0)
        centred = centred - centred.sum(dim=1, keepdim=True) / real.sum(dim=1, keepdim=True).clamp(min=1)
        value = run_mlp(self.value_head, self.features_extractor.pool(h, graph, compaction))  # (B, 1)
        return (value + centred).masked_fill(~real, PADDING_LOGIT)

    def masked_q_values(self, obs: PyTorchObs, action_masks: torch.Tensor | np.ndarray | None) -> torch.Tensor:
        """:meth:`q_values` with invalid actions (``action_masks`` False) at :data:`PADDING_LOGIT`."""
        q = self.q_values(obs)
        if action_masks is None:
            return q
        valid = torch.as_tensor(action_masks, device=q.device).reshape(q.shape).bool()
        return q.masked_fill(~valid, PADDING_LOGIT)

    def forward(self, obs: PyTorchObs, deterministic: bool = True) -> torch.Tensor:
        return self._predict(obs, deterministic)

    def _predict(self, obs: PyTorchObs, deterministic: bool = True) -> torch.Tensor:
        """The greedy action of each observation (padding never chosen; invalid actions need the
        masks, see :meth:`masked_q_values`)."""
        return self.q_values(obs).argmax(dim=1)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        return data | {
            "head_width": self.head_width,
            "lr_schedule": self._dummy_schedule,
            "features_extractor_class": self.features_extractor_class,
            "features_extractor_kwargs": self.features_extractor_kwargs,
            "optimizer_class": self.optimizer_class,
            "optimizer_kwargs": self.optimizer_kwargs,
        }


SAMPLING_TEMPERATURE = 0.001
"""advantages over this are the scores that sampled decoding draws from (a softmax), so sampling
is nearly greedy, with near-ties broken at random: a DQN policy is its greedy policy. Rewards, and
so advantages, are fractions of the graph (one node of a 20-60-node training graph: 0.017-0.05).
Measured with a 30k-step MVC model on a 10,000-node BA graph, cover / greedy: 1.284 sampled at
0.001, 1.413 at 0.01 (near-random), 1.313 deterministic."""


class NodeQPolicy(ActionQPolicy):
    """Q-values per node: one shared MLP on each node's embedding gives its advantage
    (``Discrete(max_nodes)``).

    The inference path (:mod:`graphtransfer.solve.inference`) asks node-choice policies for
    ``node_scores``; here they are the advantages over :data:`SAMPLING_TEMPERATURE`, which rank
    nodes as the Q-values do: predict and eval commit the nodes of highest Q-value
    (deterministic), or draw them from a softmax of those scores (sampled, the default).
    """

    def action_scores(
        self, h: torch.Tensor, graph: DisjointGraph, compaction: Compaction | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        scores = run_mlp(self.q_head, h)[:, 0]  # (total_nodes,)
        padded = scores.new_full(graph.node_mask.shape, PADDING_LOGIT)
        padded[graph.node_mask] = scores
        if compaction is None:
            return padded, graph.node_mask
        return compaction.expand(padded[..., None])[..., 0], compaction.node_mask  # each node's row's score


class EdgeQPolicy(ActionQPolicy):
    """Q-values per edge (``Discrete(max_edges)``): one shared MLP over each edge's
    ``[h_source, h_destination, edge_attr]`` gives its advantage, as the edge-choice actor scores
    edges (:func:`~graphtransfer.nn.policy.edge_mlp`); predict and eval commit edges as they
    commit nodes for :class:`NodeQPolicy`."""

    def _action_inputs(self) -> int:
        return edge_inputs(self.observation_space, self.features_extractor.width)

    def action_scores(
        self, h: torch.Tensor, graph: DisjointGraph, compaction: Compaction | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # a compaction keeps every edge in its slot, renumbered with the embeddings: nothing to expand
        scores = edge_mlp(self.q_head, h, graph.edge_index, graph.edge_attr)[:, 0]  # (total_edges,)
        padded = scores.new_full(graph.edge_mask.shape, PADDING_LOGIT)
        padded[graph.edge_mask] = scores
        return padded, graph.edge_mask


AnyPolicy: TypeAlias = ActorCritic | ActionQPolicy
"""what a model folder holds: an actor-critic policy (PPO, A2C) or a Q-network (DQN)"""

Q_POLICIES: dict[Head, type[ActionQPolicy]] = {Head.NODE_CHOICE: NodeQPolicy, Head.EDGE_CHOICE: EdgeQPolicy}
"""the heads DQN supports, with the Q-network of each"""


def q_policy_kwargs(model: ModelConfig) -> dict[str, Any]:
    """``policy_kwargs`` of a Q-network from the run's model settings: the extractor's as the
    actor-critic policies get them."""
    extractor = policy_kwargs(Head.NODE_CHOICE, model)["features_extractor_kwargs"]
    return {"features_extractor_kwargs": extractor, "head_width": model.head_width}


def build_q_policy(
    head: str, model: ModelConfig, observation_space: spaces.Dict, action_space: spaces.Space, device: str = "cpu"
) -> ActionQPolicy:
    """A fresh Q-network for the given spaces, for loading weights into and solving with (no
    optimizer: :class:`~graphtransfer.nn.policy.NoOptimizer`)."""
    if head not in Q_POLICIES:
        raise ValueError(f"DQN has no Q-network for the {head} head; it supports {', '.join(map(str, Q_POLICIES))}")
    if not isinstance(action_space, spaces.Discrete):
        raise ValueError(f"a Q-network scores the actions of a Discrete space; got {action_space}")
    kwargs = {**q_policy_kwargs(model), "optimizer_class": NoOptimizer}
    policy = Q_POLICIES[Head(head)](observation_space, action_space, lambda _: 0.0, **kwargs)
    return policy.to(device)
