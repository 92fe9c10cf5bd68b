"""K routing episodes stepped as one disjoint union (:class:`~graphtransfer.envs.batched.UnionBatch`):
the moves, the ball of :data:`~graphtransfer.tasks.path.step.BALL_RADIUS` hops around each moved
route's current node (one breadth-first search from all of them over the union's rows), the
allowed next steps and the features run once over the union, as :class:`~graphtransfer.tasks.path.env.PathEnv`
runs them on one graph.

What loops over the episodes is where an episode begins: the env's own start (its query, the
hops and Dijkstra distances from its target, its first ball) and the episode's rows of the union's
adjacency, which are then joined again (:meth:`PathBatch.join_rows`). Episode ``i``'s directed edge
``e`` is union edge ``i * max_edges + e``, so sorted union edge ids keep each episode's edges in
its graph's order."""

from __future__ import annotations

from typing import Protocol, cast

import numpy as np
from scipy.sparse import csr_array

from graphtransfer.envs.batched import Observation, UnionBatch
from graphtransfer.envs.contract import EDGE_ATTR
from graphtransfer.envs.edge_rows import write_edge_values
from graphtransfer.graphs import Graph
from graphtransfer.tasks.path.step import BALL_RADIUS, OFF_MASK_REWARD, relative, route_features


class RouteStart(Protocol):
    """What the batch reads of a :class:`~graphtransfer.tasks.path.env.PathEnv` whose episode has
    just begun: its query and what its start computed from it, on its graph's nodes and edges."""

    graph: Graph
    guide: str
    matrix: csr_array
    """the edge lengths by (source, destination)"""
    edge_id: csr_array
    """each edge's column + 1, laid out as ``matrix``"""
    weights: np.ndarray
    hops: np.ndarray
    distance: np.ndarray
    visited: np.ndarray
    ball: np.ndarray
    ball_edges: np.ndarray
    mask: np.ndarray
    current: int
    target: int
    budget: int
    route: list[int]
    shortest: float
    scale: float


