"""Classical baselines per task, by name."""

from collections.abc import Callable

import numpy as np

from graphtransfer.baselines.mis import greedy_min_degree
from graphtransfer.graphs import Graph

BASELINES: dict[str, dict[str, Callable[[Graph], np.ndarray]]] = {"mis": {"greedy-min-degree": greedy_min_degree}}

__all__ = ["BASELINES", "greedy_min_degree"]
