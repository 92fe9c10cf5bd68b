"""What the exact small-graph solvers share: their result type, the size guard that keeps them
away from large graphs, and a 0/1 integer program over one constraint per edge."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_array

from graphtransfer.errors import GraphTooLargeError, UsageError
from graphtransfer.graphs import Graph


@dataclass(frozen=True)
class ExactSolution:
    """The best solution an exact solver found, and whether it is proven optimal.

    Attributes:
        solution: ``(num_nodes,)``, the same dtype and meaning as the task's fast baselines.
        optimal: ``True`` when the solver proved that no better solution exists; ``False`` when
            it stopped at its time limit first.
    """

    solution: np.ndarray
    optimal: bool


def check_size(graph: Graph, max_nodes: int, solver: str, instead: str) -> None:
    """Refuse graphs above ``max_nodes``: exact solvers take exponential time in the worst case.

    Raises:
        GraphTooLargeError: naming the graph's size, the limit and the fast baseline to use instead.
    """
    if graph.num_nodes > max_nodes:
        raise GraphTooLargeError(
            f"{solver}: graph {graph.name or '(unnamed)'} has {graph.num_nodes} nodes, above this exact solver's limit of "
            f"max_nodes={max_nodes}; use the fast baseline {instead} for large graphs, or raise max_nodes if you can wait"
        )


def solve_edge_milp(graph: Graph, maximise: bool, time_limit: float, weights: np.ndarray | None = None) -> tuple[np.ndarray | None, bool]:
    """Optimise the number (or, with ``weights`` ``(num_nodes,)``, the total weight) of chosen
    nodes over binary ``x``, one constraint per edge: at most one endpoint chosen when maximising
    (independent set), at least one when minimising (vertex cover). Solved by HiGHS through
    :func:`scipy.optimize.milp`.

    Returns:
        The best ``(num_nodes,)`` bool solution found, or ``None`` if the time ran out before any;
        and whether it is proven optimal.
    """
    if time_limit <= 0:
        raise UsageError(f"time_limit={time_limit} must be a positive number of seconds, e.g. 10.0")
    from scipy.optimize import Bounds, LinearConstraint, milp  # 0.1 s to import: here, not in every command that loads the baselines

    num_nodes = graph.num_nodes
    src, dst = graph.edge_index
    once = src < dst  # every undirected edge is stored in both directions
    num_edges = int(once.sum())
    rows = np.repeat(np.arange(num_edges), 2)
    cols = np.stack([src[once], dst[once]], axis=1).ravel()
    incidence = csr_array((np.ones(2 * num_edges), (rows, cols)), shape=(num_edges, num_nodes))  # (|E|, |V|)
    per_edge = LinearConstraint(incidence, -np.inf, 1) if maximise else LinearConstraint(incidence, 1, np.inf)
    result = milp(
        c=(-1.0 if maximise else 1.0) * (np.ones(num_nodes) if weights is None else np.asarray(weights, dtype=np.float64)),
        constraints=per_edge,
        integrality=np.ones(num_nodes),
        bounds=Bounds(0, 1),
        options={"time_limit": float(time_limit)},
    )
    if result.x is None:
        return None, False
    return result.x > 0.5, result.status == 0
