"""Routing's rules of one step, which an env (:class:`~graphtransfer.tasks.path.env.PathEnv`) and a
batch of episodes (:class:`~graphtransfer.tasks.path.batched.PathBatch`) share: what the
observation shows around the current node, and what a move off the mask costs."""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_array

BALL_RADIUS = 4
"""hops around the current node that the observation shows"""

POTENTIAL_CLIP = 4.0
"""the guide's relative potential is clipped to ± this many mean edge lengths (or hops)"""

OFF_MASK_REWARD = -1.0
"""the reward of an action outside ``action_masks()`` (the route stays where it is): as much as a whole shortest
route. Every action of the space is a step, as gymnasium's and SB3's ``check_env`` ask; a masked policy never pays it"""


def relative(values: np.ndarray, nodes: np.ndarray, current: int | np.ndarray) -> np.ndarray:
    """``values[nodes] - values[current]`` (one current node, or each node's own), with nodes that
    cannot reach the target (infinite values) as far as the clip allows."""
    difference = values[nodes] - values[current]
    return np.where(np.isfinite(difference), difference, np.inf)


def ball(matrix: csr_array, centre: int, radius: int) -> np.ndarray:
    """The nodes within ``radius`` hops of ``centre``, sorted, by a breadth-first search that
    stops at the radius."""
    seen = np.array([centre])
    frontier = seen
    for _ in range(radius):
        frontier = np.setdiff1d(matrix[frontier].indices, seen)
        if frontier.size == 0:
            break
        seen = np.union1d(seen, frontier)
    return seen


def route_features(
    num_nodes: int,
    *,
    ends: tuple[int | np.ndarray, int | np.ndarray],
    near: np.ndarray,
    centre: int | np.ndarray,
    visited: np.ndarray,
    hops: np.ndarray,
    mask: np.ndarray,
    steps: tuple[np.ndarray, np.ndarray],
    potential: np.ndarray,
) -> np.ndarray:
    """:class:`~graphtransfer.tasks.path.env.PathEnv`'s node features ``(num_nodes, 7)`` float32
    (see its docstring), zero outside the ``near`` nodes (the ball) but for the route's ``ends``
    (current node, target): of a route, or of a batch's routes, one entry of each per route.

    ``centre``: the current node of each near node's route (one for a route alone); ``visited``,
    ``hops``, ``mask``: per node; ``steps``: the current nodes' neighbours and the lengths of the
    edges to them over the mean edge length; ``potential``: each near node's guide, relative."""
    features = np.zeros((num_nodes, 7), dtype=np.float32)
    current, target = ends
    features[current, 0] = features[target, 1] = 1.0
    features[near, 2] = visited[near]
    features[near, 3] = np.clip(relative(hops, near, centre), -1, 1)
    neighbours, lengths = steps
    features[neighbours, 4] = lengths
    features[near, 5] = mask[near]
    features[near, 6] = np.clip(potential, -POTENTIAL_CLIP, POTENTIAL_CLIP)
    return features
