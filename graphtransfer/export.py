"""Exporting a model folder as a Stable-Baselines3 zip, for users who want ``PPO.load``.

Trusted-only: an SB3 zip holds pickles (its ``data`` entry is read with ``cloudpickle.loads``), so
loading one can run code. We write them for people who load their own files; graphtransfer never
loads one (:mod:`graphtransfer.checkpoint` refuses them).
"""

from __future__ import annotations

import io
from pathlib import Path

from sb3_contrib import MaskablePPO

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.errors import UsageError
from graphtransfer.io import atomic_write
from graphtransfer.training.model import load_model


def export_sb3(model: str | Path, out: str | Path, graphs: str | Path | None = None, env: str | None = None) -> str:
    """Write the model in folder ``model`` as an SB3 zip that ``PPO.load`` (``MaskablePPO.load`` for a
    node- or edge-choice head) accepts with the run's env on ``graphs``.

    SB3 checks that the env's spaces equal the saved ones, and they are padded to the largest graph,
    so the zip is sized for ``graphs`` (default: the graphs the model was trained or transferred
    on). ``env`` names the user env of a model trained on one. Returns the name of the SB3 class
    that loads it: ``"PPO"`` or ``"MaskablePPO"`` (the zip records our subclass, which adds only
    the node budget of the update; SB3's own class loads it).
    """
    out = Path(out)
    if out.suffix != ".zip":
        raise UsageError(f"--sb3 {out}: name the file *.zip, as SB3 writes and reads them")
    algorithm = load_model(model, graphs or read_checkpoint(model, env).config.graphs, env)
    data = io.BytesIO()
    algorithm.save(data)
    atomic_write(out, data.getvalue())
    return "MaskablePPO" if isinstance(algorithm, MaskablePPO) else "PPO"
