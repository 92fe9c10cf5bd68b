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


def chils_mis(graph: Graph, time_budget: float = DEFAULT_CHILS_SECONDS, seed: int = 0) -> np.ndarray:
    """A large independent set found by CHILS in ``time_budget`` seconds (the graph's transfer
    to the library, an edge at a time through ctypes, is not counted in it): ``(num_nodes,)`` bool.

    Raises:
        UsageError: ``chils`` is not installed, or a budget that is not a positive number.
    """
    if not chils_available():
        raise UsageError("the CHILS baseline needs the chils package: pip install 'graphtransfer[chils]'")
    if not (isinstance(time_budget, (int, float)) and math.isfinite(time_budget) and time_budget > 0):
        raise UsageError(f"time_budget={time_budget!r} must be a positive number of seconds, e.g. {DEFAULT_CHILS_SECONDS}")
    from chils import CHILS

    solver = CHILS()
    for _ in range(graph.num_nodes):
        solver.add_vertex(1)
    src, dst = graph.edge_index
    once = src < dst
    for u, v in zip(src[once].tolist(), dst[once].tolist(), strict=True):
        solver.add_edge(u, v)
    solver.run_full(float(time_budget), CHILS_SOLUTIONS, seed)
    return np.fromiter((solver.get_solution_vertex_configuration(v) for v in range(graph.num_nodes)), dtype=bool, count=graph.num_nodes)


def chils_solver():
    """``eval --chils``: CHILS as an extra MIS baseline, after checking it can run."""
    if not chils_available():
        raise UsageError("--chils needs the chils package: pip install 'graphtransfer[chils]'")
    return chils_mis
