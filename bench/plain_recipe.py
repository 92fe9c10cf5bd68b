"""The plain Stable-Baselines3 + PyTorch Geometric recipe that graphtransfer is measured against.

What a user typically writes first: a features extractor that loops over the batch in Python,
builds a PyG ``Batch`` per call, runs GCN layers and mean-pools; SB3's ``MultiInputPolicy`` with
its default heads and ``DictRolloutBuffer``. For ``MultiDiscrete([k] * N)`` those heads end in
``Linear(64, k * N)``, a weight whose shape depends on the graph size.
"""

from __future__ import annotations

import gymnasium as gym
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch_geometric.data import Batch, Data
from torch_geometric.nn import GCNConv, global_mean_pool

from graphtransfer.config import PPOConfig
from graphtransfer.training.model import sb3_kwargs


class PlainGCNExtractor(BaseFeaturesExtractor):
    """Two GCN layers with ReLU, mean-pooled over each sample's real nodes.

    Shapes:
        obs["x"]: ``(B, max_nodes, F)``; obs["edge_index"]: ``(B, 2, max_edges)`` (float32, as
        SB3 hands every Box to the policy); obs["num_nodes"], obs["num_edges"]: ``(B, 1)``.
        Output ``(B, width)``.
    """

    def __init__(self, observation_space: gym.spaces.Dict, width: int = 64):
        super().__init__(observation_space, features_dim=width)
        self.conv1 = GCNConv(observation_space["x"].shape[-1], width)
        self.conv2 = GCNConv(width, width)

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        batch = Batch.from_data_list([_sample_graph(obs, i) for i in range(obs["x"].shape[0])])
        h = torch.relu(self.conv1(batch.x, batch.edge_index))
        h = torch.relu(self.conv2(h, batch.edge_index))
        return global_mean_pool(h, batch.batch, size=batch.num_graphs)


def _sample_graph(obs: dict[str, torch.Tensor], i: int) -> Data:
    """Sample ``i`` of the padded batch, cut to its real nodes and edges."""
    num_nodes, num_edges = int(obs["num_nodes"][i, 0]), int(obs["num_edges"][i, 0])
    return Data(x=obs["x"][i, :num_nodes], edge_index=obs["edge_index"][i, :, :num_edges].long(), num_nodes=num_nodes)


def plain_model(env, ppo: PPOConfig, width: int = 64) -> PPO:
    """SB3 PPO with ``MultiInputPolicy`` and :class:`PlainGCNExtractor`, with ``ppo``'s settings."""
    extractor = {"features_extractor_class": PlainGCNExtractor, "features_extractor_kwargs": {"width": width}}
    return PPO("MultiInputPolicy", env, policy_kwargs=extractor, **sb3_kwargs(ppo))
