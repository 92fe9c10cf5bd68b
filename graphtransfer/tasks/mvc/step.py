"""The vertex-cover node features, which the envs (:class:`~graphtransfer.tasks.mvc.env.MVCEnv`,
:class:`~graphtransfer.tasks.mvc.env.WeightedMVCEnv`) and their batches
(:mod:`graphtransfer.tasks.mvc.batched`) share."""

from __future__ import annotations

import numpy as np

from graphtransfer.graphs.weights import MAX_WEIGHT


def cover_features(in_cover: np.ndarray, degree: np.ndarray, draw: np.ndarray) -> np.ndarray:
    """:class:`~graphtransfer.tasks.mvc.env.MVCEnv`'s node features, ``(N, 4)`` float32, of nodes ``in_cover`` ``(N,)`` with
    ``degree`` ``(N,)`` uncovered edges, given a fresh uniform ``draw`` ``(N,)`` (shown only where
    a node has uncovered edges)."""
    valid = degree > 0
    draw = draw * valid
    return np.stack([in_cover, np.log1p(degree) + 0.3 * draw, draw, valid], axis=1).astype(np.float32)


def weighted_cover_features(unweighted: np.ndarray, degree: np.ndarray, shown: np.ndarray) -> np.ndarray:
    """:class:`~graphtransfer.tasks.mvc.env.WeightedMVCEnv`'s node features, ``(N, 6)`` float32: the ``unweighted`` ones
    (:func:`cover_features`), then the ``shown`` weight ``(N,)`` over :data:`MAX_WEIGHT` and the
    greedy ratio of uncovered ``degree`` ``(N,)`` to it."""
    ratio = np.log1p(degree / np.maximum(shown, 1e-6))
    return np.column_stack([unweighted, shown / MAX_WEIGHT, ratio]).astype(np.float32)
