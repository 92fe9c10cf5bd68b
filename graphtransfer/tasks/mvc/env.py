"""Minimum vertex cover, one node per step (a node-choice task with masks), and its weighted form.

Each step adds one node to the cover; the reward is ``-1 / num_nodes`` per node, so an episode
returns minus the cover's size as a fraction of the graph. The episode ends when every edge has
an endpoint in the cover. Valid nodes are those outside the cover with an uncovered edge; the
rest (and padding) are masked through :meth:`MVCEnv.action_masks`, the convention of
sb3-contrib's ``MaskablePPO``.

:class:`WeightedMVCEnv` (task ``mvc-weighted``) minimises the cover's total node weight instead,
with the weights of :func:`graphtransfer.graphs.weights.node_weights` as node features.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from gymnasium import spaces

from graphtransfer.envs.base import GraphEnv, Graphs, as_graphs
from graphtransfer.envs.protocol import Head
from graphtransfer.graphs import Graph
from graphtransfer.graphs.graph import sorted_unique
from graphtransfer.graphs.weights import MAX_WEIGHT, node_weights
from graphtransfer.tasks.mis.chils import chils_cover_solver
from graphtransfer.tasks.mis.kernel import mvc_kernel
from graphtransfer.tasks.mis.local_search import local_search_vertex_cover
from graphtransfer.tasks.mis.near_bipartite import near_bipartite_set
from graphtransfer.tasks.mis.search import search_cover
from graphtransfer.tasks.mvc.baselines import (
    exact_milp,
    exact_milp_weighted,
    greedy_max_degree,
    greedy_weight_degree,
    maximal_matching_2approx,
)
from graphtransfer.tasks.mvc.batched import MVCBatch, WeightedMVCBatch
from graphtransfer.tasks.mvc.step import cover_features, weighted_cover_features
from graphtransfer.tasks.mvc.weighted_search import improve_weighted_cover, search_light_cover, search_weighted_cover

if TYPE_CHECKING:
    from graphtransfer.envs.base import KernelMethod


class MVCEnv(GraphEnv):
    """The observation shows the residual graph: the uncovered edges. Node features,
    ``(num_nodes, 4)``: in the cover, priority ``log(1 + uncovered degree) + 0.3 u``, the
    uniform draw ``u`` (fresh each step, zero for nodes without uncovered edges), and valid.

    ``horizon`` defaults to the largest graph's node count, which no episode can exceed.
    """

    num_features = 4
    head = Head.NODE_CHOICE
    sense = "min"
    objective_name = "vertex cover size"
    renumberable = True
    kernel: ClassVar[KernelMethod | None] = staticmethod(mvc_kernel)
    covers = True  # the local-max decoding picks who stays out of the cover (graphtransfer.solve.inference)
    # what the task declares (graphtransfer.envs.protocol.TaskMembers)
    improve: ClassVar[Callable | None] = staticmethod(local_search_vertex_cover)
    search: ClassVar[Callable | None] = staticmethod(search_cover)
    rival: ClassVar[Callable | None] = staticmethod(near_bipartite_set)
    baselines: ClassVar[dict] = {
        "greedy-max-degree": greedy_max_degree,
        "matching-2approx": maximal_matching_2approx,
        "local-search": local_search_vertex_cover,
    }
    exact: ClassVar[dict] = {"milp": exact_milp}
    decision_labels: ClassVar[dict] = {0: "not in the cover", 1: "in the vertex cover"}

    batched = MVCBatch  # training steps its envs as one disjoint union

    def __init__(self, graphs: Graphs, horizon: int | None = None):
        graphs = as_graphs(graphs)
        super().__init__(graphs, horizon or max(g.num_nodes for g in graphs))
        self.action_space = spaces.Discrete(self.max_nodes)

    def _start(self) -> None:
        self.in_cover = np.zeros(self.graph.num_nodes, dtype=bool)

    def _edges(self) -> np.ndarray:
        src, dst = self.graph.edge_index
        return self.graph.edge_index[:, ~self.in_cover[src] & ~self.in_cover[dst]]

    def active_nodes(self) -> np.ndarray:
        return self._uncovered_degree > 0

    def residual_degree(self) -> np.ndarray:
        """Each node's uncovered edges as the last observation counted them."""
        return self._uncovered_degree

    def action_masks(self) -> np.ndarray:
        """``(max_nodes,)`` bool: True for the nodes that may be chosen now."""
        mask = np.zeros(self.max_nodes, dtype=bool)
        mask[: self.graph.num_nodes] = self.active_nodes()
        return mask

    def _features(self, edges: np.ndarray) -> np.ndarray:
        # Kept for active_nodes() and _finished(), which are asked about this same state.
        self._uncovered_degree = degree = np.bincount(edges[0], minlength=self.graph.num_nodes)
        return cover_features(self.in_cover, degree, self.np_random.random(self.graph.num_nodes))

    def _apply(self, action) -> float:
        return self._add(np.atleast_1d(action))

    def step_many(self, nodes: np.ndarray):
        """One step that adds several nodes to the cover at once; inference commits the
        top-scoring valid nodes of a pass this way. Returns what :meth:`step` returns."""
        return self._transition(self._add(np.asarray(nodes)))

    def _add(self, nodes: np.ndarray) -> float:
        nodes = nodes[nodes < self.graph.num_nodes]  # padding slots are no nodes
        before = int(self.in_cover.sum())
        self.in_cover[nodes] = True
        return -(int(self.in_cover.sum()) - before) / self.graph.num_nodes

    def _finished(self) -> bool:
        return not self._uncovered_degree.any()

    def solution(self) -> np.ndarray:
        return self.in_cover.copy()

    @staticmethod
    def objective(graph: Graph, solution: np.ndarray) -> float:
        """The cover's size (smaller is better)."""
        return float(solution.sum())

    @staticmethod
    def feasible(graph: Graph, solution: np.ndarray) -> bool:
        return is_vertex_cover(graph, solution)


