"""CHILS (concurrent hybrid iterated local search, Großmann, Schulz et al.), the state-of-the-art
maximum independent set heuristic a user would pick instead of a policy: an optional baseline,
installed with ``pip install 'graphtransfer[chils]'`` (the ``chils`` package, a compiled library
behind ctypes). Nothing else in graphtransfer needs it."""

from __future__ import annotations

import importlib.util
import math

import numpy as np

from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph

DEFAULT_CHILS_SECONDS = 10.0
"""seconds CHILS searches by default, as the project's own local search"""

CHILS_SOLUTIONS = 16
"""concurrent solutions CHILS keeps (its ``n_solutions``; the package's example uses 16)"""


def chils_available() -> bool:
    """Whether the optional ``chils`` package is installed (nothing is imported)."""
    return importlib.util.find_spec("chils") is not None


def chils_mis(graph: Graph, time_budget: float = DEFAULT_CHILS_SECONDS, seed: int = 0, weights: np.ndarray | None = None) -> np.ndarray:
    """A large independent set found by CHILS in ``time_budget`` seconds (the graph's transfer
    to the library, an edge at a time through ctypes, is not counted in it): ``(num_nodes,)`` bool.
    With ``weights`` ``(num_nodes,)``, a heavy one (CHILS solves maximum-weight independent set;
    it takes integer weights, so weights that are not all integers are scaled to at most 10^9
    and rounded).

    Raises:
        UsageError: ``chils`` is not installed, or a budget that is not a positive number.
    """
    if not chils_available():
        raise UsageError("the CHILS baseline needs the chils package: pip install 'graphtransfer[chils]'")
    if not (isinstance(time_budget, (int, float)) and math.isfinite(time_budget) and time_budget > 0):
        raise UsageError(f"time_budget={time_budget!r} must be a positive number of seconds, e.g. {DEFAULT_CHILS_SECONDS}")
    from chils import CHILS

    solver = CHILS()
    for weight in _integer_weights(graph.num_nodes, weights):
        solver.add_vertex(weight)
    src, dst = graph.edge_index
    once = src < dst
    for u, v in zip(src[once].tolist(), dst[once].tolist(), strict=True):
        solver.add_edge(u, v)
    solver.run_full(float(time_budget), CHILS_SOLUTIONS, seed)
    return np.fromiter((solver.get_solution_vertex_configuration(v) for v in range(graph.num_nodes)), dtype=bool, count=graph.num_nodes)


def chils_cover(graph: Graph, time_budget: float = DEFAULT_CHILS_SECONDS, seed: int = 0) -> np.ndarray:
    """A light weighted vertex cover: the complement of the heavy independent set CHILS finds with
    the graph's :func:`~graphtransfer.graphs.weights.node_weights` (a set is independent exactly
    when its complement covers every edge, and the heaviest set leaves the lightest cover)."""
    from graphtransfer.graphs.weights import node_weights

    return ~chils_mis(graph, time_budget, seed, node_weights(graph))


def _integer_weights(num_nodes: int, weights: np.ndarray | None) -> list[int]:
    """Positive integer weights for CHILS: 1 each without ``weights``; integers as they are; other
    weights scaled so that the largest is 10^9, rounded, at least 1."""
    if weights is None:
        return [1] * num_nodes
    weights = np.asarray(weights, dtype=np.float64)
    if not np.array_equal(weights, np.rint(weights)):
        weights = np.rint(weights * (1e9 / max(float(weights.max(initial=0.0)), 1e-300)))
    return np.maximum(weights, 1).astype(np.int64).tolist()


def chils_cover_solver():
    """``eval --chils`` for weighted vertex cover: :func:`chils_cover`, after checking it can run."""
    chils_solver()
    return chils_cover


def chils_solver():
    """``eval --chils``: CHILS as an extra MIS baseline, after checking it can run."""
    if not chils_available():
        raise UsageError("--chils needs the chils package: pip install 'graphtransfer[chils]'")
    return chils_mis
