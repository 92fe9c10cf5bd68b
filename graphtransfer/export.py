"""Exporting a model folder as a Stable-Baselines3 zip, for users who want ``PPO.load`` (or the
``load`` of the run's algorithm).

Trusted-only: an SB3 zip holds pickles (its ``data`` entry is read with ``cloudpickle.loads``), so
loading one can run code. We write them for people who load their own files; graphtransfer never
loads one (:mod:`graphtransfer.checkpoint` refuses them).
"""

from __future__ import annotations

import io
from pathlib import Path

from sb3_contrib import MaskablePPO
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.base_class import BaseAlgorithm

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.errors import UsageError
from graphtransfer.graphs import resolve
from graphtransfer.io import atomic_write, check_output_file
from graphtransfer.training.a2c import MaskableA2C
from graphtransfer.training.dqn import GraphDQN
from graphtransfer.training.model import load_model


def export_sb3(model: str | Path, out: str | Path, graphs: str | Path | None = None, env: str | None = None, force: bool = False) -> str:
    """Write the model in folder ``model`` as an SB3 zip that ``PPO.load`` (``MaskablePPO.load`` for a
    node- or edge-choice head) accepts with the run's env on ``graphs``.

    SB3 checks that the env's spaces equal the saved ones, and they are padded to the largest graph,
    so the zip is sized for ``graphs`` (default: the graphs the model was trained or transferred
    on). ``env`` names the user env of a model trained on one. ``out`` never replaces a graph or a
    model's files, and an existing file only with ``force``. Returns the name of the class that
    loads it (:func:`loader_name`).
    """
    out = Path(out)
    check_output_file(out, [resolve(graphs)] if graphs else [], force, "--sb3")
    if out.suffix != ".zip":
        raise UsageError(f"--sb3 {out}: name the file *.zip, as SB3 writes and reads them")
    algorithm = load_model(model, graphs or read_checkpoint(model, env).config.graphs, env)
    data = io.BytesIO()
    algorithm.save(data)
    atomic_write(out, data.getvalue())
    return loader_name(algorithm)


def loader_name(algorithm: BaseAlgorithm) -> str:
    """The class whose ``load`` reads the algorithm's zip back: SB3's own for PPO, MaskablePPO and
    A2C (our subclasses add only runtime settings), ours for MaskableA2C, whose update SB3 lacks,
    and for DQN, whose Q-network and target network differ from SB3's ``DQNPolicy``."""
    if isinstance(algorithm, MaskableA2C | GraphDQN):
        return f"{type(algorithm).__module__}.{type(algorithm).__name__}"
    for sb3_class in (MaskablePPO, A2C, PPO):
        if isinstance(algorithm, sb3_class):
            return sb3_class.__name__
    raise ValueError(f"no SB3 loader known for {type(algorithm).__name__}")
