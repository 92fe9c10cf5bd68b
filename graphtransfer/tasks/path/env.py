"""Routing from a source to a target by choosing neighbours: a node choice whose mask is the
neighbourhood of the current node (the "neighbours as actions" pattern, docs/guide/your-env.md).

Edge lengths are :func:`graphtransfer.graphs.edge_weights` (the graph file's own weights where
it has them), shown as the observation's ``edge_attr``. What the policy decides and what the
rules guarantee:

- **The policy** picks the next node among the current node's allowed neighbours, one per step.
- **The budget rule** makes every route arrive: at reset a breadth-first search from the target
  gives every node its hops to the target, and the route gets a budget of
  :data:`DETOUR` × the source's hops (+ 2) steps. A neighbour is allowed when it is unvisited
  and the target is still within the budget from it; when none is, the neighbours one hop
  closer to the target are allowed (visited or not). One hop closer always keeps the budget,
  so the route reaches the target within the budget, on any graph and at any size.
- **Loops cut**: a route that comes back to a node has the loop cut out of the answer.

The observation is the ball of :data:`BALL_RADIUS` hops around the current node (a GNN of up to
3 layers sees no farther from the current node's neighbours), so one step costs the same on a
250,000-node graph as on a 50-node one, and every feature is relative to the current node: its
meaning does not change with the graph's size. With ``guide="distance"`` (the default) the env
also shows each node's shortest weighted distance to the target (one Dijkstra from the target at
reset), relative to the current node's: a router that knows distances to the target, as a
navigation system does; the policy learns to trade it against the edge it pays now. With
``guide="hops"`` it sees hops only and must find short routes from the lengths around it.

The reward is minus the edge's length over the shortest route's length, so an episode that
reaches the target returns minus the route's length ratio to the shortest (-1 at best), at any
graph size.

Queries: a reset with a seed (what ``predict`` and ``eval`` do) routes the env's ``query``
(positions ``(source, target)``, e.g. from :func:`query_positions` of the ids a user gave), else
the graph's own query, :func:`route_query`, the one the Dijkstra baseline answers; an unseeded
reset (training, after the first episode) draws a random source and a target reachable from it.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from gymnasium import spaces
from scipy.sparse import csr_array
from scipy.sparse.csgraph import breadth_first_order, dijkstra, shortest_path

from graphtransfer.envs.base import GraphEnv, Graphs
from graphtransfer.envs.protocol import Head
from graphtransfer.errors import GraphInputError, UsageError
from graphtransfer.graphs import Graph, edge_weights
from graphtransfer.graphs.graph import edge_lookup
from graphtransfer.tasks.path.baselines import dijkstra_route
from graphtransfer.tasks.path.batched import PathBatch
from graphtransfer.tasks.path.query import route_query
from graphtransfer.tasks.path.step import BALL_RADIUS, OFF_MASK_REWARD, ball, relative, route_features

DETOUR = 2.0
"""a route may take this many times the source's hops to the target (+ 2) steps; Dijkstra's
routes took 1.5 times the fewest hops on random geometric graphs of 10^4 to 2.5 × 10^5 nodes"""
GUIDES = ("distance", "hops")


class PathEnv(GraphEnv):
    """Node features, ``(num_nodes, 7)``, nodes outside the ball all zero: current, target,
    visited, the hop step to the target relative to the current node (-1 closer, 0 as far, +1
    farther), the length of the edge from the current node over the graph's mean edge length (0
    for other nodes), allowed next step, and the guide's potential relative to the current node
    (weighted distance to the target over the mean edge length, or hops; clipped to ± 4).
    Edge features ``(E, 1)``: the length over the graph's mean edge length.
    """

    num_features = 7
    num_edge_features = 1
    head = Head.NODE_CHOICE
    reads_weights = ("edge",)
    sense = "min"
    objective_name = "route length"
    inference_horizon = 2**31 - 1  # routes end by the budget rule, within DETOUR x the hops (+2) passes
    # over hundreds of moves a few sampled detours add up: on 10k-250k-node graphs the most likely
    # moves routed closer to Dijkstra than sampled ones (bench/path_matching_quality.py)
    inference_deterministic = True
    solution_header = "step,node"
    # what the task declares (graphtransfer.envs.protocol.TaskMembers)
    baselines: ClassVar[dict] = {"dijkstra": dijkstra_route}
    standing = (
        "Dijkstra is exact and faster: the policy is a learned router "
        "for envs where Dijkstra does not apply (lengths unknown ahead, a local view)"
    )
    takes_query = True

    def __init__(self, graphs: Graphs, horizon: int = 64, guide: str = "distance", query: tuple[int, int] | None = None):
        if guide not in GUIDES:
            raise ValueError(f"guide={guide!r}; choose one of {', '.join(GUIDES)}")
        super().__init__(graphs, horizon)
        for graph in self.graphs:
            if graph.num_edges == 0:
                raise GraphInputError(f"graph {graph.name}: has no edges, so no route to find; the path task needs a graph with edges")
        self.guide = guide
        self.query = None if query is None else (int(query[0]), int(query[1]))
        self.action_space = spaces.Discrete(self.max_nodes)

    batched = PathBatch  # training steps its envs as one disjoint union

    def begin_episode(self, *, seed: int | None = None, options: dict | None = None) -> None:
        """:meth:`GraphEnv.begin_episode` on the query a seeded reset routes (see the module docstring)."""
        self._canonical = seed is not None
        super().begin_episode(seed=seed, options=options)

    def _start(self) -> None:
        graph = self.graph
        self.weights = edge_weights(graph)
        self.scale = float(self.weights.mean()) if self.weights.size else 1.0
        self.matrix = csr_array((self.weights, (graph.edge_index[0], graph.edge_index[1])), shape=(graph.num_nodes,) * 2)
        self.edge_id = csr_array((np.arange(self.weights.size) + 1, (graph.edge_index[0], graph.edge_index[1])), shape=self.matrix.shape)
        self.source, self.target = self._query_of(graph) if self._canonical else self._random_query()
        self.hops = shortest_path(self.matrix, unweighted=True, indices=self.target)
        self.distance = dijkstra(self.matrix, indices=self.target)
        self.shortest = float(self.distance[self.source])
        self.budget = int(DETOUR * self.hops[self.source]) + 2
        self.current, self.route = self.source, [self.source]
        self.visited = np.zeros(graph.num_nodes, dtype=bool)
        self.visited[self.source] = True
        self._look_around()

    def _query_of(self, graph: Graph) -> tuple[int, int]:
        return self.query if self.query is not None else route_query(graph)

    def _random_query(self) -> tuple[int, int]:
        """A random source with edges and a random other node reachable from it."""
        degree = self.graph.degrees()
        source = int(self.np_random.choice(np.flatnonzero(degree > 0)))
        reachable = breadth_first_order(self.matrix, source, return_predecessors=False)
        return source, int(self.np_random.choice(reachable[1:]))

    def _look_around(self) -> None:
        """The ball around the current node and its edges, and the allowed next steps."""
        self.ball = ball(self.matrix, self.current, BALL_RADIUS)
        inside = np.zeros(self.graph.num_nodes, dtype=bool)
        inside[self.ball] = True
        rows = self.edge_id[self.ball]  # (|ball|, N): the ball's edges, row by row
        ids = rows.data - 1
        self.ball_edges = np.sort(ids[inside[self.graph.edge_index[1, ids]]])
        self.mask = np.zeros(self.max_nodes, dtype=bool)
        self.mask[self._allowed()] = True

    def _neighbours(self) -> tuple[np.ndarray, np.ndarray]:
        """The current node's neighbours and the lengths of the edges to them."""
        row = slice(self.matrix.indptr[self.current], self.matrix.indptr[self.current + 1])
        return self.matrix.indices[row], self.matrix.data[row]

    def _allowed(self) -> np.ndarray:
        """Unvisited neighbours from which the target is within the budget; else the neighbours
        one hop closer to the target."""
        neighbours, _ = self._neighbours()
        left = self.budget - len(self.route)  # steps left after this one
        fresh = neighbours[~self.visited[neighbours] & (self.hops[neighbours] <= left)]
        return fresh if fresh.size else neighbours[self.hops[neighbours] == self.hops[self.current] - 1]

    def action_masks(self) -> np.ndarray:
        """``(max_nodes,)`` bool: the allowed next steps (see the module docstring's budget rule)."""
        return self.mask.copy()

    def active_nodes(self) -> np.ndarray:
        active = np.zeros(self.graph.num_nodes, dtype=bool)
        active[self.ball] = True
        return active

    def _edges(self) -> np.ndarray:
        return self.graph.edge_index[:, self.ball_edges]

    def _features(self, edges: np.ndarray) -> np.ndarray:
        near = self.ball
        if self.guide == "distance":
            potential = relative(self.distance, near, self.current) / self.scale
        else:
            potential = relative(self.hops, near, self.current)
        neighbours, lengths = self._neighbours()
        return route_features(
            self.graph.num_nodes,
            ends=(self.current, self.target),
            near=near,
            centre=self.current,
            visited=self.visited,
            hops=self.hops,
            mask=self.mask,
            steps=(neighbours, lengths / self.scale),
            potential=potential,
        )

    def _edge_features(self, edges: np.ndarray) -> np.ndarray:
        return (self.weights[self.ball_edges] / self.scale)[:, None]

    def _apply(self, action) -> float:
        node = int(action)
        neighbours, lengths = self._neighbours()
        hit = np.flatnonzero(neighbours == node)
        if hit.size == 0 or not self.mask[node]:
            return OFF_MASK_REWARD  # no move: the budget counts the route's nodes, so every route still arrives
        self.current = node
        self.route.append(node)
        self.visited[node] = True
        if node != self.target:
            self._look_around()
        return -float(lengths[hit[0]]) / self.shortest

    def _finished(self) -> bool:
        return self.current == self.target

    def solution(self) -> np.ndarray:
        """``(steps + 1, 2)`` int64: the route with its loops cut out, one ``step, node`` row per
        node from the source."""
        nodes = without_loops(self.route)
        return np.column_stack([np.arange(nodes.size), nodes]).astype(np.int64)

    @staticmethod
    def objective(graph: Graph, solution: np.ndarray) -> float:
        """The route's length (smaller is better)."""
        return route_length(graph, np.asarray(solution)[:, 1])

    def feasible(self, graph: Graph, solution: np.ndarray) -> bool:
        """The route walks along edges from the query's source to its target (the env's
        ``query``, else the graph's own): bound to the env, since the query is the env's."""
        return is_route(graph, np.asarray(solution)[:, 1], *self._query_of(graph))


