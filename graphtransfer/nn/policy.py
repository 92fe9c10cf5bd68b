"""SB3 actor-critic policies whose actor scores every node with one shared MLP.

- :class:`NodePolicy` (PPO): ``MultiDiscrete([k] * max_nodes)``, every node picks one of k actions.
- :class:`NodeChoicePolicy` (sb3-contrib ``MaskablePPO``): ``Discrete(max_nodes)``, pick one node;
  padding is masked here and invalid nodes through the env's ``action_masks()``.
- :class:`EdgePolicy` (PPO): ``MultiDiscrete([k] * max_edges)``, every edge picks one of k actions.
- :class:`EdgeChoicePolicy` (``MaskablePPO``): ``Discrete(max_edges)``, pick one edge.
- :class:`GraphPolicy`: graph-level tasks, SB3's own ``MultiInputPolicy`` with :class:`GNNExtractor`
  and categoricals built without torch's argument checks.

Edge heads score an edge from its two endpoints' embeddings and its own features (one shared
MLP, see :class:`EdgeHeads`). The weights of every head, the value head and the extractor depend
on feature widths only, so a policy trained on 50-node graphs loads strictly into one built for
250,000 nodes.
"""

from __future__ import annotations

import math
from typing import Any, TypeAlias

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.distributions import CategoricalDistribution
from stable_baselines3.common.policies import ActorCriticPolicy, BasePolicy, MultiInputActorCriticPolicy
from stable_baselines3.common.type_aliases import PyTorchObs, Schedule
from torch import nn
from torch.distributions import Categorical

import graphtransfer.nn.message_passing as message_passing
from graphtransfer.config import ModelConfig
from graphtransfer.envs.contract import check_contract, edge_feature_count
from graphtransfer.envs.protocol import Head, head_of
from graphtransfer.nn.batching import DisjointGraph, as_padded
from graphtransfer.nn.distributions import NodeWiseCategorical
from graphtransfer.nn.extractor import GNNExtractor

HEADS = tuple(head.value for head in Head)
PADDING_LOGIT = -1e8  # as sb3-contrib masks: probability 0, but no NaN from -inf - -inf


