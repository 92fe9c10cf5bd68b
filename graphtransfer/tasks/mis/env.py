"""Maximum independent set, every node acts at once (exclude / include / defer).

Rules of one step, all vectorized over nodes and edges:

1. every undecided node picks ``EXCLUDE``, ``INCLUDE`` or ``DEFER``;
2. two adjacent nodes that both pick ``INCLUDE`` are rolled back to undecided;
3. the remaining includes join the set and their undecided neighbours become excluded;
4. nodes that picked ``EXCLUDE`` and are still undecided become excluded.

Reward: newly included nodes / the graph's node count, so a whole episode returns the set's
size as a fraction of the graph and the scale does not grow with graph size.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from gymnasium import spaces

from graphtransfer.envs.base import GraphEnv, Graphs
from graphtransfer.envs.protocol import Head
from graphtransfer.graphs import Graph
from graphtransfer.graphs.graph import edges_by_destination
from graphtransfer.tasks.mis.baselines import exact_milp, greedy_min_degree, random_order_greedy
from graphtransfer.tasks.mis.chils import chils_solver
from graphtransfer.tasks.mis.completion import finish_independent_set
from graphtransfer.tasks.mis.constants import DEFER, EXCLUDE, IN_SET, INCLUDE, NUM_FEATURES, OUT, UNDECIDED
from graphtransfer.tasks.mis.domination import closes_wedges, dominated, pendant_dominated
from graphtransfer.tasks.mis.features import caro_wei_cost, node_features
from graphtransfer.tasks.mis.kernel import mis_kernel
from graphtransfer.tasks.mis.local_search import local_search, polish_independent_set
from graphtransfer.tasks.mis.near_bipartite import near_bipartite_set
from graphtransfer.tasks.mis.parts import MIS_PARTS
from graphtransfer.tasks.mis.search import search_set, teacher_set

if TYPE_CHECKING:
    from graphtransfer.envs.base import KernelMethod


@dataclass(frozen=True)
class DominationCheck:
    """An episode's last domination check (:func:`checked_reduction_actions`)."""

    degree: np.ndarray
    """``(N,)`` int64 over the episode graph's nodes: each node's residual degree then (the nodes undecided then)"""
    leaving: np.ndarray
    """the nodes it found dominated, which the decoding leaves out: all gone before the next check can trust it"""


