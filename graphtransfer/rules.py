"""The product's rules for problems users write envs for, ready to declare as an env's ``rules``
(:class:`~graphtransfer.envs.protocol.Rules`): ``rules = graphtransfer.rules.independent_set``.

What each buys a user's env is measured in docs/guide/your-env.md ("Make your env transfer well").
"""

from __future__ import annotations

import numpy as np

from graphtransfer.baselines.completion import finish_independent_set
from graphtransfer.baselines.local_search import polish_independent_set
from graphtransfer.envs.domination import closes_wedges
from graphtransfer.envs.mis import EXCLUDE, INCLUDE, checked_reduction_actions
from graphtransfer.envs.mis_kernel import mis_kernel
from graphtransfer.envs.protocol import JOIN, LEAVE, WAIT, Rules


def independent_set_exact_actions(edge_index: np.ndarray, num_nodes: int, active: np.ndarray, memo: dict) -> np.ndarray:
    """On a residual graph of an independent-set problem: nodes without neighbours join, nodes
    that dominate a neighbour (their closed neighbourhood holds the neighbour's) leave, as the
    built-in MIS task decides them (:func:`graphtransfer.envs.mis.checked_reduction_actions`):
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


independent_set = Rules(
    exact_actions=independent_set_exact_actions,
    kernel=mis_kernel,
    finish=finish_independent_set,
    improve=polish_independent_set,
    renumberable=True,
)
"""Maximum independent set: an env whose ``solution()`` is the ``(num_nodes,)`` bool set and whose
``active_nodes()`` are the nodes neither in the set nor beside it."""
