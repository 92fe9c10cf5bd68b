"""The MIS task on one part of a graph (:class:`~graphtransfer.envs.protocol.PartRules`): its
statuses, its observation's features, its step rule, its check and the exact rules that read a
node's neighbourhood alone, for ``predict --partitions``."""

from __future__ import annotations

import numpy as np

from graphtransfer.envs.protocol import JOIN, LEAVE, WAIT, PartRules
from graphtransfer.tasks.mis.constants import IN_SET, INCLUDE, OUT, UNDECIDED
from graphtransfer.tasks.mis.features import caro_wei_cost, node_features


def part_features(edge_index: np.ndarray, degree: np.ndarray, status: np.ndarray, draw: np.ndarray) -> np.ndarray:
    """The env's features of a part's own nodes: the Caro-Wei cost sums over each node's
    in-neighbours, halo nodes' degrees included, as the whole graph's does.

    Shapes:
        edge_index: ``(2, E)``; degree: ``(n + h,)``; status, draw: ``(n,)``; returns ``(n, 6)`` float32.
    """
    own = status.size
    cost = caro_wei_cost(edge_index[::-1], degree)[:own]
    return node_features(status, degree[:own], cost, draw)


def part_settle(edge_index: np.ndarray, status: np.ndarray, joined: np.ndarray) -> np.ndarray:
    """The own nodes' status ``(n,)`` once ``joined`` ``(n + h,)`` joins the set: each undecided
    neighbour of a joining node, in the part or across the cut, leaves (:func:`~graphtransfer.tasks.mis.env.mis_step`)."""
    status = status.copy()
    status[joined[: status.size]] = IN_SET
    near = np.zeros(status.size, dtype=bool)
    near[edge_index[1][joined[edge_index[0]]]] = True
    status[near & (status == UNDECIDED)] = OUT
    return status


def part_check(edge_index: np.ndarray, status: np.ndarray, own: int) -> str | None:
    """What is wrong with the set at the part's ``own`` nodes (``status`` ``(n + h,)``): two
    adjacent nodes in it (not independent), or a node outside it with no neighbour in it (not maximal)."""
    chosen = status == IN_SET
    source, target = edge_index
    if (chosen[source] & chosen[target]).any():
        return "not independent"
    covered = chosen[:own].copy()
    covered[target[chosen[source]]] = True
    return None if covered.all() else "not maximal"


def part_exact_actions(edge_index: np.ndarray, degree: np.ndarray, ids: np.ndarray, own: int) -> np.ndarray:
    """The exact rules of an MIS pass that read a node's neighbourhood alone
    (:func:`~graphtransfer.tasks.mis.env.reduction_actions` without triangles): a node without
    undecided neighbours joins, a node with a pendant neighbour (of residual degree 1) leaves, the
    higher global id of two adjacent pendants. The full domination check reads the neighbours'
    neighbourhoods, which a part does not hold for its boundary: the kernel before the passes has it.

    Shapes:
        edge_index: ``(2, E)`` the residual edges into the ``own`` nodes; degree, ids: ``(n + h,)``;
        returns ``(n,)`` int64 (decided nodes have no residual edge and read as joining: only the
        undecided nodes' answers are read).
    """
    source, target = edge_index
    pendant = degree[source] == 1
    v, u = source[pendant], target[pendant]
    actions = np.full(own, WAIT, dtype=np.int64)
    actions[u[(degree[v] < degree[u]) | (ids[v] < ids[u])]] = LEAVE
    actions[degree[:own] == 0] = JOIN
    return actions


MIS_PARTS = PartRules(
    undecided=UNDECIDED,
    joined=IN_SET,
    left=OUT,
    commit=INCLUDE,
    features=part_features,
    settle=part_settle,
    check=part_check,
    exact_actions=part_exact_actions,
)
"""the built-in MIS task's :class:`~graphtransfer.envs.protocol.PartRules`"""
