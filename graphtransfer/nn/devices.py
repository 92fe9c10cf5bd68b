"""The device a policy runs on: one check that a request for CUDA can be met, for training and
solving alike, before anything is built, read or written."""

from __future__ import annotations

from typing import Literal

import torch

from graphtransfer.errors import UsageError

DEVICES = ("auto", "cpu", "cuda")
"""what ``--device`` takes: ``auto`` is ``cuda`` where torch sees a GPU, else ``cpu``"""


def check_device(device: str) -> None:
    """Refuse a CUDA run where torch sees no GPU, before anything is built."""
    if device == "cuda" and not torch.cuda.is_available():
        raise UsageError(f"device cuda: torch {torch.__version__} sees no CUDA GPU on this machine; use --device cpu or auto")


def resolve_device(name: str) -> Literal["cpu", "cuda"]:
    """``--device`` (one of :data:`DEVICES`) as the device to run on, ``cpu`` or ``cuda``."""
    if name not in DEVICES:
        raise UsageError(f"--device {name!r} must be one of {', '.join(DEVICES)}, e.g. --device cpu")
    check_device(name)
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return "cuda" if name == "cuda" else "cpu"
