"""Exporting a model folder as a Stable-Baselines3 zip, for users who want ``PPO.load``.

Trusted-only: an SB3 zip holds pickles (its ``data`` entry is read with ``cloudpickle.loads``), so
loading one can run code. We write them for people who load their own files; graphtransfer never
loads one (:mod:`graphtransfer.checkpoint` refuses them).
"""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from stable_baselines3.common.vec_env import DummyVecEnv

from graphtransfer.checkpoint import check_fits, load_strict, read_checkpoint
from graphtransfer.envs.factory import run_env
from graphtransfer.envs.protocol import head_of
from graphtransfer.errors import UsageError
from graphtransfer.graphs import load_graphs
from graphtransfer.io import atomic_write
from graphtransfer.training.model import build_model, check_buffer_fits


def export_sb3(model: str | Path, out: str | Path, graphs: str | Path | None = None, env: str | None = None) -> str:
    """Write the model in folder ``model`` as an SB3 zip that ``PPO.load`` (``MaskablePPO.load`` for a
    node-choice head) accepts with the run's env on ``graphs``.

    SB3 checks that the env's spaces equal the saved ones, and they are padded to the largest graph,
    so the zip is sized for ``graphs`` (default: the graphs the model was trained or transferred
    on). ``env`` names the user env of a model trained on one. Returns the SB3 class name.
    """
    out = Path(out)
    if out.suffix != ".zip":
        raise UsageError(f"--sb3 {out}: name the file *.zip, as SB3 writes and reads them")
    checkpoint = read_checkpoint(model, env)
    config = checkpoint.config
    env = run_env(config, load_graphs(graphs or config.graphs))
    check_fits(checkpoint, env)
    config = replace(config, head=config.head or head_of(env), ppo=replace(config.ppo, n_envs=1))
    check_buffer_fits(config, env, lambda _: None)  # SB3's constructor allocates the rollout buffer
    algorithm = build_model(config, DummyVecEnv([lambda: env]))
    load_strict(algorithm.policy, checkpoint.tensors)
    data = io.BytesIO()
    algorithm.save(data)
    atomic_write(out, data.getvalue())
    return type(algorithm).__name__