def without_loops(route: list[int]) -> np.ndarray:
    """``route`` with every loop cut out: when a node comes back, the steps since its first
    visit go. ``(k,)`` int64."""
    kept: list[int] = []
    position: dict[int, int] = {}
    for node in route:
        if node in position:
            for dropped in kept[position[node] + 1 :]:
                del position[dropped]
            del kept[position[node] + 1 :]
        else:
            position[node] = len(kept)
            kept.append(node)
    return np.array(kept, dtype=np.int64)


def route_length(graph: Graph, nodes: np.ndarray) -> float:
    """The summed length of the edges the route ``nodes`` walks (NaN where a step is no edge)."""
    columns = edge_lookup(graph, nodes[:-1], nodes[1:])
    if (columns < 0).any():
        return float("nan")
    return float(edge_weights(graph)[columns].astype(np.float64).sum())


def query_positions(graph: Graph, source: str, target: str) -> tuple[int, int]:
    """The positions of the nodes a user named ``source`` and ``target`` in the graph's own ids
    (as the file writes them), checked: both exist, they differ, and the target can be reached.

    Raises:
        UsageError: an unknown id, the same node twice, or a target in another component.
    """
    ids = graph.ids()
    found = []
    for option, name in (("--source", source), ("--target", target)):
        matches = np.flatnonzero(ids.astype(str) == str(name).strip())
        if matches.size == 0:
            raise UsageError(
                f"{option} {name!r}: graph {graph.name or '(unnamed)'} has no node with that id; its ids are {graph.describe_ids()}"
            )
        found.append(int(matches[0]))
    if found[0] == found[1]:
        raise UsageError(f"--source and --target are both node {source!r}; a route needs two different nodes")
    matrix = csr_array((np.ones(graph.edge_index.shape[1]), (graph.edge_index[0], graph.edge_index[1])), shape=(graph.num_nodes,) * 2)
    if not np.isfinite(shortest_path(matrix, unweighted=True, indices=found[0])[found[1]]):
        raise UsageError(f"--target {target!r} cannot be reached from --source {source!r}: they lie in different components of the graph")
    return found[0], found[1]


def is_route(graph: Graph, nodes: np.ndarray, source: int, target: int) -> bool:
    """``nodes`` starts at ``source``, ends at ``target`` and each step follows an edge."""
    if nodes.size == 0 or nodes[0] != source or nodes[-1] != target:
        return False
    return bool((edge_lookup(graph, nodes[:-1], nodes[1:]) >= 0).all())
