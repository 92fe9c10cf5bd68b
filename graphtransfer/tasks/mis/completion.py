"""Finishing a policy's independent set so that every answer is complete, feasible and maximal,
with what the policy decided counted apart from what a rule added.

The rule, applied after decoding stops (solved, or at the pass limit):

1. Nodes still undecided are completed by greedy minimum degree on the subgraph they span
   (:func:`~graphtransfer.tasks.mis.baselines.greedy_min_degree`: least degree first, ties to the lowest
   position). None of them has a neighbour in the set (a node that joins excludes its undecided
   neighbours), so every node greedy takes can join.
2. A final pass adds, the same way, every node that is outside the set with no neighbour in it:
   nodes the policy excluded that could still join. The set is then maximal.
"""

from __future__ import annotations

import numpy as np

from graphtransfer.envs.transforms import FinishedSet
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph
from graphtransfer.graphs.graph import induced_subgraph
from graphtransfer.tasks.mis.baselines import greedy_min_degree


def finish_independent_set(graph: Graph, chosen: np.ndarray, undecided: np.ndarray) -> FinishedSet:
    """Complete and maximise a policy's set by the rule in the module docstring.

    Args:
        chosen: ``(num_nodes,)`` bool, the nodes the policy put in the set (an independent set).
        undecided: ``(num_nodes,)`` bool, the nodes it had not decided when decoding stopped
            (for the MIS env, :meth:`~graphtransfer.tasks.mis.env.MISEnv.active_nodes`).

    Raises:
        UsageError: arrays of the wrong shape, or ``chosen`` that is not an independent set.
    """
    chosen, undecided = _checked(graph, chosen, "chosen"), _checked(graph, undecided, "undecided")
    src, dst = graph.edge_index
    if (chosen[src] & chosen[dst]).any():
        raise UsageError("chosen is not an independent set: two adjacent nodes are both in it; finish only a feasible set")
    by_policy = int(chosen.sum())
    near = _near(graph, chosen)
    completed, by_rule = add_greedily(graph, chosen, undecided & ~chosen & ~near)
    if by_rule:  # else the nodes beside the set are those beside the policy's: no second pass over the edges
        near = _near(graph, completed)
    maximal, for_maximality = make_maximal(graph, completed, near)
    return FinishedSet(maximal, by_policy, int((undecided & ~chosen).sum()), by_rule, for_maximality)


def make_maximal(graph: Graph, chosen: np.ndarray, near: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """``chosen`` (an independent set) with nodes added until none outside it is free of
    neighbours in it, least degree first among the free ones; returns the set and how many
    nodes were added. ``near``: the nodes with a neighbour in ``chosen`` where the caller has
    them already (else one pass over the edges finds them)."""
    if near is None:
        near = _near(graph, chosen)
    return add_greedily(graph, chosen, ~chosen & ~near)


def add_greedily(graph: Graph, chosen: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, int]:
    """``chosen`` plus greedy minimum degree's set on the subgraph of ``candidates``, which must
    have no neighbour in ``chosen``; returns the set and how many nodes joined.

    Shapes:
        chosen, candidates: ``(num_nodes,)`` bool.
    """
    if not candidates.any():
        return chosen.copy(), 0
    sub, positions = induced_subgraph(graph, candidates)
    picked = positions[greedy_min_degree(sub)]
    chosen = chosen.copy()
    chosen[picked] = True
    return chosen, int(picked.size)


def _near(graph: Graph, chosen: np.ndarray) -> np.ndarray:
    """``(num_nodes,)`` bool: nodes with a neighbour in ``chosen``."""
    src, dst = graph.edge_index
    near = np.zeros(graph.num_nodes, dtype=bool)
    near[dst[chosen[src]]] = True
    return near


def _checked(graph: Graph, mask: np.ndarray, name: str) -> np.ndarray:
    mask = np.asarray(mask)
    if mask.shape != (graph.num_nodes,):
        raise UsageError(f"{name} has shape {mask.shape}; expected ({graph.num_nodes},), one bool per node")
    return mask.astype(bool)