def is_vertex_cover(graph: Graph, chosen: np.ndarray) -> bool:
    """Every edge has at least one endpoint chosen."""
    src, dst = graph.edge_index
    return bool((chosen[src] | chosen[dst]).all())


class WeightedMVCEnv(MVCEnv):
    """Minimum-weight vertex cover: as :class:`MVCEnv`, but a node costs its weight.

    The reward of a step is minus the weight it adds over the graph's total weight, so an episode
    returns minus the cover's weight as a fraction of the total. Node features, ``(num_nodes,
    6)``: MVCEnv's four, then the weight over :data:`MAX_WEIGHT` and ``log(1 + uncovered degree /
    weight)``, the greedy rule's ratio (both independent of the graph's size).
    """

    num_features = 6
    objective_name = "vertex cover weight"
    reads_weights = ("node",)
    renumberable = False  # a node's weight follows from its number
    batched = WeightedMVCBatch  # its own: the unweighted batch would skip the weights

    kernel = None  # the kernel's rules keep the size of a smallest cover, not its weight
    rival = None  # the near-bipartite rival keeps a cover's size, not its weight
    improve = staticmethod(improve_weighted_cover)
    search = staticmethod(search_weighted_cover)
    baselines: ClassVar[dict] = {
        "greedy-weight-degree": greedy_weight_degree,
        "greedy-max-degree": greedy_max_degree,
        "local-search": search_light_cover,
    }
    exact: ClassVar[dict] = {"milp": exact_milp_weighted}
    optional_baselines: ClassVar[dict] = {"chils": chils_cover_solver}
    standing = (
        "alone 1.5-3% heavier than CHILS's cover (eval --chils); with its search (--polish) level with CHILS at equal "
        "seconds on 10^3 nodes, 0-0.12% heavier at 10^4-10^5, 0.5% lighter on dense graphs; figures: docs/guide/tasks.md"
    )
    decision_labels: ClassVar[dict] = {}

    def _start(self) -> None:
        super()._start()
        self.weights = node_weights(self.graph)
        self.total_weight = float(self.weights.sum())
        # a file's own weights, of any scale, are shown rescaled to the hashed weights' 1..MAX_WEIGHT
        top = float(self.weights.max()) if self.weights.size else 1.0
        self.shown = self.weights if self.graph.node_weight is None else self.weights * (MAX_WEIGHT / max(top, 1e-12))

    def _features(self, edges: np.ndarray) -> np.ndarray:
        return weighted_cover_features(super()._features(edges), self._uncovered_degree, self.shown)

    def _add(self, nodes: np.ndarray) -> float:
        nodes = sorted_unique(nodes[nodes < self.graph.num_nodes])  # padding slots are no nodes
        added = nodes[~self.in_cover[nodes]]
        self.in_cover[added] = True
        return -float(self.weights[added].sum()) / max(self.total_weight, 1.0)

    @staticmethod
    def objective(graph: Graph, solution: np.ndarray) -> float:
        """The cover's total weight (smaller is better)."""
        return float(node_weights(graph)[solution].sum())
