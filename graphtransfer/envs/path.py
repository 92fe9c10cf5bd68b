"""Routing from a source to a target by choosing neighbours: a node choice whose mask is the
neighbourhood of the current node (the "neighbours as actions" pattern, docs/guide/your-env.md).

Edge lengths are :func:`graphtransfer.graphs.edge_weights`, shown as the observation's
``edge_attr``. Each step moves from the current node to one of its neighbours not yet visited
(all its neighbours when every one was, so a dead end can be backed out of); the reward is minus
the edge's length over the shortest route's length, so an episode that reaches the target
returns minus the route's length ratio to the shortest (-1 at best), at any graph size. The
episode ends at the target, or at the horizon with the route unfinished.

Queries: a reset with a seed (what ``predict`` and ``eval`` do) routes the graph's own query,
:func:`route_query`, the one the Dijkstra baseline answers; an unseeded reset (training, after
the first episode) draws a random source and a target reachable from it.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from scipy.sparse import csr_array
from scipy.sparse.csgraph import breadth_first_order, dijkstra, shortest_path

from graphtransfer.envs.base import GraphEnv, Graphs
from graphtransfer.envs.protocol import Head
from graphtransfer.errors import GraphInputError
from graphtransfer.graphs import Graph, edge_weights, pair_weights

QUERY_SEED = 0


class PathEnv(GraphEnv):
    """Node features, ``(num_nodes, 6)``: current, target, visited, ``log(1 + hops to the
    target)`` (a breadth-first search from the target, once per episode), the length of the edge
    from the current node (0 for other nodes), and valid next step. Edge features ``(E, 1)``: the length.
    """

    num_features = 6
    num_edge_features = 1
    head = Head.NODE_CHOICE
    sense = "min"
    objective_name = "route length"
    inference_horizon = 200  # passes (one node each) allowed at inference before the route counts as unfinished
    solution_header = "step,node"

    def __init__(self, graphs: Graphs, horizon: int = 64):
        super().__init__(graphs, horizon)
        for graph in self.graphs:
            if graph.num_edges == 0:
                raise GraphInputError(f"graph {graph.name}: has no edges, so no route to find; the path task needs a graph with edges")
        self.action_space = spaces.Discrete(self.max_nodes)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._canonical = seed is not None
        return super().reset(seed=seed, options=options)

    def _start(self) -> None:
        graph = self.graph
        self.weights = edge_weights(graph)
        self.matrix = csr_array((self.weights, (graph.edge_index[0], graph.edge_index[1])), shape=(graph.num_nodes,) * 2)
        self.source, self.target = route_query(graph) if self._canonical else self._random_query()
        self.hops = shortest_path(self.matrix, unweighted=True, indices=self.target)
        self.shortest = float(dijkstra(self.matrix, indices=self.source)[self.target])
        self.current, self.route = self.source, [self.source]
        self.visited = np.zeros(graph.num_nodes, dtype=bool)
        self.visited[self.source] = True

    def _random_query(self) -> tuple[int, int]:
        """A random source with edges and a random other node reachable from it."""
        degree = self.graph.degrees()
        source = int(self.np_random.choice(np.flatnonzero(degree > 0)))
        reachable = breadth_first_order(self.matrix, source, return_predecessors=False)
        return source, int(self.np_random.choice(reachable[1:]))

    def _neighbours(self) -> tuple[np.ndarray, np.ndarray]:
        """The current node's neighbours and the lengths of the edges to them."""
        row = slice(self.matrix.indptr[self.current], self.matrix.indptr[self.current + 1])
        return self.matrix.indices[row], self.matrix.data[row]

    def action_masks(self) -> np.ndarray:
        """``(max_nodes,)`` bool: the unvisited neighbours of the current node (all its neighbours if none is unvisited)."""
        neighbours, _ = self._neighbours()
        fresh = neighbours[~self.visited[neighbours]]
        mask = np.zeros(self.max_nodes, dtype=bool)
        mask[fresh if fresh.size else neighbours] = True
        return mask

    def _features(self, edges: np.ndarray) -> np.ndarray:
        n = self.graph.num_nodes
        features = np.zeros((n, self.num_features), dtype=np.float32)
        features[self.current, 0] = features[self.target, 1] = 1.0
        features[:, 2] = self.visited
        features[:, 3] = np.log1p(np.where(np.isfinite(self.hops), self.hops, 2.0 * n))
        neighbours, lengths = self._neighbours()
        features[neighbours, 4] = lengths
        features[:, 5] = self.action_masks()[:n]
        return features

    def _edge_features(self, edges: np.ndarray) -> np.ndarray:
        return self.weights[:, None]

    def _apply(self, action) -> float:
        node = int(action)
        neighbours, lengths = self._neighbours()
        hit = np.flatnonzero(neighbours == node)
        if hit.size == 0:
            raise ValueError(f"node {node} is not a neighbour of the current node {self.current}; act within action_masks()")
        self.current = node
        self.route.append(node)
        self.visited[node] = True
        return -float(lengths[hit[0]]) / self.shortest

    def _finished(self) -> bool:
        return self.current == self.target

    def solution(self) -> np.ndarray:
        """``(steps + 1, 2)`` int64: the route, one ``step, node`` row per node from the source."""
        return np.column_stack([np.arange(len(self.route)), self.route]).astype(np.int64)

    @staticmethod
    def objective(graph: Graph, solution: np.ndarray) -> float:
        """The route's length (smaller is better)."""
        nodes = np.asarray(solution)[:, 1]
        return float(pair_weights(nodes[:-1], nodes[1:]).astype(np.float64).sum())

    @staticmethod
    def feasible(graph: Graph, solution: np.ndarray) -> bool:
        """The route walks along edges from the graph's query source to its target."""
        return is_route(graph, np.asarray(solution)[:, 1], *route_query(graph))


def route_query(graph: Graph) -> tuple[int, int]:
    """The graph's own query, a function of the graph alone: the source is the first node with
    edges in a permutation seeded by :data:`QUERY_SEED`; the target is the node farthest from it
    in hops (the lowest id among ties), so routes cross the graph."""
    degree = graph.degrees()
    order = np.random.default_rng(QUERY_SEED).permutation(graph.num_nodes)
    source = int(order[np.argmax(degree[order] > 0)])
    matrix = csr_array((np.ones(graph.edge_index.shape[1]), (graph.edge_index[0], graph.edge_index[1])), shape=(graph.num_nodes,) * 2)
    hops = shortest_path(matrix, unweighted=True, indices=source)
    hops[~np.isfinite(hops)] = -1
    return source, int(np.argmax(hops))


def is_route(graph: Graph, nodes: np.ndarray, source: int, target: int) -> bool:
    """``nodes`` starts at ``source``, ends at ``target`` and each step follows an edge."""
    if nodes.size == 0 or nodes[0] != source or nodes[-1] != target:
        return False
    src, dst = graph.edge_index
    keys = np.sort(src * graph.num_nodes + dst)
    steps = nodes[:-1] * graph.num_nodes + nodes[1:]
    if steps.size == 0:
        return True
    found = np.minimum(np.searchsorted(keys, steps), max(keys.size - 1, 0))
    return bool(keys.size and (keys[found] == steps).all())