class PathBatch(UnionBatch):
    """The union's state: each node's hops and distance to its episode's target (infinite on
    padding), visited, in its route's ball and allowed next; each episode's current node and
    target (union nodes), budget, route length (nodes), shortest length and mean edge length;
    and the union's adjacency rows (``indptr``, ``indices``, ``lengths``, ``edge_ids``)."""

    def __init__(self, envs):
        super().__init__(envs)
        nodes, slots = self.count * self.max_nodes, self.count * self.max_edges
        self.routes = [cast(RouteStart, env) for env in self.envs]
        self.distance_guide = np.array([route.guide == "distance" for route in self.routes])
        self.hops, self.distance = np.full(nodes, np.inf), np.full(nodes, np.inf)
        self.visited, self.inside, self.mask = (np.zeros(nodes, dtype=bool) for _ in range(3))
        self.current, self.target = np.zeros(self.count, dtype=np.int64), np.zeros(self.count, dtype=np.int64)
        self.budget, self.route_nodes = np.zeros(self.count, dtype=np.int64), np.zeros(self.count, dtype=np.int64)
        self.shortest, self.scale = np.ones(self.count), np.ones(self.count)
        self.ends, self.weights = np.zeros((2, slots), dtype=np.int64), np.zeros(slots)
        self.divisor = np.ones(self.count)
        """each episode's mean edge length in its lengths' dtype, as the env divides by it (its float32
        hashed lengths in float32: divided in float64 and rounded to float32, the same quotient)"""
        self.ball_edges = np.zeros(0, dtype=np.int64)
        self.rows: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = [self.empty_rows()] * self.count
        self.join_rows()

    def empty_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """An episode's adjacency rows before it begins: ``max_nodes`` empty rows."""
        nothing = np.zeros(0, dtype=np.int64)
        return np.zeros(self.max_nodes, dtype=np.int64), nothing, np.zeros(0), nothing

    def start(self, which: np.ndarray) -> None:
        super().start(which)
        starting = np.flatnonzero(which).tolist()
        for index in starting:
            self.start_episode(index)
        kept = self.ball_edges[~which[self.edge_episode(self.ball_edges)]]
        fresh = [self.routes[i].ball_edges + i * self.max_edges for i in starting]
        self.ball_edges = np.sort(np.concatenate([kept, *fresh]))
        self.join_rows()

    def start_episode(self, index: int) -> None:
        """Copy episode ``index``'s start from its env, which has just begun it."""
        env, slot = self.routes[index], self.slot(index)
        offset, real = slot.start, slice(slot.start, slot.start + env.graph.num_nodes)
        for mine, its in ((self.hops, env.hops), (self.distance, env.distance)):
            mine[slot] = np.inf
            mine[real] = its
        for mine, its in ((self.visited, env.visited), (self.inside, None)):
            mine[slot] = False
            mine[real] = False if its is None else its
        self.inside[env.ball + offset] = True
        self.mask[slot] = env.mask
        self.current[index], self.target[index] = env.current + offset, env.target + offset
        self.budget[index], self.route_nodes[index] = env.budget, len(env.route)
        self.shortest[index], self.scale[index] = env.shortest, env.scale
        self.divisor[index] = np.asarray(env.scale, dtype=env.weights.dtype)
        edges = slice(index * self.max_edges, index * self.max_edges + env.weights.size)
        self.ends[:, edges], self.weights[edges] = env.graph.edge_index + offset, env.weights
        row_sizes = np.zeros(self.max_nodes, dtype=np.int64)
        row_sizes[: env.graph.num_nodes] = np.diff(env.matrix.indptr)
        ids = env.edge_id.data.astype(np.int64) - 1 + edges.start
        self.rows[index] = (row_sizes, env.matrix.indices.astype(np.int64) + offset, env.matrix.data.astype(np.float64), ids)

    def join_rows(self) -> None:
        """The union's adjacency (CSR) from its episodes' rows, in episode order."""
        sizes, indices, lengths, ids = (np.concatenate(part) for part in zip(*self.rows, strict=True))
        self.indptr = np.concatenate([[0], np.cumsum(sizes)])
        self.indices, self.lengths, self.edge_ids = indices, lengths, ids

    def edge_episode(self, edges: np.ndarray) -> np.ndarray:
        """The episode each union edge belongs to."""
        return edges // self.max_edges

    def row_entries(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The adjacency entries of ``nodes``' rows, and the position in ``nodes`` each belongs to."""
        starts = self.indptr[nodes]
        sizes = self.indptr[nodes + 1] - starts
        owner = np.repeat(np.arange(nodes.size), sizes)
        return np.arange(sizes.sum()) + np.repeat(starts - (np.cumsum(sizes) - sizes), sizes), owner

    def apply(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        node = np.arange(self.count) * self.max_nodes + np.asarray(actions).reshape(self.count)
        entries, owner = self.row_entries(self.current)
        hit = self.indices[entries] == node[owner]
        episodes, first = np.unique(owner[hit], return_index=True)  # a neighbour's first entry, as the env finds it
        length = np.zeros(self.count)
        length[episodes] = self.lengths[entries[hit][first]]
        moves = np.zeros(self.count, dtype=bool)
        moves[episodes] = self.mask[node[episodes]]
        self.current[moves] = node[moves]
        self.route_nodes[moves] += 1
        self.visited[node[moves]] = True
        arrived = self.current == self.target
        self.look_around(moves & ~arrived)
        return np.where(moves, -length / self.shortest, OFF_MASK_REWARD), arrived

    def look_around(self, moved: np.ndarray) -> None:
        """The ball, its edges and the allowed next steps of the episodes of ``moved``, around their new current nodes."""
        if not moved.any():
            return
        seen = np.zeros(self.hops.size, dtype=bool)
        frontier = self.current[moved]
        seen[frontier] = True
        for _ in range(BALL_RADIUS):
            reached = self.indices[self.row_entries(frontier)[0]]
            frontier = np.unique(reached[~seen[reached]])
            if frontier.size == 0:
                break
            seen[frontier] = True
        slots = np.repeat(moved, self.max_nodes)
        self.inside[slots] = seen[slots]
        entries, _ = self.row_entries(np.flatnonzero(seen))
        ids = self.edge_ids[entries]
        kept = self.ball_edges[~moved[self.edge_episode(self.ball_edges)]]
        self.ball_edges = np.sort(np.concatenate([kept, ids[seen[self.ends[1, ids]]]]))
        self.mask[slots] = False
        self.mask[self.allowed(np.flatnonzero(moved))] = True

    def allowed(self, episodes: np.ndarray) -> np.ndarray:
        """The allowed next steps of ``episodes`` (union nodes): unvisited neighbours from which
        the target is within the budget; where an episode has none, its neighbours one hop closer."""
        entries, owner = self.row_entries(self.current[episodes])
        episode = episodes[owner]
        neighbours = self.indices[entries]
        left = self.budget[episode] - self.route_nodes[episode]
        fresh = ~self.visited[neighbours] & (self.hops[neighbours] <= left)
        any_fresh = np.bincount(owner[fresh], minlength=episodes.size) > 0
        closer = self.hops[neighbours] == self.hops[self.current[episode]] - 1
        return neighbours[np.where(any_fresh[owner], fresh, closer)]

    def action_masks(self) -> np.ndarray:
        """``(K, max_nodes)`` bool: each episode's allowed next steps, as each env's ``action_masks``."""
        return self.mask.reshape(self.count, self.max_nodes).copy()

    def observe(self, which: np.ndarray, out: Observation) -> None:
        self.write_nodes("x", self.features(which)[self.nodes_of(which)], which, out)
        ball_edges = self.ball_edges if which.all() else self.ball_edges[which[self.edge_episode(self.ball_edges)]]
        self.write_structure(self.ends[:, ball_edges], which, out)
        episode = self.edge_episode(ball_edges)
        write_edge_values(EDGE_ATTR, (self.weights[ball_edges] / self.divisor[episode])[:, None], episode, which, out)

    def features(self, which: np.ndarray) -> np.ndarray:
        """The node features ``(K * max_nodes, 7)`` of the episodes of ``which`` (zero elsewhere),
        by :func:`~graphtransfer.tasks.path.step.route_features`."""
        episodes = np.flatnonzero(which)
        near = np.flatnonzero(self.inside & self.nodes_of(which))
        centre = self.current[self.episode_of(near)]
        by_distance = relative(self.distance, near, centre) / self.scale[self.episode_of(near)]
        by_hops = relative(self.hops, near, centre)
        entries, owner = self.row_entries(self.current[episodes])
        lengths = self.lengths[entries] / self.divisor[episodes[owner]]
        return route_features(
            self.hops.size,
            ends=(self.current[episodes], self.target[episodes]),
            near=near,
            centre=centre,
            visited=self.visited,
            hops=self.hops,
            mask=self.mask,
            steps=(self.indices[entries], lengths),
            potential=np.where(self.distance_guide[self.episode_of(near)], by_distance, by_hops),
        )
