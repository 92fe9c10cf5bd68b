"""The max-cut rules of one step, which an env (:class:`~graphtransfer.tasks.maxcut.env.MaxCutEnv`) and
a batch of episodes (:class:`~graphtransfer.tasks.maxcut.batched.MaxCutBatch`) share: the node
features and the flips."""

from __future__ import annotations

import numpy as np

KEEP, FLIP = 0, 1
"""a node's actions: keep its side, or switch"""


def side_counts(edges: np.ndarray, side: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each node's edges along ``edges`` ``(2, E)`` and those to a node on its own ``side``
    ``(N,)``: ``(N,)`` each."""
    src, dst = edges
    degree = np.bincount(src, minlength=side.size)
    same = np.bincount(src[side[src] == side[dst]], minlength=side.size)
    return degree, same


def cut_features(side: np.ndarray, degree: np.ndarray, same: np.ndarray, draw: np.ndarray) -> np.ndarray:
    """:class:`~graphtransfer.tasks.maxcut.env.MaxCutEnv`'s node features, ``(N, 4)`` float32, of
    nodes on their ``side`` with ``degree`` and ``same`` (:func:`side_counts`) and a fresh uniform
    ``draw``, all ``(N,)``."""
    gain = (2 * same - degree) / np.maximum(degree, 1)
    return np.stack([side, gain, np.log1p(degree), draw], axis=1).astype(np.float32)


def flipped(side: np.ndarray, action: np.ndarray) -> np.ndarray:
    """``side`` ``(N,)`` int8 after the nodes whose ``action`` is :data:`FLIP` switch."""
    return side ^ (action == FLIP).astype(np.int8)
