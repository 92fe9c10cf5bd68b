"""Classical baselines per task, by name: each takes a graph and returns a solution that the
task's ``objective`` scores."""

from collections.abc import Callable

import numpy as np

from graphtransfer.baselines import epidemic
from graphtransfer.baselines.mis import greedy_min_degree
from graphtransfer.graphs import Graph

BASELINES: dict[str, dict[str, Callable[[Graph], np.ndarray]]] = {
    "mis": {"greedy-min-degree": greedy_min_degree},
    "epidemic": {"never": epidemic.never, "always-lockdown": epidemic.always_lockdown, "threshold-2%": epidemic.threshold},
}

__all__ = ["BASELINES", "greedy_min_degree"]
