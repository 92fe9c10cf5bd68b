"""The epidemic's rules of one step, which an env (:class:`~graphtransfer.tasks.epidemic.env.EpidemicEnv`)
and a batch of episodes (:class:`~graphtransfer.tasks.epidemic.batched.EpidemicBatch`) share: the
measures' transmission and cost, the node features and the spread."""

from __future__ import annotations

import numpy as np

TRANSMISSION = np.array([1.0, 0.5, 0.1])  # factor on the per-contact infection probability
COST = np.array([0.0, 0.02, 0.08])  # per step, in units of "fraction of population infected"


def epidemic_features(edges: np.ndarray, infected: np.ndarray) -> np.ndarray:
    """:class:`~graphtransfer.tasks.epidemic.env.EpidemicEnv`'s node features, ``(N, 3)`` float32, of the ``infected`` ``(N,)``
    nodes of ``edges`` ``(2, E)``."""
    src, dst = edges
    degree = np.bincount(src, minlength=infected.size)
    sick_neighbours = np.bincount(src[infected[dst]], minlength=infected.size)
    return np.stack([infected, np.log1p(degree), sick_neighbours / np.maximum(degree, 1)], axis=1).astype(np.float32)


def spread(
    edges: np.ndarray, infected: np.ndarray, escape: float | np.ndarray, catch: np.ndarray, heal: np.ndarray, recovery: float | np.ndarray
) -> np.ndarray:
    """Who is infected after one step of the epidemic, ``(N,)`` bool: a susceptible node escapes
    each infected neighbour along ``edges`` ``(2, E)`` with probability ``escape`` (the measure's),
    and catches it where its uniform ``catch`` is past that; an infected node stays so unless its
    ``heal`` draw is below ``recovery``. ``escape`` and ``recovery`` are one value, or one per node."""
    src, dst = edges
    sick_neighbours = np.bincount(src[infected[dst]], minlength=infected.size)
    newly = ~infected & (catch >= escape**sick_neighbours)
    return (infected & (heal >= recovery)) | newly
