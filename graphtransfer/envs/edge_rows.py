"""A batch's per-edge observation rows (the contract's ``edge_attr``) written from union edges, as
:meth:`~graphtransfer.envs.batched.UnionBatch.write_structure` writes their ``edge_index`` rows:
each episode's edges in episode order, one column each, padded with zeros."""

from __future__ import annotations

import numpy as np

from graphtransfer.envs.batched import Observation


def edge_columns(episode: np.ndarray, count: int) -> np.ndarray:
    """Each union edge's column in its episode's observation, ``(E,)``, from the episode of each
    edge (``(E,)``, non-decreasing: the union's edges in episode order) of ``count`` episodes."""
    counts = np.bincount(episode, minlength=count)
    return np.arange(episode.size) - (np.cumsum(counts) - counts)[episode]


def write_edge_values(key: str, values: np.ndarray, episode: np.ndarray, which: np.ndarray, out: Observation) -> None:
    """Write per-edge ``values`` ``(E, F)`` of the union edges of the episodes of ``which`` (in
    episode order, ``episode`` ``(E,)`` each edge's) into their rows of ``out[key]``
    ``(K, max_edges, F)``, padding columns zero."""
    rows = out[key]
    rows[which] = 0.0
    rows[episode, edge_columns(episode, rows.shape[0])] = values