def mlp(sizes: list[int]) -> nn.Sequential:
    """Linear layers with ReLU between them (none after the last)."""
    layers: list[nn.Module] = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(n_in, n_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def run_mlp(layers: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """``layers(x)`` for an :func:`mlp` (or a slice of one), over the first dimension of ``x``.

    Without gradients the rows run in blocks of about
    :data:`~graphtransfer.nn.message_passing.BLOCK_BYTES` of hidden activations, each ReLU in
    place: a block stays in cache, and at 250k nodes no ``(N, width)`` hidden tensor is made
    (a fresh one per ReLU cost as much as the ReLU itself). ``x`` may be overwritten when the
    first layer is a ReLU.

    Shapes:
        x: ``(R, ..., F_in)``; returns ``(R, ..., F_out)``.
    """
    if torch.is_grad_enabled():
        return layers(x)
    if x.numel() * x.element_size() <= message_passing.BLOCK_BYTES:  # a small batch: no blocks to work out
        return mlp_in_place(layers, x)
    linears = [layer for layer in layers if isinstance(layer, nn.Linear)]
    widest = max([x.shape[-1]] + [layer.out_features for layer in linears])
    size = max(1, message_passing.BLOCK_BYTES // (math.prod(x.shape[1:-1]) * widest * x.element_size()))
    if x.shape[0] <= size:
        return mlp_in_place(layers, x)
    out = x.new_empty((*x.shape[:-1], linears[-1].out_features))
    for start in range(0, x.shape[0], size):
        out[start : start + size] = mlp_in_place(layers, x[start : start + size])
    return out


def mlp_in_place(layers: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """``layers(x)`` without gradients, each ReLU in its input's memory."""
    for layer in layers:
        x = x.relu_() if isinstance(layer, nn.ReLU) else layer(x)
    return x


class NodeHeads(BasePolicy):
    """The part both node policies share: a per-node MLP with ``outputs_per_node`` outputs
    and a value MLP on the pooled embedding of the real nodes. Mixed into an SB3 policy
    (PPO's ``ActorCriticPolicy`` or sb3-contrib's ``MaskableActorCriticPolicy``), listed first."""

    outputs_per_node: int
    head_width: int
    head_name = "node_head"
    """the attribute (and state-dict prefix) of the action MLP"""
    node_head: nn.Sequential
    value_head: nn.Sequential
    # what the SB3 policy it is mixed into sets up
    observation_space: spaces.Dict
    features_extractor: GNNExtractor
    features_dim: int
    ortho_init: bool

    def _head_inputs(self) -> int:
        """Input width of the action MLP: one node embedding."""
        return self.features_extractor.width

    def _build(self, lr_schedule: Schedule) -> None:
        action_head = mlp([self._head_inputs(), self.head_width, self.outputs_per_node])
        setattr(self, self.head_name, action_head)
        self.value_head = mlp([self.features_dim, self.head_width, 1])
        if self.ortho_init:
            for module in (self.features_extractor, action_head, self.value_head):
                module.apply(lambda m: self.init_weights(m, gain=np.sqrt(2)))
            self.init_weights(action_head[-1], gain=0.01)
            self.init_weights(self.value_head[-1], gain=1.0)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)  # type: ignore[call-arg]  # SB3 types optimizer_class as the base Optimizer, which takes no lr

    def _get_constructor_parameters(self) -> dict[str, Any]:
        return {**super()._get_constructor_parameters(), "head_width": self.head_width}

    def node_outputs(self, obs: PyTorchObs, with_values: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Per-node outputs in the padded layout ``(B, max_nodes, outputs_per_node)`` (zeros in
        padding), which slots are real nodes ``(B, max_nodes)``, and values ``(B, 1)``; ``None``
        for values when ``with_values`` is off (acting needs none, and pooling 250k nodes is not
        free). Equal isolated nodes are embedded once (graphtransfer.nn.compaction)."""
        h, graph, compaction = self.features_extractor.compacted_embeddings(obs)
        outputs = run_mlp(self.node_head, h)
        if graph.unpadded:  # nothing padded: the rows are already in the padded layout
            padded = outputs.view(*graph.node_mask.shape, self.outputs_per_node)
        else:
            padded = h.new_zeros((*graph.node_mask.shape, self.outputs_per_node))
            padded[graph.node_mask] = outputs
        values = self.value_head(self.features_extractor.pool(h, graph, compaction)) if with_values else None
        if compaction is None:
            return padded, graph.node_mask, values
        return compaction.expand(padded), compaction.node_mask, values

    def predict_values(self, obs: PyTorchObs) -> torch.Tensor:
        h, graph, compaction = self.features_extractor.compacted_embeddings(obs)
        return self.value_head(self.features_extractor.pool(h, graph, compaction))


class NodePolicy(NodeHeads, ActorCriticPolicy):
    """Every node picks one of k actions: k logits per node.

    Args:
        observation_space: the contract's ``Dict`` space.
        action_space: ``MultiDiscrete([k] * max_nodes)``.
        lr_schedule: SB3's learning-rate schedule.
        head_width: hidden width of both heads.
        **kwargs: passed to SB3's ``ActorCriticPolicy`` (``features_extractor_kwargs``, ...).
    """

    def __init__(
        self, observation_space: spaces.Dict, action_space: spaces.MultiDiscrete, lr_schedule: Schedule, head_width: int = 64, **kwargs: Any
    ):
        check_contract(observation_space)  # as policy_for does: one line at construction, not a KeyError at the first step
        nvec = np.asarray(action_space.nvec)
        if nvec.ndim != 1 or (nvec != nvec[0]).any():
            raise ValueError(f"{type(self).__name__} needs MultiDiscrete([k] * units), the same k for every unit; got nvec {nvec[:5]}...")
        self.outputs_per_node, self.head_width = int(nvec[0]), head_width
        kwargs.setdefault("features_extractor_class", GNNExtractor)
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def _distribution(self, obs: PyTorchObs, with_values: bool = True) -> tuple[NodeWiseCategorical, torch.Tensor | None]:
        logits, node_mask, values = self.node_outputs(obs, with_values)
        return NodeWiseCategorical(logits, node_mask), values

    def forward(self, obs: PyTorchObs, deterministic: bool = False):
        distribution, values = self._distribution(obs)
        actions = distribution.get_actions(deterministic=deterministic)
        return actions, values, distribution.log_prob(actions)

    def evaluate_actions(self, obs: PyTorchObs, actions: torch.Tensor):
        distribution, values = self._distribution(obs)
        return values, distribution.log_prob(actions), distribution.entropy()

    def get_distribution(self, obs: PyTorchObs) -> NodeWiseCategorical:
        return self._distribution(obs, with_values=False)[0]


class NodeChoicePolicy(NodeHeads, MaskableActorCriticPolicy):
    """Pick one node: one score per node, a categorical over the nodes of each graph.

    Padding nodes get probability 0 here; the env's ``action_masks()`` removes invalid nodes.

    Args:
        observation_space: the contract's ``Dict`` space.
        action_space: ``Discrete(max_nodes)``.
        lr_schedule: SB3's learning-rate schedule.
        head_width: hidden width of both heads.
    """

    outputs_per_node = 1

    def __init__(
        self, observation_space: spaces.Dict, action_space: spaces.Discrete, lr_schedule: Schedule, head_width: int = 64, **kwargs: Any
    ):
        check_contract(observation_space)
        self.head_width = head_width
        kwargs.setdefault("features_extractor_class", GNNExtractor)
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    def node_scores(self, obs: PyTorchObs, with_values: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Scores ``(B, max_nodes)`` with padding at :data:`PADDING_LOGIT`, and values (``None``
        without ``with_values``)."""
        scores, node_mask, values = self.node_outputs(obs, with_values)
        return scores[..., 0].masked_fill(~node_mask, PADDING_LOGIT), values

    def _distribution(self, obs, action_masks=None, with_values: bool = True):
        scores, values = self.node_scores(obs, with_values)
        distribution = self.action_dist.proba_distribution(action_logits=scores)
        if action_masks is not None:
            distribution.apply_masking(action_masks)
        return distribution, values

    def forward(self, obs: PyTorchObs, deterministic: bool = False, action_masks: np.ndarray | None = None):
        distribution, values = self._distribution(obs, action_masks)
        actions = distribution.get_actions(deterministic=deterministic)
        return actions, values, distribution.log_prob(actions)

    def evaluate_actions(self, obs: PyTorchObs, actions: torch.Tensor, action_masks: torch.Tensor | None = None):
        distribution, values = self._distribution(obs, action_masks)
        return values, distribution.log_prob(actions), distribution.entropy()

    def get_distribution(self, obs: PyTorchObs, action_masks: np.ndarray | None = None):
        return self._distribution(obs, action_masks, with_values=False)[0]


def edge_mlp(layers: nn.Sequential, h: torch.Tensor, edge_index: torch.Tensor, edge_attr: torch.Tensor | None) -> torch.Tensor:
    """An :func:`mlp` over every real edge's ``[h_source, h_destination, edge_attr]``, its first
    layer split by input so that the ``(E, 2 * width + F_e)`` input is never built: two
    ``(N, hidden)`` products gathered per edge, the same sums in another order.

    Shapes:
        h: ``(total_nodes, width)``; edge_index: ``(2, total_edges)``; edge_attr: ``(total_edges, F_e)``
        or ``None``; returns ``(total_edges, outputs)``.
    """
    first, rest = split_first(layers)
    width = h.shape[1]
    source, destination = edge_index
    hidden = (h @ first.weight[:, :width].t())[source] + (h @ first.weight[:, width : 2 * width].t())[destination] + first.bias
    if edge_attr is not None:
        hidden = hidden + edge_attr @ first.weight[:, 2 * width :].t()
    return run_mlp(rest, hidden)


def split_first(layers: nn.Sequential) -> tuple[nn.Linear, nn.Sequential]:
    """An :func:`mlp`'s first layer and the layers after it (torch types any index of a
    ``Sequential`` as a plain ``Module``)."""
    first, rest = layers[0], layers[1:]
    if not isinstance(first, nn.Linear) or not isinstance(rest, nn.Sequential):
        raise TypeError(f"expected an mlp, a Sequential that starts with a Linear layer; got {layers}")
    return first, rest


def edge_inputs(observation_space: spaces.Dict, width: int) -> int:
    """Input width of a per-edge MLP: two node embeddings of ``width`` and the edge's features."""
    return 2 * width + edge_feature_count(observation_space)


class EdgeHeads(NodeHeads):
    """A per-edge MLP over ``[h_source, h_destination, edge_attr]`` with ``outputs_per_node``
    outputs per edge, and the node heads' value MLP. Its first layer is split by input (source,
    destination, features) so the ``(E, 2 * width + F_e)`` input is never built: two
    ``(N, head_width)`` products gathered per edge, the same sums in another order."""

    head_name = "edge_head"
    edge_head: nn.Sequential

    def _head_inputs(self) -> int:
        """Input width of the action MLP: two node embeddings and the edge's features."""
        return edge_inputs(self.observation_space, self.features_extractor.width)

    def edge_outputs(self, obs: PyTorchObs, with_values: bool = True) -> tuple[torch.Tensor, DisjointGraph, torch.Tensor | None]:
        """Per-edge outputs in the padded layout ``(B, max_edges, outputs_per_node)`` (zeros in
        padding), the disjoint graph, and values ``(B, 1)`` (``None`` without ``with_values``).
        Equal isolated nodes are embedded once (graphtransfer.nn.compaction): no edge reads them,
        and the edges keep their slots."""
        h, graph, compaction = self.features_extractor.compacted_embeddings(obs)
        outputs = edge_mlp(self.edge_head, h, graph.edge_index, graph.edge_attr)  # (total_edges, outputs_per_node)
        padded = h.new_zeros((*graph.edge_mask.shape, self.outputs_per_node))
        padded[graph.edge_mask] = outputs
        return padded, graph, self.value_head(self.features_extractor.pool(h, graph, compaction)) if with_values else None


class EdgePolicy(EdgeHeads, NodePolicy):
    """Every edge picks one of k actions: k logits per edge; padding edges never act.

    Args: as :class:`NodePolicy`, with ``action_space`` ``MultiDiscrete([k] * max_edges)``.
    """

    def _distribution(self, obs: PyTorchObs, with_values: bool = True) -> tuple[NodeWiseCategorical, torch.Tensor | None]:
        logits, graph, values = self.edge_outputs(obs, with_values)
        return NodeWiseCategorical(logits, graph.edge_mask), values


class EdgeChoicePolicy(EdgeHeads, NodeChoicePolicy):
    """Pick one edge: one score per edge, a categorical over the edges of each graph; padding
    edges get probability 0 here, the env's ``action_masks()`` ``(max_edges,)`` removes invalid ones.

    Args: as :class:`NodeChoicePolicy`, with ``action_space`` ``Discrete(max_edges)``.
    """

    def node_scores(self, obs: PyTorchObs, with_values: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Edge scores ``(B, max_edges)``, padding at :data:`PADDING_LOGIT`, and values; the
        name is the choice heads' shared interface (see :meth:`NodeChoicePolicy.node_scores`)."""
        scores, graph, values = self.edge_outputs(obs, with_values)
        return scores[..., 0].masked_fill(~graph.edge_mask, PADDING_LOGIT), values


class UncheckedCategoricalDistribution(CategoricalDistribution):
    """SB3's categorical over ``Discrete(k)`` without torch's argument checks: a check of the
    logits at every step and one of the actions at every log-probability cost 7% of training's
    env steps/s on 50-node graphs (840 -> 890, three pairs). Non-finite logits still fail
    loudly, in ``torch.multinomial``."""

    def proba_distribution(self, action_logits: torch.Tensor) -> UncheckedCategoricalDistribution:
        self.distribution = Categorical(logits=action_logits, validate_args=False)
        return self


class GraphPolicy(MultiInputActorCriticPolicy):
    """SB3's ``MultiInputPolicy`` (one decision per graph) with :class:`GNNExtractor` pooled
    features by default; a ``Discrete`` action space gets :class:`UncheckedCategoricalDistribution`.
    The weights and their names are SB3's own. Like the node and edge policies, it takes a PyG
    ``Data`` or ``Batch`` wherever it takes the contract's padded observations."""

    def __init__(self, observation_space: spaces.Dict, action_space: spaces.Space, lr_schedule: Schedule, **kwargs: Any):
        check_contract(observation_space)
        kwargs.setdefault("features_extractor_class", GNNExtractor)
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    # SB3's entry points, for a PyG Data or Batch too (SB3 would read it as a Dict of keys)
    def forward(self, obs: PyTorchObs, deterministic: bool = False):
        return super().forward(as_padded(obs), deterministic)

    def evaluate_actions(self, obs: PyTorchObs, actions: torch.Tensor):
        return super().evaluate_actions(as_padded(obs), actions)

    def get_distribution(self, obs: PyTorchObs):
        return super().get_distribution(as_padded(obs))

    def predict_values(self, obs: PyTorchObs) -> torch.Tensor:
        return super().predict_values(as_padded(obs))

    def _build(self, lr_schedule: Schedule) -> None:
        if type(self.action_dist) is CategoricalDistribution:
            self.action_dist = UncheckedCategoricalDistribution(self.action_dist.action_dim)
        super()._build(lr_schedule)


ActorCritic: TypeAlias = ActorCriticPolicy | MaskableActorCriticPolicy
"""a policy of the actor-critic algorithms; the choice heads' are sb3-contrib's masked kind"""

POLICIES: dict[Head, type[ActorCritic]] = {
    Head.NODE_WISE: NodePolicy,
    Head.NODE_CHOICE: NodeChoicePolicy,
    Head.EDGE_WISE: EdgePolicy,
    Head.EDGE_CHOICE: EdgeChoicePolicy,
    Head.GRAPH_LEVEL: GraphPolicy,
}


def policy_for(env: gym.Env) -> type[ActorCritic]:
    """The policy class a plain SB3 user passes for ``env``: the one for the head its spaces imply
    (or that it declares). None of the class's weights depends on the number of nodes or edges,
    so a model built for a larger env loads a smaller one's ``state_dict`` as it is.

    ``NodeChoicePolicy`` and ``EdgeChoicePolicy`` are masked: use them with sb3-contrib's
    ``MaskablePPO``; the others with ``PPO`` or ``A2C``.

    Example::

        PPO(policy_for(env), env, policy_kwargs={"features_extractor_kwargs": {"width": 32}})
    """
    return POLICIES[head_of(env)]


def policy_kwargs(head: str, model: ModelConfig) -> dict[str, Any]:
    """SB3 ``policy_kwargs`` for the head's policy class from the run's model settings."""
    extractor = {"conv": model.conv, "num_layers": model.num_layers, "width": model.width, "aggr": model.aggr}
    if not model.project_input:  # only then: checkpoints of older versions keep their exact kwargs
        extractor["project_input"] = False
    kwargs: dict[str, Any] = {"features_extractor_class": GNNExtractor, "features_extractor_kwargs": extractor}
    if head == Head.GRAPH_LEVEL:  # SB3's own MLP heads on the pooled graph embedding
        return {**kwargs, "net_arch": [model.head_width, model.head_width]}
    return {**kwargs, "head_width": model.head_width}


class NoOptimizer:
    """The optimizer of a policy built to load weights into and solve with (:func:`build_policy`,
    :func:`~graphtransfer.nn.qnetwork.build_q_policy`): none. SB3's policies build theirs as they
    are made, and torch's Adam, adding its first parameters, imports torch's compiler: with PyG's
    own import of it deferred, about a second of every predict's start-up. Training and adaptation build their own policies, with
    their own optimizers."""

    def __init__(self, params: Any, **settings: Any) -> None:
        del params, settings  # SB3 passes the parameters and the learning rate; nothing trains here


def build_policy(
    head: str, model: ModelConfig, observation_space: spaces.Dict, action_space: spaces.Space, device: str = "cpu"
) -> ActorCritic:
    """A fresh policy for the given spaces, for loading weights into and solving with (no optimizer:
    :class:`NoOptimizer`)."""
    if head not in POLICIES:
        raise ValueError(f"head {head!r} is not known; choose one of {HEADS}")
    kwargs = {**policy_kwargs(head, model), "optimizer_class": NoOptimizer}
    policy = POLICIES[Head(head)](observation_space, action_space, lambda _: 0.0, **kwargs)
    return policy.to(device)
