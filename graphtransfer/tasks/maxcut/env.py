"""Maximum cut, every node deciding at once whether to switch sides, over a fixed horizon.

The episode starts from a uniformly random cut. Each step every node keeps (0) or flips (1)
its side; the reward is the change in the number of cut edges divided by the graph's edge
count, so an episode returns the improvement over the random start as a fraction of |E|.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from gymnasium import spaces

from graphtransfer.envs.base import GraphEnv, Graphs
from graphtransfer.envs.protocol import Head
from graphtransfer.graphs import Graph
from graphtransfer.tasks.maxcut.baselines import exact, greedy_one_flip, random_cut
from graphtransfer.tasks.maxcut.batched import MaxCutBatch
from graphtransfer.tasks.maxcut.local_search import local_search_cut, polish_cut, search_cut
from graphtransfer.tasks.maxcut.search import tabu_cut
from graphtransfer.tasks.maxcut.step import cut_features, flipped, side_counts


class MaxCutEnv(GraphEnv):
    """Node features, ``(num_nodes, 4)``: side, the gain of flipping alone
    ``(same-side neighbours - other-side neighbours) / degree``, ``log(1 + degree)``, and a fresh
    uniform draw that lets neighbours with equal gains act differently."""

    num_features = 4
    num_actions = 2
    head = Head.NODE_WISE
    objective_name = "cut edges"
    # what the task declares (graphtransfer.envs.protocol.TaskMembers)
    improve = staticmethod(polish_cut)
    search = staticmethod(search_cut)
    baselines: ClassVar[dict] = {"one-flip": greedy_one_flip, "random-cut": random_cut, "tabu": tabu_cut, "local-search": local_search_cut}
    exact: ClassVar[dict] = {"brute-force": exact}
    standing = (
        "cannot compete alone with a tabu search (0.68-0.81x); with its search (--polish) 1.007-1.081x the tabu search at equal "
        "seconds, level with the same search from a random cut; figures: docs/guide/tasks.md"
    )
    decision_labels: ClassVar[dict] = {0: "side 0", 1: "side 1"}
    decision_colours = ("#1f77b4", "#ff7f0e")

    batched = MaxCutBatch  # training steps its envs as one disjoint union

    def __init__(self, graphs: Graphs, horizon: int = 16):
        super().__init__(graphs, horizon)
        self.action_space = spaces.MultiDiscrete(np.full(self.max_nodes, self.num_actions))

    def _start(self) -> None:
        self.side = self.np_random.integers(0, 2, self.graph.num_nodes).astype(np.int8)

    def _features(self, edges: np.ndarray) -> np.ndarray:
        degree, same = side_counts(edges, self.side)
        return cut_features(self.side, degree, same, self.np_random.random(self.graph.num_nodes))

    def _apply(self, action: np.ndarray) -> float:
        before = cut_size(self.graph, self.side)
        self.side = flipped(self.side, self._node_actions(action))
        return (cut_size(self.graph, self.side) - before) / max(self.graph.num_edges, 1)

    def _finished(self) -> bool:
        return False

    def solution(self) -> np.ndarray:
        return self.side.copy()

    @staticmethod
    def objective(graph: Graph, solution: np.ndarray) -> float:
        """Edges whose endpoints are on different sides (larger is better)."""
        return float(cut_size(graph, solution))


def cut_size(graph: Graph, side: np.ndarray) -> int:
    """Number of undirected edges with endpoints on different sides."""
    src, dst = graph.edge_index
    return int((side[src] != side[dst]).sum()) // 2
