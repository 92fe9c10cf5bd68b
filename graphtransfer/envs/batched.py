"""Many episodes of one env class stepped as one batch: the protocol an env class declares to
train that way (``batched``: a class, or a function, that takes the K envs and returns the
batch), and :class:`UnionBatch`, the disjoint union that the built-in tasks build theirs on.

A batch holds the state of K episodes, one per env instance it was given, and advances them all
with one call: :class:`graphtransfer.training.batched_vec_env.BatchedVecEnv` is SB3's ``VecEnv``
over it, so PPO steps K episodes per Python step instead of one. Each episode draws its random
numbers from its own env's generator, in the order the env alone would draw them, so the batch
gives the same episodes as the K envs stepped one by one (``DummyVecEnv``) for the same seeds,
observation for observation: training is the same per env step, only faster.

A user's env opts in by declaring a class with the members of :class:`Batch` (see
docs/guide/your-env.md and ``examples/user_mis.py``); an env without one trains on
``DummyVecEnv`` or ``SubprocVecEnv`` as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from graphtransfer.envs.base import GraphEnv
    from graphtransfer.graphs import Graph

Observation = dict[str, np.ndarray]
"""the K episodes' observations, each key stacked: ``x`` ``(K, max_nodes, F)`` and so on"""


@runtime_checkable
class Batch(Protocol):
    """What an env class's ``batched`` member builds from K instances of the env: the K episodes'
    state, stepped at once. The VecEnv counts the steps, cuts an episode at ``horizon`` and starts
    the next one where an episode ends.

    Shapes: ``which`` is ``(K,)`` bool, the episodes a call is about; ``actions`` stacks the K
    envs' actions (``(K, max_nodes)`` for a node-wise env); rewards ``(K,)`` float64, terminated
    ``(K,)`` bool."""

    horizon: int
    """steps after which an episode that has not ended is cut short (truncated)"""

    def __init__(self, envs: Sequence) -> None: ...

    def reset(self, which: np.ndarray, seeds: Sequence[int | None]) -> None:
        """Begin a new episode on each env of ``which``, seeding env ``i`` with ``seeds[i]`` where it is not None."""

    def observe(self, which: np.ndarray, out: Observation) -> None:
        """Write the observations of the episodes of ``which`` into their rows of ``out``."""

    def apply(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Apply every episode's action; return each episode's reward and whether it is over."""

    # a choice env's batch also has ``action_masks() -> (K, max_nodes or max_edges) bool``, its episodes' masks


class UnionBatch:
    """The K episodes of a :class:`~graphtransfer.envs.base.GraphEnv` task as one disjoint union:
    env ``i``'s node ``u`` is union node ``i * max_nodes + u`` (a slot of ``max_nodes`` per
    episode; nodes past an episode's graph are padding, which a task keeps inert), and the union's
    edges are the episodes' edges in episode order, each episode's in its own order. A task's rule
    that reads only a node's neighbourhood then runs on the union once for all K episodes.

    A subclass sets the task's state for episodes that begin (:meth:`start`), writes the
    observation rows (:meth:`observe`) and steps the union (:meth:`apply`). This class begins
    episodes as the env does (its ``begin_episode``: the seed, the graph drawn from the env's
    generator), keeps the edges of each episode's graph (:meth:`graph_edges`), and turns union edges into
    the padded ``edge_index`` rows of the contract (:meth:`write_structure`)."""

    def __init__(self, envs: Sequence[GraphEnv]):
        self.envs = list(envs)
        first = self.envs[0]
        self.count, self.max_nodes, self.max_edges = len(self.envs), first.max_nodes, first.max_edges
        self.horizon = first.horizon
        self.size = np.zeros(self.count, dtype=np.int64)
        """each episode's node count (its graph's)"""
        self.real = np.zeros(self.count * self.max_nodes, dtype=bool)
        """``(K * max_nodes,)``: union nodes that are a node of their episode's graph (the rest pad the slots)"""
        self._edges: dict[int, np.ndarray] = {}

    def reset(self, which: np.ndarray, seeds: Sequence[int | None]) -> None:
        for index in np.flatnonzero(which).tolist():
            self.envs[index].begin_episode(seed=seeds[index])
        self.start(which)

    def start(self, which: np.ndarray) -> None:
        """Load the graphs of the episodes of ``which``, just begun on their envs."""
        for index in np.flatnonzero(which).tolist():
            size = self.envs[index].graph.num_nodes
            self.size[index] = size
            slot = self.slot(index)
            self.real[slot] = False
            self.real[slot.start : slot.start + size] = True

    def slot(self, index: int) -> slice:
        """Episode ``index``'s union nodes (its graph's, then padding)."""
        return slice(index * self.max_nodes, (index + 1) * self.max_nodes)

    def graph_edges(self, graph: Graph) -> np.ndarray:
        """``graph``'s edges as an episode starts on them, ``(2, E)``: the graph's own order unless
        a task overrides it; kept per graph (an env's graphs are few and small)."""
        key = id(graph)
        if key not in self._edges:
            self._edges[key] = self.episode_edges(graph)
        return self._edges[key]

    def episode_edges(self, graph: Graph) -> np.ndarray:
        """The edges an episode on ``graph`` starts with (a task's order of them)."""
        return graph.edge_index

    def replace_edges(self, edges: np.ndarray, which: np.ndarray) -> np.ndarray:
        """``edges`` (union edges in episode order) with the edges of the episodes of ``which``
        replaced by their new graphs' (:meth:`graph_edges`), offset into their slots: the union's
        edges stay in episode order, each episode's in its own."""
        # episode i's edges end where the next slot's node ids start (they come in episode order): no division per edge
        bounds = np.searchsorted(edges[1], np.arange(self.count + 1) * self.max_nodes)
        pieces = [
            self.graph_edges(self.envs[i].graph) + i * self.max_nodes if starting else edges[:, bounds[i] : bounds[i + 1]]
            for i, starting in enumerate(which.tolist())
        ]
        return np.concatenate(pieces, axis=1) if pieces else edges

    def episode_of(self, nodes: np.ndarray) -> np.ndarray:
        """The episode each union node belongs to."""
        return nodes // self.max_nodes

    def nodes_of(self, which: np.ndarray) -> np.ndarray:
        """``(K * max_nodes,)`` bool: the union nodes (real and padding) of the episodes of ``which``."""
        return np.repeat(which, self.max_nodes)

    def edges_of(self, edges: np.ndarray, which: np.ndarray) -> np.ndarray:
        """The union ``edges`` of the episodes of ``which`` (all of them, uncopied, where ``which`` is everyone)."""
        return edges if which.all() else edges[:, which[self.episode_of(edges[1])]]

    def draws(self, which: np.ndarray) -> np.ndarray:
        """A uniform draw per node of the episodes of ``which`` (``nodes_of(which)``, in union order)
        from its env's generator, ``env.np_random.random(num_nodes)`` as the env's own features draw;
        zeros for padding nodes."""
        chosen = np.flatnonzero(which)
        draw = np.zeros((chosen.size, self.max_nodes))
        for row, index in enumerate(chosen.tolist()):
            draw[row, : self.size[index]] = self.envs[index].np_random.random(self.size[index])
        return draw.reshape(-1)

    def write_structure(self, edges: np.ndarray, which: np.ndarray, out: Observation) -> None:
        """Write the contract's ``edge_index``, ``num_nodes`` and ``num_edges`` rows of the
        episodes of ``which`` from their union ``edges`` (:meth:`edges_of`, in episode order): each
        episode's edges in its slot's numbering, padded with zeros."""
        counts = np.bincount(self.episode_of(edges[1]), minlength=self.count)
        ends = np.cumsum(counts)
        rows = out["edge_index"]
        for index in np.flatnonzero(which).tolist():  # a slice per episode: 4x faster than one scatter at K=64, N=1,000
            count, end = int(counts[index]), int(ends[index])
            np.subtract(edges[:, end - count : end], index * self.max_nodes, out=rows[index, :, :count])
            rows[index, :, count:] = 0
        out["num_nodes"][which, 0] = self.size[which]
        out["num_edges"][which, 0] = counts[which]

    def write_nodes(self, key: str, values: np.ndarray, which: np.ndarray, out: Observation) -> None:
        """Write per-node ``values`` of the episodes of ``which`` (``(nodes, ...)`` over
        :meth:`nodes_of`, in union order) into their rows of ``out[key]``, padding rows zero (as the
        env's padded observation has them)."""
        rows = values.reshape(-1, self.max_nodes, *values.shape[1:])
        real = self.real.reshape(self.count, self.max_nodes)[which]
        if not real.all():
            rows = rows * real.reshape(*real.shape, *([1] * (values.ndim - 1)))
        out[key][which] = rows

    def per_episode(self, values: np.ndarray) -> np.ndarray:
        """The sum over each episode's union nodes of a per-node quantity ``(K * max_nodes,)``."""
        return values.reshape(self.count, self.max_nodes).sum(axis=1)
