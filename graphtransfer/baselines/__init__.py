"""Classical baselines per task, by name: each takes a graph and returns a solution that the
task's ``objective`` scores.

:data:`BASELINES` holds the fast solvers (and, for epidemic control, fixed rules), safe on graphs
of a million nodes; evaluation runs all of them. The local searches take a ``time_budget`` in
seconds (default :data:`~graphtransfer.baselines.local_search.DEFAULT_TIME_BUDGET`); bind another
with ``functools.partial``. :data:`EXACT` holds the exponential-time solvers
for graphs of at most a few hundred nodes, which return an :class:`ExactSolution` and refuse
larger graphs.
"""

from collections.abc import Callable

import numpy as np

from graphtransfer.baselines import epidemic, local_search, matching, maxcut, mis, mvc, path
from graphtransfer.baselines.exact import ExactSolution
from graphtransfer.baselines.mis import greedy_min_degree
from graphtransfer.graphs import Graph

BASELINES: dict[str, dict[str, Callable[[Graph], np.ndarray]]] = {
    "mis": {
        "greedy-min-degree": mis.greedy_min_degree,
        "random-greedy": mis.random_order_greedy,
        "local-search": local_search.local_search,
    },
    "mvc": {
        "greedy-max-degree": mvc.greedy_max_degree,
        "matching-2approx": mvc.maximal_matching_2approx,
        "local-search": local_search.local_search_vertex_cover,
    },
    "mvc-weighted": {"greedy-weight-degree": mvc.greedy_weight_degree, "greedy-max-degree": mvc.greedy_max_degree},
    "maxcut": {"one-flip": maxcut.greedy_one_flip, "random-cut": maxcut.random_cut},
    "epidemic": {"threshold-2%": epidemic.threshold, "never": epidemic.never, "always-lockdown": epidemic.always_lockdown},
    "matching": {
        "greedy-by-weight": matching.greedy_by_weight,
        "greedy-by-gain": matching.greedy_by_gain,
        "path-growing": matching.path_growing,
    },
    "path": {"dijkstra": path.dijkstra_route},
}

EXACT: dict[str, dict[str, Callable[[Graph], ExactSolution]]] = {
    "mis": {"milp": mis.exact_milp},
    "mvc": {"milp": mvc.exact_milp},
    "mvc-weighted": {"milp": mvc.exact_milp_weighted},
    "maxcut": {"brute-force": maxcut.exact},
    "matching": {"blossom": matching.exact_blossom},
}

__all__ = ["BASELINES", "EXACT", "ExactSolution", "greedy_min_degree"]
