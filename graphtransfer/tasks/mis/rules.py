"""The MIS task's rules as a user's env declares them (``rules = graphtransfer.tasks.independent_set``):
the exact rules of a pass in the product's vocabulary, and the kernel, finishing rule, searches,
rival and baselines the built-in task declares."""

from __future__ import annotations

import numpy as np

from graphtransfer.envs.protocol import JOIN, LEAVE, WAIT, Rules
from graphtransfer.tasks.mis.constants import EXCLUDE, INCLUDE
from graphtransfer.tasks.mis.domination import closes_wedges
from graphtransfer.tasks.mis.env import MISEnv, checked_reduction_actions


def independent_set_exact_actions(edge_index: np.ndarray, num_nodes: int, active: np.ndarray, memo: dict) -> np.ndarray:
    """On a residual graph of an independent-set problem: nodes without neighbours join, nodes
    that dominate a neighbour (their closed neighbourhood holds the neighbour's) leave, as the
    built-in MIS task decides them (:func:`~graphtransfer.tasks.mis.env.checked_reduction_actions`):
    whether the graph closes enough wedges for the full domination check is read once per graph,
    and later passes check again only around the nodes that lost a neighbour.

    Shapes:
        edge_index: ``(2, E)`` directed edges (both directions) over ``0..num_nodes-1``; active:
        ``(N,)`` bool over the episode's graph; returns ``(num_nodes,)`` int64 of :data:`JOIN`,
        :data:`LEAVE`, :data:`WAIT`.
    """
    if "triangles" not in memo:
        memo["triangles"] = closes_wedges(edge_index, num_nodes)
    decided, memo["last"] = checked_reduction_actions(edge_index, num_nodes, active, memo["triangles"], memo.get("last"))
    return np.select([decided == INCLUDE, decided == EXCLUDE], [JOIN, LEAVE], WAIT)


INDEPENDENT_SET = Rules(
    exact_actions=independent_set_exact_actions,
    kernel=MISEnv.kernel,
    finish=MISEnv.finish,
    improve=MISEnv.improve,
    search=MISEnv.search,
    rival=MISEnv.rival,
    baselines=dict(MISEnv.baselines),
    renumberable=True,
)
"""Maximum independent set: for an env whose ``solution()`` is the ``(num_nodes,)`` bool set and
whose ``active_nodes()`` are the nodes neither in the set nor beside it."""
