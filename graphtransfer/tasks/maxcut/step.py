"""The max-cut rules of one step, which an env (:class:`~graphtransfer.tasks.maxcut.env.MaxCutEnv`) and
a batch of episodes (:class:`~graphtransfer.tasks.maxcut.batched.MaxCutBatch`) share: the node
features and the flips."""

from __future__ import annotations

import numpy as np

KEEP, FLIP = 0, 1
"""a node's actions: keep its side, or switch"""


def cut_features(edges: np.ndarray, side: np.ndarray, draw: np.ndarray) -> np.ndarray:
    """:class:`~graphtransfer.tasks.maxcut.env.MaxCutEnv`'s node features, ``(N, 4)`` float32, of the nodes of ``edges``
    ``(2, E)`` on their ``side`` ``(N,)``, with the fresh uniform ``draw`` ``(N,)``."""
    src, dst = edges
    degree = np.bincount(src, minlength=side.size)
    same = np.bincount(src[side[src] == side[dst]], minlength=side.size)
    gain = (2 * same - degree) / np.maximum(degree, 1)
    return np.stack([side, gain, np.log1p(degree), draw], axis=1).astype(np.float32)


def flipped(side: np.ndarray, action: np.ndarray) -> np.ndarray:
    """``side`` ``(N,)`` int8 after the nodes whose ``action`` is :data:`FLIP` switch."""
    return side ^ (action == FLIP).astype(np.int8)
