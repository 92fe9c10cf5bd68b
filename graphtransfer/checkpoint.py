"""Model folders: safetensors weights plus a JSON config, written atomically, loaded without pickle.

A folder holds ``model.safetensors`` and ``config.json`` (the :class:`RunConfig`, provenance,
library versions and the sha256 of the weights file).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from stable_baselines3.common.policies import ActorCriticPolicy

from graphtransfer.config import RunConfig
from graphtransfer.envs.factory import head_of
from graphtransfer.errors import CheckpointError
from graphtransfer.nn import build_policy

WEIGHTS, CONFIG = "model.safetensors", "config.json"
FORMAT, FORMAT_VERSION = "graphtransfer-model", 1


@dataclass
class Checkpoint:
    config: RunConfig
    tensors: dict[str, torch.Tensor]
    meta: dict[str, Any]
    folder: Path


@dataclass
class LoadReport:
    """How the tensors of a checkpoint matched a freshly built model."""

    loaded: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    resized: list[tuple[str, tuple, tuple]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unexpected or self.resized)

    def summary(self) -> str:
        counts = (len(self.loaded), len(self.missing), len(self.unexpected), len(self.resized))
        return "tensors loaded {}, missing {}, unexpected {}, resized {}".format(*counts)


def state_tensors(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The module's state with each shared tensor once, under its first name.

    SB3 registers one features extractor as ``features_extractor``, ``pi_features_extractor``
    and ``vf_features_extractor``; safetensors refuses such aliases, so they are dropped here.
    """
    seen: set[tuple[int, tuple]] = set()
    tensors = {}
    for name, tensor in module.state_dict().items():
        key = (tensor.data_ptr(), tuple(tensor.shape))
        if key not in seen:
            seen.add(key)
            tensors[name] = tensor
    return tensors


def save_checkpoint(folder: str | Path, module: torch.nn.Module, config: RunConfig, info: dict[str, Any] | None = None) -> Path:
    """Write weights, then the config that names their sha256; each file replaced atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {name: t.detach().cpu().contiguous() for name, t in state_tensors(module).items()}
    weights = _atomic_write(folder / WEIGHTS, lambda path: save_file(tensors, path))
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "config": config.to_dict(),
        "weights_sha256": _sha256(weights),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "versions": {pkg: _version(pkg) for pkg in ("graphtransfer", "torch", "stable-baselines3", "torch-geometric")},
        **(info or {}),
    }
    _atomic_write(folder / CONFIG, lambda path: Path(path).write_text(json.dumps(meta, indent=2) + "\n"))
    return folder


def read_checkpoint(folder: str | Path) -> Checkpoint:
    """Read and verify a model folder. Nothing here unpickles: JSON and safetensors only."""
    folder = Path(folder)
    if folder.suffix == ".zip":
        raise CheckpointError(
            f"{folder}: SB3 zip files are not loaded (their loader unpickles and can run code); pass a graphtransfer model folder"
        )
    if not (folder / CONFIG).is_file() or not (folder / WEIGHTS).is_file():
        raise CheckpointError(f"{folder}: not a model folder (needs {CONFIG} and {WEIGHTS}); train one with 'graphtransfer train'")
    try:
        meta = json.loads((folder / CONFIG).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CheckpointError(f"{folder / CONFIG}: not valid JSON ({err})") from None
    if meta.get("format") != FORMAT or meta.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"{folder / CONFIG}: format {meta.get('format')!r} v{meta.get('format_version')}; "
            f"this graphtransfer reads {FORMAT!r} v{FORMAT_VERSION}"
        )
    if _sha256(folder / WEIGHTS) != meta.get("weights_sha256"):
        raise CheckpointError(
            f"{folder / WEIGHTS}: sha256 differs from {CONFIG}; the weights are damaged or were replaced, retrain or restore them"
        )
    try:
        tensors = load_file(folder / WEIGHTS)
    except SafetensorError as err:
        raise CheckpointError(f"{folder / WEIGHTS}: unreadable safetensors file ({err})") from None
    return Checkpoint(RunConfig.from_dict(meta["config"]), tensors, meta, folder)


def load_strict(module: torch.nn.Module, tensors: dict[str, torch.Tensor]) -> LoadReport:
    """Copy ``tensors`` into ``module``; every tensor must match by name and shape.

    Raises:
        CheckpointError: naming each missing, unexpected or differently shaped tensor.
    """
    target = state_tensors(module)
    report = LoadReport(
        missing=sorted(set(target) - set(tensors)),
        unexpected=sorted(set(tensors) - set(target)),
        resized=[(n, tuple(tensors[n].shape), tuple(t.shape)) for n, t in target.items() if n in tensors and tensors[n].shape != t.shape],
    )
    if not report.ok:
        details = [f"missing {n}" for n in report.missing] + [f"unexpected {n}" for n in report.unexpected]
        details += [f"{n}: checkpoint {a} vs model {b}" for n, a, b in report.resized]
        raise CheckpointError(
            "checkpoint does not fit this model (" + "; ".join(details[:6]) + (" ..." if len(details) > 6 else "") + "); "
            "the node-feature width, the task and the architecture must match the training run"
        )
    with torch.no_grad():
        for name, tensor in target.items():
            tensor.copy_(tensors[name])
            report.loaded.append(name)
    return report


def _atomic_write(path: Path, write) -> Path:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "unknown"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_policy(checkpoint: Checkpoint, env) -> tuple[ActorCriticPolicy, LoadReport]:
    """Build a policy for ``env``'s spaces from the checkpoint's config and load it strictly."""
    config = checkpoint.config
    head = config.head or head_of(env)  # folders written before the head was recorded
    if head != head_of(env):
        raise CheckpointError(
            f"{checkpoint.folder}: the model has a {head} head but this env needs {head_of(env)}; "
            "transfer only between envs with the same kind of action space"
        )
    policy = build_policy(head, config.model, env.observation_space, env.action_space)
    return policy, load_strict(policy, checkpoint.tensors)
