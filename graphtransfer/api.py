"""The one function of the Python API that no other module owns: a saved policy ready for :func:`act`."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
from stable_baselines3.common.policies import ActorCriticPolicy

from graphtransfer import checkpoint
from graphtransfer.evaluate import inference_env
from graphtransfer.graphs import Graph, load_graph


def load_policy(model: str | Path, graph: str | Path | Graph) -> tuple[ActorCriticPolicy, gym.Env]:
    """The policy in the model folder ``model``, built for ``graph`` (a :class:`Graph`, a graph
    file or a sample name), and the run's env on that graph, whose observations
    ``obs_to_tensors`` turns into what :func:`graphtransfer.act` takes.

    The weights do not depend on the graph; the graph only sizes the env's spaces.
    """
    saved = checkpoint.read_checkpoint(model)
    env = inference_env(saved.config, graph if isinstance(graph, Graph) else load_graph(graph))
    policy, _ = checkpoint.load_policy(saved, env)
    return policy, env
