"""Maximum-weight matching, every edge acts at once (skip / take / wait).

Edge weights come from :func:`graphtransfer.graphs.edge_weights` (the graph file's own where it
has them, else seeded by the graph alone, so weightless files such as the sample graphs get them
too) and are the observation's ``edge_attr``.
An undirected edge is *live* while both its endpoints are unmatched and it was not skipped; the
observation shows the live edges, both directions, as the residual graph. Rules of one step:

1. every live directed edge picks ``SKIP``, ``TAKE`` or ``WAIT``; an undirected edge is taken
   when either direction picks ``TAKE``, skipped when both pick ``SKIP``;
2. a taken edge joins the matching when it has the highest *priority* among the taken edges at
   both its endpoints (ties: the lower edge id), so the taken edge of highest priority always
   joins and no node is matched twice;
3. skipped edges leave the graph; so do the live edges at the newly matched nodes.

The priority is the edge's *gain* (``priority="gain"``, the default) or its weight
(``priority="weight"``). The gain is the weight less what the endpoints could get elsewhere:
every step the env runs :data:`PRICE_ROUNDS` rounds of max-product message passing on the live
edges (:func:`gains`), which prices each endpoint by the best it could get from another edge.
Gains are also edge features, with whether each is the highest at each endpoint, beside greedy's
signal (the heaviest edge at both ends).

Reward: the weight joining / the graph's node count, so an episode returns the matching's weight
per node. Taking every edge every step is exactly greedy-by-gain
(:func:`graphtransfer.tasks.matching.baselines.greedy_by_gain`), or greedy-by-weight under the weight
priority: that is what the rule does. What the policy decides is which edges to take now, which
to wait on and which to give up (skip).

Why edge-wise and not edge choice as this task's head: one edge per pass would take one pass
per matched edge, about 100,000 passes on the 250k-node graph; every edge at once settles it in
a few dozen (``bench/path_matching_quality.py``).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from gymnasium import spaces

from graphtransfer.envs.base import GraphEnv, Graphs
from graphtransfer.envs.protocol import Head
from graphtransfer.graphs import Graph, edge_weights
from graphtransfer.graphs.graph import edge_lookup
from graphtransfer.tasks.matching.baselines import exact_blossom, exact_milp, greedy_by_gain, greedy_by_weight, optimum, path_growing
from graphtransfer.tasks.matching.batched import MatchingBatch
from graphtransfer.tasks.matching.rules import is_matching, twin_edges
from graphtransfer.tasks.matching.search import improve_matching, search_matching
from graphtransfer.tasks.matching.step import WAIT, live_prices, match_step, matching_edge_features, matching_features, weight_scale

PRIORITIES = ("gain", "weight")


class MatchingEnv(GraphEnv):
    """Node features, ``(num_nodes, 3)``: matched, ``log(1 + live degree)``, and the heaviest
    live weight at the node. Edge features, ``(E, 6)``: the weight, whether it is the heaviest
    live weight at its source and at its destination (an edge heaviest at both ends is one greedy
    would take now), its gain (:func:`gains`), and whether that gain is the highest among the
    live edges at its source and at its destination. Weights and gains are in units of the
    graph's mean edge weight, so that a file's own weights of any scale read alike."""

    num_features = 3
    num_edge_features = 6
    num_actions = 3
    head = Head.EDGE_WISE
    reads_weights = ("edge",)
    objective_name = "matching weight"
    inference_horizon = 256  # passes allowed at inference, where graphs are far larger
    solution_header = "node,mate"
    # what the task declares (graphtransfer.envs.protocol.TaskMembers)
    baselines: ClassVar[dict] = {
        "greedy-by-weight": greedy_by_weight,
        "greedy-by-gain": greedy_by_gain,
        "path-growing": path_growing,
        "optimum": optimum,
    }
    exact: ClassVar[dict] = {"blossom": exact_blossom, "milp": exact_milp}
    improve = staticmethod(improve_matching)
    search = staticmethod(search_matching)
    standing = (
        "alone 0.93-0.95x the optimum (eval's optimum baseline); with its search (--polish) 0.99x in the optimum's seconds; "
        "figures: docs/guide/tasks.md"
    )

    batched = MatchingBatch  # training steps its envs as one disjoint union

    def __init__(self, graphs: Graphs, horizon: int = 32, priority: str = "gain"):
        if priority not in PRIORITIES:
            raise ValueError(f"priority={priority!r}; choose one of {', '.join(PRIORITIES)}")
        super().__init__(graphs, horizon)
        self.priority = priority
        self.action_space = spaces.MultiDiscrete(np.full(self.max_edges, self.num_actions))

    def _start(self) -> None:
        self.mate = np.full(self.graph.num_nodes, -1, dtype=np.int64)
        self.weights, self.twin = edge_weights(self.graph), twin_edges(self.graph)
        self.scale = float(self.weights.mean()) if self.weights.size else 1.0
        self.live = np.arange(self.graph.edge_index.shape[1])  # ids of the live directed edges, in graph order
        self._heaviest_live()

    def _heaviest_live(self) -> None:
        """The heaviest live weight and the best live gain at every node, and every live edge's gain, for the features."""
        graph = self.graph
        self.heaviest, self.gain, self.best_gain = live_prices(graph.edge_index, graph.num_nodes, self.weights, self.twin, self.live)

    def _edges(self) -> np.ndarray:
        return self.graph.edge_index[:, self.live]

    def active_nodes(self) -> np.ndarray:
        active = np.zeros(self.graph.num_nodes, dtype=bool)
        active[self.graph.edge_index[0, self.live]] = True
        return active

    def _features(self, edges: np.ndarray) -> np.ndarray:
        return matching_features(edges, self.mate, self.heaviest, self.scale)

    def _edge_features(self, edges: np.ndarray) -> np.ndarray:
        weight = self.weights[self.live]
        return matching_edge_features(edges, weight, self.gain, self.heaviest, self.best_gain, self.scale, weight_scale(self.scale, weight))

    def _apply(self, action: np.ndarray) -> float:
        picked = np.full(self.graph.edge_index.shape[1], WAIT, dtype=np.int64)
        picked[self.live] = np.asarray(action)[: self.live.size]
        priority = self.weights
        if self.priority == "gain":
            priority = np.full(self.weights.size, -np.inf)
            priority[self.live] = self.gain
        joining, self.live = match_step(self.graph.edge_index, priority, self.twin, self.live, picked, self.mate)
        self._heaviest_live()
        return float(self.weights[joining].sum()) / 2 / self.graph.num_nodes  # both directions of each edge joined

    def _finished(self) -> bool:
        return self.live.size == 0

    def solution(self) -> np.ndarray:
        """``(num_nodes,)`` int64, each node's mate (its position), -1 where unmatched."""
        return self.mate.copy()

    @staticmethod
    def objective(graph: Graph, solution: np.ndarray) -> float:
        """The matching's total weight (larger is better)."""
        matched = np.flatnonzero(solution > np.arange(solution.size))  # each pair once, from its lower end
        columns = edge_lookup(graph, matched, solution[matched])
        if (columns < 0).any():
            return float("nan")
        return float(np.asarray(edge_weights(graph))[columns].astype(np.float64).sum())

    @staticmethod
    def feasible(graph: Graph, solution: np.ndarray) -> bool:
        return is_matching(graph, solution)
