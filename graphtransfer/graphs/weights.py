"""Node weights for weighted tasks (``mvc-weighted``), derived from the graph itself.

Graph files and generators carry no node weights, so a weighted task draws them, the same way
everywhere a graph is seen -- the env, the baselines, the exact solver, ``eval`` -- and on every
machine: integer weights 1 to :data:`MAX_WEIGHT`, uniform, from numpy's ``default_rng`` seeded
with ``(WEIGHT_SEED, num_nodes, num_edges)``. The same graph always gets the same weights; two
graphs of different size get different ones. Integers keep objectives exact (a cover's weight is
a sum of small integers, compared exactly against brute force and the MILP).
"""

from __future__ import annotations

import numpy as np

from graphtransfer.graphs.graph import Graph

MAX_WEIGHT = 10
WEIGHT_SEED = 20_251_124
"""the seed every weighted graph's weights are drawn with, together with its node and edge counts"""


def node_weights(graph: Graph) -> np.ndarray:
    """``(num_nodes,)`` float64 weights in ``1..MAX_WEIGHT``, a function of the graph's size (see the module)."""
    rng = np.random.default_rng((WEIGHT_SEED, graph.num_nodes, graph.num_edges))
    return rng.integers(1, MAX_WEIGHT + 1, size=graph.num_nodes).astype(np.float64)