class MISEnv(GraphEnv):
    """The observation shows the residual graph: the edges between undecided nodes. Decided
    nodes can never matter again, so this is the whole state of the game, and inference can
    drop them (see :meth:`active_nodes`).

    Node features, ``(num_nodes, 6)``: one-hot status (undecided / in set / excluded), a
    priority ``log(1 + undecided-neighbour count) + 0.3 u``, the uniform draw ``u`` itself,
    fresh every step, and the log of the node's Caro-Wei cost (:func:`caro_wei_cost`); the last
    three are zero for decided nodes.

    The jitter ``0.3 u`` makes "my priority is the lowest among my undecided neighbours" a
    single comparison the GNN can learn with max aggregation, and it separates adjacent nodes
    that look alike, which would otherwise both include and roll back again and again.
    Trained for 30k steps, a policy that sees the plain degree reached 0.95 of greedy on
    2,000-node graphs; with the jittered priority it reached 0.99.

    The Caro-Wei cost does not change scale with density (it is about 1 on a regular graph of any
    degree), while the degree priority does: on a graph of average degree 128 the degrees of
    neighbours differ by less than the jitter, so a policy trained on graphs of degree 4-6 saw
    little but the jitter there. With it, the `make demo` policy went from 1.008 to 1.016 of greedy
    on the mean of 13 graphs of 5,000 nodes of average degree 6-128, and from 0.99-1.01 to 1.00-1.03
    on the Erdős–Rényi graphs of degree 64 and 128 (``bench/transfer_quality.py``)."""

    num_features = NUM_FEATURES
    num_actions = 3
    head = Head.NODE_WISE
    objective_name = "independent set size"
    inference_horizon = 256  # passes allowed at inference, where graphs are far larger
    commit_action, defer_action = INCLUDE, DEFER  # what a commit fraction below 1 lets the surest nodes do, and the rest
    renumberable = True
    kernel: ClassVar[KernelMethod | None] = staticmethod(mis_kernel)
    # what the task declares (graphtransfer.envs.protocol.TaskMembers): a user's env that declares the same gets the same
    finish = staticmethod(finish_independent_set)
    improve = staticmethod(polish_independent_set)
    search = staticmethod(search_set)
    teacher = staticmethod(teacher_set)
    rival = staticmethod(near_bipartite_set)
    baselines: ClassVar[dict] = {"greedy-min-degree": greedy_min_degree, "random-greedy": random_order_greedy, "local-search": local_search}
    exact: ClassVar[dict] = {"milp": exact_milp}
    optional_baselines: ClassVar[dict] = {"chils": chils_solver}
    partitioned_solve = MIS_PARTS
    decision_labels: ClassVar[dict] = {0: "not in the set", 1: "in the independent set"}

    @staticmethod
    def device_passes(*args):
        """The whole episode on the policy's GPU (:func:`graphtransfer.tasks.mis.device.device_passes`)."""
        from graphtransfer.tasks.mis.device import device_passes  # torch loads only where a GPU solve runs

        return device_passes(*args)

    def __init__(self, graphs: Graphs, horizon: int = 32):
        super().__init__(graphs, horizon)
        self.action_space = spaces.MultiDiscrete(np.full(self.max_nodes, self.num_actions))
        self._triangles: dict[int, bool] = {}  # by graph (its id): whether the passes' domination check looks past pendants

    def _start(self) -> None:
        self.status = np.full(self.graph.num_nodes, UNDECIDED, dtype=np.int8)
        self._live: np.ndarray | None = None  # the residual edges, from the first observation on (see _edges)
        self._last_check: DominationCheck | None = None  # the episode's last domination check (see exact_actions)

    def _edges(self) -> np.ndarray:
        """The residual graph's edges, filtered from the last step's (it only shrinks), in the
        episode graph's order by destination: the message passing then needs no sort."""
        undecided = self.status == UNDECIDED
        src, dst = live = self._residual()
        kept = undecided[src] & undecided[dst]
        if not kept.all():  # an episode's first observation keeps every edge: no copy of them
            live = self._live = np.compress(kept, live, axis=1)  # 5x faster than [:, mask] on 2 rows
        return live

    def _residual(self) -> np.ndarray:
        """The residual edges as the last observation showed them; the whole graph's before the first."""
        if self._live is None:
            self._live = by_destination(self.graph)
        return self._live

    def active_nodes(self) -> np.ndarray:
        return self.status == UNDECIDED

    def _features(self, edges: np.ndarray) -> np.ndarray:
        # counted by destination, the order the residual edges come in (both directions are stored): the counts are
        # written in order, 0.10 s against 0.55 s by source at 10^7 nodes of degree 8
        live_degree = self._live_degree = np.bincount(edges[1], minlength=self.graph.num_nodes)
        draw = self.np_random.random(self.graph.num_nodes)
        return node_features(self.status, live_degree, caro_wei_cost(edges, live_degree), draw)

    def residual_degree(self) -> np.ndarray:
        """Each node's undecided neighbours as the last observation counted them (0 for decided nodes)."""
        return self._live_degree

    def _apply(self, action: np.ndarray) -> float:
        # the residual edges are all mis_step needs: clashes and exclusions happen among undecided nodes
        self.status, added = mis_step(self._residual(), self.status, self._node_actions(action))
        return added / self.graph.num_nodes

    def exact_actions(self, edge_index: np.ndarray, num_nodes: int) -> np.ndarray:
        """The residual graph's nodes that some largest set includes or leaves out whatever the
        rest does (:func:`reduction_actions`: isolated nodes join, dominated nodes leave); the
        local-max decoding applies them every pass. Whether domination looks past pendants is
        read once for each graph of the env, from the first residual graph asked about on it
        (:meth:`has_triangles`).

        ``edge_index`` is the residual graph of the episode's undecided nodes, numbered in order
        (``num_nodes`` of them). After the episode's first check, where every node the last check
        found dominated has left since, only the pairs around the nodes that lost a neighbour
        since are checked (:func:`~graphtransfer.tasks.mis.domination.dominated`'s ``touched``): the
        same answer as a check of the whole residual graph, at a fraction of its cost on dense
        geometric graphs, whose passes each decide a few hundred of 10^5 nodes."""
        actions, self._last_check = checked_reduction_actions(
            edge_index, num_nodes, self.status == UNDECIDED, self.has_triangles(edge_index, num_nodes), self._last_check
        )
        return actions

    def has_triangles(self, edge_index: np.ndarray, num_nodes: int) -> bool:
        """Whether the domination check on this episode's graph needs triangles
        (:func:`~graphtransfer.tasks.mis.domination.closes_wedges`), decided on the first call for the
        graph, at an episode's first pass, from ``edge_index`` (both directions: the graph's own
        edges then), and kept for every later pass and episode on it: residual graphs only lose
        edges, and the rollouts of a small graph would each pay the sampling again (18 ms at 1,000
        nodes of degree 200)."""
        key = id(self.graph)
        if key not in self._triangles:
            self._triangles[key] = closes_wedges(edge_index, num_nodes)
        return self._triangles[key]

    def use_graph(self, graph: Graph) -> None:
        """:meth:`GraphEnv.use_graph`, the domination gate (:meth:`has_triangles`) kept from the
        graph the env had where it was read: the new graph is a kernel of its residual graph,
        whose wedges are some of its own, and sampling each kernel again would cost small dense
        graphs, shrunk every few passes, more than their passes."""
        gate = self._triangles.get(id(self.graph))
        super().use_graph(graph)
        self._triangles = {} if gate is None else {id(graph): gate}

    def _finished(self) -> bool:
        return not (self.status == UNDECIDED).any()

    def solution(self) -> np.ndarray:
        """``(num_nodes,)`` bool, the nodes in the set so far."""
        return self.status == IN_SET

    @staticmethod
    def objective(graph: Graph, solution: np.ndarray) -> float:
        """The set's size (larger is better)."""
        return float(solution.sum())

    @staticmethod
    def feasible(graph: Graph, solution: np.ndarray) -> bool:
        return is_independent_set(graph, solution)


