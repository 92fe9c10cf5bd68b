"""Train a GNN policy on small graphs with Stable-Baselines3 PPO, run it on graphs of a million nodes.

The stable Python API is what this package exports (``__all__``; see the README's "Python API").
Everything else may change between versions. The names are loaded on first use, so that
``import graphtransfer`` (and the command line's ``--help``) does not import torch, PyG and SB3.

The package is one folder per stage, imported one way, bottom to top::

    errors, io, config  ->  graphs  ->  envs  ->  nn  ->  baselines  ->  checkpoint  ->  solve
        ->  training  ->  transferring, export  ->  reporting  ->  cli
"""

from __future__ import annotations

import ctypes
import importlib
import os
import sys
from typing import Any

# Huge pages for torch's large CPU tensors (torch reads this once, when it loads, so it is set
# here, before anything of ours imports torch; a user's own value wins). A fresh (250k, 64)
# float32 tensor costs 15-23 ms of page faults with it and ~40 ms without; one forward at 250k
# nodes went from 0.61-0.72 s to 0.53-0.55 s (bench/RESULTS.md). Without effect when torch was
# imported first. Commands that solve rather than train turn it off: see prefer_small_pages.
_HUGE_PAGES_SET_BY_USER = "THP_MEM_ALLOC_ENABLE" in os.environ
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")


def prefer_small_pages() -> None:
    """Ordinary pages for torch's tensors in a process that solves rather than trains (predict,
    eval, transfer without fine-tuning). A solve touches most of its memory once, in its first,
    full-graph pass, and where the kernel has no free huge page at hand (a machine up for hours)
    each huge-page fault waits for it to compact memory: predict's solve at 250k nodes took
    3.5-3.6 s with huge pages and 2.7-2.8 s without (``bench/RESULTS.md``, "Huge pages"), while
    training, which reuses its memory for thousands of steps, stays faster with them. Call it
    before torch is imported; a user's own ``THP_MEM_ALLOC_ENABLE`` wins."""
    if not _HUGE_PAGES_SET_BY_USER and "torch" not in sys.modules:
        os.environ["THP_MEM_ALLOC_ENABLE"] = "0"


MALLOC_MMAP_THRESHOLD = 64 * 2**20  # bytes: smaller blocks come from the heap and are reused
MALLOC_TRIM_THRESHOLD = 256 * 2**20  # bytes of free heap top kept for the next allocations


def _reuse_freed_memory() -> None:
    """Fix glibc's allocation thresholds: torch's CPU tensors below 64 MiB then reuse freed heap
    memory instead of fresh pages from the kernel, and at most 256 MiB of free heap top is
    kept. By default glibc moves both thresholds with each free, so whether a training step
    page-faults on its activations depends on the order of its frees: one change to a backward
    quadrupled training's minor faults at 1,000 nodes (110k -> 477k, 259 -> 233 env steps/s);
    with fixed values it ran at 280 (bench/RESULTS.md). 64 MiB holds a ``(N, 64)`` float32
    activation up to N = 262,144, the graphs of the seed's scale: against 32 MiB it took an MIS
    iteration at 148,640 nodes from 99.8 to 55.7 s (peak 1.6 -> 3.2 GB), fine-tuning on the
    250k graph from 29.4 to 21.1 s (2.9 -> 3.7 GB) and predict's solve there from 4.0 to 2.8-3.1 s
    (1.0 -> 1.1 GB). Larger blocks stay mapped and unmapped as before: keeping every freed
    block (glibc's ``MALLOC_MMAP_MAX_=0``) raised the 148,640-node example's peak from 2.6 to
    7 GB. Linux with glibc only; a user's own ``GLIBC_TUNABLES`` or ``MALLOC_*`` settings win."""
    if not sys.platform.startswith("linux") or "GLIBC_TUNABLES" in os.environ or any(name.startswith("MALLOC_") for name in os.environ):
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return
    mallopt(-3, MALLOC_MMAP_THRESHOLD)  # M_MMAP_THRESHOLD
    mallopt(-1, MALLOC_TRIM_THRESHOLD)  # M_TRIM_THRESHOLD


_reuse_freed_memory()

# public name -> (module, attribute)
_EXPORTS = {
    "Graph": ("graphtransfer.graphs", "Graph"),
    "ModelConfig": ("graphtransfer.config", "ModelConfig"),
    "DQNConfig": ("graphtransfer.config", "DQNConfig"),
    "PPOConfig": ("graphtransfer.config", "PPOConfig"),
    "RunConfig": ("graphtransfer.config", "RunConfig"),
    "act": ("graphtransfer.solve.inference", "act"),
    "draw_solution": ("graphtransfer.reporting.draw", "draw_solution"),
    "evaluate": ("graphtransfer.solve.parallel", "evaluate_many"),
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
    "transfer": ("graphtransfer.transferring", "transfer"),
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
