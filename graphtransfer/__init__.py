"""Train a GNN policy on small graphs with Stable-Baselines3 PPO, run it on graphs of a million nodes.

The stable Python API is what this package exports (``__all__``; see the README's "Python API").
Everything else may change between versions. ``train``, ``transfer``, ``predict`` and ``evaluate``
here are functions, which hide the modules of those names as attributes of the package: import
from the modules with ``from graphtransfer.train import ...``, which is unaffected.
"""

from graphtransfer.api import load_policy
from graphtransfer.config import ModelConfig, PPOConfig, RunConfig
from graphtransfer.draw import draw_solution
from graphtransfer.export import export_sb3
from graphtransfer.graphs import Graph, load_graph, load_graphs
from graphtransfer.inference import act, obs_to_tensors
from graphtransfer.parallel import evaluate_many as evaluate
from graphtransfer.parallel import predict_many
from graphtransfer.predict import predict
from graphtransfer.train import resume, train
from graphtransfer.transfer import transfer

__all__ = [
    "Graph",
    "ModelConfig",
    "PPOConfig",
    "RunConfig",
    "act",
    "draw_solution",
    "evaluate",
    "export_sb3",
    "load_graph",
    "load_graphs",
    "load_policy",
    "obs_to_tensors",
    "predict",
    "predict_many",
    "resume",
    "train",
    "transfer",
]