_BY_DESTINATION: dict[int, np.ndarray] = {}
BY_DESTINATION_KEPT = 4
"""graphs whose edges by destination are kept: the graphs of an env or two (a solve goes through many kernels of one graph)"""


def by_destination(graph: Graph) -> np.ndarray:
    """``graph.edge_index`` ordered by destination (stably), computed once per graph of the last
    :data:`BY_DESTINATION_KEPT` still alive: ``(2, E)``. An entry goes with its graph (a weak
    reference's callback): a decoding's residual kernels, each a graph of its own and dropped once
    the next is made, would otherwise stay in memory with their edges until pushed out."""
    key = id(graph)
    edges = _BY_DESTINATION.get(key)
    if edges is None:
        while len(_BY_DESTINATION) >= BY_DESTINATION_KEPT:  # the oldest goes
            _BY_DESTINATION.pop(next(iter(_BY_DESTINATION)))
        edges = edges_by_destination(graph.edge_index, graph.num_nodes)  # a residual graph of a solve comes in this order already
        _BY_DESTINATION[key] = edges
        weakref.finalize(graph, _BY_DESTINATION.pop, key, None)  # before another object can take its id
    return edges


def mis_step(edge_index: np.ndarray, status: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, int]:
    """One step of the rules above; returns the new status and how many nodes joined the set.

    Both directions of every edge are stored, so each test reads the flags by destination first
    and an edge's source only where that passed: along the env's edges, ordered by destination,
    the first read runs along the flags (ER, 10^7 nodes: 4.9 s of a solve's 21 passes in a
    profile when every edge's source was looked up)."""
    src, dst = edge_index
    undecided = status == UNDECIDED
    wants_in = undecided & (action == INCLUDE)
    clash = np.zeros_like(wants_in)
    into = np.flatnonzero(wants_in[dst])
    clash[src[into[wants_in[src[into]]]]] = True
    joins = wants_in & ~clash
    status = status.copy()
    status[joins] = IN_SET
    near_new = np.zeros_like(joins)
    near_new[src[joins[dst]]] = True
    status[near_new & (status == UNDECIDED)] = OUT
    status[(action == EXCLUDE) & (status == UNDECIDED)] = OUT
    return status, int(joins.sum())


