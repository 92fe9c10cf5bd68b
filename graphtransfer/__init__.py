"""Train a GNN policy on small graphs with Stable-Baselines3 PPO, run it on graphs of a million nodes.

The stable Python API is what this package exports (``__all__``; see the README's "Python API").
Everything else may change between versions. The names are loaded on first use, so that
``import graphtransfer`` (and the command line's ``--help``) does not import torch, PyG and SB3.

The package is one folder per stage, imported one way, bottom to top::

    errors, io, config  ->  graphs  ->  envs  ->  nn  ->  baselines  ->  tasks  ->  checkpoint  ->  solve
        ->  training  ->  transferring, export  ->  reporting  ->  cli

Importing it changes nothing in your process; the command line tunes its own process
(threads, pages, allocator) with :func:`graphtransfer.process.tune_process`.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

if "gymnasium" in sys.modules:  # a gymnasium user's `gymnasium.make("graphtransfer/MIS-v0")` then finds the ids
    importlib.import_module("graphtransfer.tasks")  # (which registers them); gymnasium is never imported for this

# public name -> (module, attribute)
_EXPORTS = {
    "Graph": ("graphtransfer.graphs", "Graph"),
    "ModelConfig": ("graphtransfer.config", "ModelConfig"),
    "Decoding": ("graphtransfer.config", "Decoding"),
    "DQNConfig": ("graphtransfer.config", "DQNConfig"),
    "PPOConfig": ("graphtransfer.config", "PPOConfig"),
    "RunConfig": ("graphtransfer.config", "RunConfig"),
    "Runtime": ("graphtransfer.config", "Runtime"),
    "act": ("graphtransfer.solve.inference", "act"),
    "draw_solution": ("graphtransfer.reporting.draw", "draw_solution"),
    "evaluate": ("graphtransfer.solve.parallel", "evaluate"),
    "export_sb3": ("graphtransfer.export", "export_sb3"),
    "load_graph": ("graphtransfer.graphs", "load_graph"),
    "load_graphs": ("graphtransfer.graphs", "load_graphs"),
    "load_model": ("graphtransfer.training.model", "load_model"),
    "load_policy": ("graphtransfer.solve.loading", "load_policy"),
    "obs_to_tensors": ("graphtransfer.solve.inference", "obs_to_tensors"),
    "predict": ("graphtransfer.solve.predict", "predict"),
    "predict_many": ("graphtransfer.solve.parallel", "predict_many"),
    "resume": ("graphtransfer.training.loop", "resume"),
    "train": ("graphtransfer.training.loop", "train"),
    "transfer": ("graphtransfer.transferring.transfer", "transfer"),
    "use_conv": ("graphtransfer.nn.user_conv", "use_conv"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'graphtransfer' has no attribute {name!r}")
    module, attribute = _EXPORTS[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