def is_independent_set(graph: Graph, chosen: np.ndarray) -> bool:
    """No edge has both endpoints chosen."""
    src, dst = graph.edge_index
    return not (chosen[src] & chosen[dst]).any()


def checked_reduction_actions(
    edge_index: np.ndarray, num_nodes: int, undecided: np.ndarray, triangles: bool, last: DominationCheck | None
) -> tuple[np.ndarray, DominationCheck | None]:
    """:func:`reduction_actions` of a residual graph of an episode, and the check to hand the next
    pass: where the ``last`` check's dominated nodes have all left since, only the pairs around
    the nodes that lost a neighbour since are checked (:func:`dominated`'s ``touched``), the same
    answer as a check of the whole residual graph.

    Shapes:
        edge_index: ``(2, E)``, the residual graph of the episode graph's ``undecided`` nodes
        ``(N,)`` bool, numbered in order (``num_nodes`` of them); returns ``(num_nodes,)`` int64.
    """
    undecided_at = np.flatnonzero(undecided)
    degree = np.bincount(edge_index[1], minlength=num_nodes)  # by destination, as MISEnv._features counts
    whole = triangles and undecided_at.size == num_nodes
    usable = whole and last is not None and last.degree.size == undecided.size and not undecided[last.leaving].any()
    touched = degree < last.degree[undecided_at] if usable and last is not None else None
    actions = reduction_actions(edge_index, num_nodes, triangles, touched, degree)
    if not whole:
        return actions, last
    checked = np.zeros(undecided.size, dtype=np.int64) if last is None or last.degree.size != undecided.size else last.degree
    checked[undecided_at] = degree
    return actions, DominationCheck(checked, undecided_at[actions == EXCLUDE])


def reduction_actions(
    edge_index: np.ndarray, num_nodes: int, triangles: bool = True, touched: np.ndarray | None = None, degree: np.ndarray | None = None
) -> np.ndarray:
    """The action of each node of a residual graph that some maximum independent set agrees
    with, :data:`DEFER` where neither rule decides: a node without neighbours ``INCLUDE``, and a
    node ``u`` with a neighbour ``v`` whose closed neighbourhood is inside its own ``EXCLUDE``
    (:func:`dominated`). The neighbour of a pendant node is such a ``u``, so the pendant is left
    alone and joins on the next pass; so are all neighbours of a node whose neighbours form a
    clique. Both rules stay exact on any induced subgraph that keeps the nodes they name, so a
    pass may apply them beside commits of its own that touch no include.

    Including the pendant nodes in the same pass instead gave slightly smaller sets on sparse
    graphs (``bench/default_quality.py``).

    Without ``triangles`` (graphs whose wedges rarely close,
    :func:`~graphtransfer.tasks.mis.domination.closes_wedges`) only pendants dominate
    (:func:`~graphtransfer.tasks.mis.domination.pendant_dominated`): a node's closed neighbourhood holds a
    neighbour's only where that neighbour's other neighbours close triangles with it, so the full
    check would find little more there, at many times the cost.

    ``touched``: with ``triangles``, the nodes that lost a neighbour since an earlier check of the
    same graph whose dominated nodes have all left (:func:`dominated`); ``degree``: the nodes'
    degrees, where the caller has counted them.

    Shapes:
        edge_index: ``(2, E)`` directed edges (both directions) over nodes ``0..num_nodes-1``;
        touched, degree: ``(num_nodes,)``; returns ``(num_nodes,)`` int64.
    """
    if degree is None:
        degree = np.bincount(edge_index[1], minlength=num_nodes)  # by destination, as MISEnv._features counts
    actions = np.full(num_nodes, DEFER, dtype=np.int64)
    actions[dominated(edge_index, degree, touched=touched) if triangles else pendant_dominated(edge_index, degree)] = EXCLUDE
    actions[degree == 0] = INCLUDE
    return actions
