"""A gymnasium env over a set of graphs, padded to the largest; tasks fill in the rules."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import gymnasium as gym
import numpy as np

from graphtransfer.envs.contract import EDGE_ATTR, observation_space, padded_edge_attr, padded_structure
from graphtransfer.graphs import Graph, load_graphs

if TYPE_CHECKING:
    from graphtransfer.envs.transforms import MISKernel

    KernelMethod = staticmethod[..., MISKernel | None]  # how a task declares its kernel rule: staticmethod(rule), a KernelRule

Graphs = Sequence[Graph] | str | Path
"""what an env samples from: :class:`Graph` objects, or a sample set name, graph file or folder"""


def as_graphs(graphs: Graphs) -> list[Graph]:
    """The graphs an env was given, loading a named set or file (``gymnasium.make(id, graphs="small")``)."""
    return load_graphs(graphs) if isinstance(graphs, (str, Path)) else list(graphs)


class GraphEnv(gym.Env):
    """Each episode samples one graph from ``graphs``; observations follow the contract in
    :mod:`graphtransfer.envs.contract`, padded to the largest graph of the set.

    Subclasses set ``num_features`` and the action space, and implement :meth:`_start`,
    :meth:`_features`, :meth:`_apply` and :meth:`_finished`; tasks whose observation shows only
    part of the graph override :meth:`_edges` and :meth:`active_nodes`; tasks with edge
    features set ``num_edge_features`` and implement :meth:`_edge_features`.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # gymnasium declares it an attribute of the instance
    num_features: ClassVar[int]
    num_edge_features: ClassVar[int] = 0
    """width of the observation's ``edge_attr`` (0: the observation has none)"""
    head: ClassVar[str]
    """which policy head acts (a :class:`~graphtransfer.envs.protocol.Head`)"""
    sense: ClassVar[str] = "max"
    """whether the objective is maximised ("max") or minimised ("min")"""
    objective_name: ClassVar[str]
    inference_horizon: ClassVar[int | None] = None
    """episode length at inference (None: the training horizon); see graphtransfer.envs.protocol"""
    inference_deterministic: ClassVar[bool] = False
    """where actions are drawn, take the most likely ones at inference unless sampling is asked for
    (False: sample, seeded); see graphtransfer.envs.protocol"""
    solution_header: ClassVar[str] = "node,decision"
    """CSV header of what :meth:`solution` returns"""
    reads_weights: ClassVar[tuple[str, ...]] = ()
    """which of the graph's weights the task reads ("edge", "node"): the file's own where it has
    them, else hashed (:mod:`graphtransfer.graphs.weights`); commands say which they used"""
    renumberable: ClassVar[bool] = False
    """the task depends on the graph's edges alone (no weight, feature or rule tied to a node's number) and its solution
    is one row per node, so inference may renumber the nodes for speed (:mod:`graphtransfer.graphs.ordering`) and put
    the solution back in the graph's own order"""

    kernel: ClassVar[KernelMethod | None] = None
    """``kernel(graph)``: the graph shrunk by exact rules before inference, with the way back, or None where they decide
    nothing (e.g. :func:`graphtransfer.tasks.mis.kernel.mis_kernel`; applied with the decoding's ``reductions``, before
    the first pass and between passes, :mod:`graphtransfer.solve.residual_kernels`); None: the task has none (the
    default). Set it as ``staticmethod(rule)``."""

    def __init__(self, graphs: Graphs, horizon: int = 32):
        graphs = as_graphs(graphs)
        if not graphs:
            raise ValueError("a graph env needs at least one graph")
        if horizon < 1:
            raise ValueError(f"horizon={horizon}; it must be at least 1")
        self.graphs = list(graphs)
        self.horizon = horizon
        self.max_nodes = max(g.num_nodes for g in self.graphs)
        self.max_edges = max(max(g.edge_index.shape[1] for g in self.graphs), 1)
        self.observation_space = observation_space(self.max_nodes, self.max_edges, self.num_features, self.num_edge_features)
        self.graph = self.graphs[0]
        self.padded = True
        """observations padded to the spaces (``max_nodes`` rows of ``x``, ``max_edges`` columns of ``edge_index``), as SB3
        needs them; off, only the real rows and columns: a node-wise local-max solve reads no more and turns it off while
        it runs (:func:`graphtransfer.solve.inference.solve`): at 10^6 nodes of degree 8 the padding was 128 MiB written
        per pass, most of it zeros once the residual graph shrinks. Unpadded observations may hold the env's own arrays
        (its residual edges): the solve reads them and never writes into them"""

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode on a random graph of the set, or on ``options["graph_index"]``."""
        self.begin_episode(seed=seed, options=options)
        return self._observation(), {}

    def begin_episode(self, *, seed: int | None = None, options: dict | None = None) -> None:
        """All of :meth:`reset` but its observation: seed, pick the graph, start the task. A solve
        that keeps the episode's state elsewhere (MIS passes on a GPU,
        :mod:`graphtransfer.tasks.mis.device`) starts here and draws the same random numbers
        after it that the observation would have."""
        super().reset(seed=seed)
        index = (options or {}).get("graph_index")
        if index is None:
            index = int(self.np_random.integers(len(self.graphs)))
        self.graph = self.graphs[index]
        self.steps = 0
        self._start()

    def use_graph(self, graph: Graph) -> None:
        """Run the episodes from the next reset on ``graph`` alone, a graph that fits the env's
        spaces (at most ``max_nodes`` nodes and ``max_edges`` directed edges): inference goes on on
        the kernel of a graph's residual this way (:mod:`graphtransfer.solve.residual_kernels`),
        the policy and its spaces unchanged."""
        if graph.num_nodes > self.max_nodes or graph.edge_index.shape[1] > self.max_edges:
            raise ValueError(
                f"graph {graph.name} has {graph.num_nodes} nodes and {graph.edge_index.shape[1]} directed edges; "
                f"this env fits {self.max_nodes} and {self.max_edges}"
            )
        self.graphs = [graph]
        self.graph = graph

    def step(self, action: np.ndarray | int):
        return self._transition(self._apply(action))

    def _transition(self, reward: float):
        """Count the step and return gymnasium's ``(obs, reward, terminated, truncated, info)``."""
        self.steps += 1
        obs = self._observation()
        terminated = self._finished()
        truncated = not terminated and self.steps >= self.horizon
        return obs, float(reward), terminated, truncated, {}

    def _observation(self) -> dict[str, np.ndarray]:
        # Fresh arrays every call when padded (as SB3 reads them): callers may keep or modify what they are handed.
        edges = self._edges()
        if not self.padded:
            return self._unpadded_observation(edges)
        x = np.zeros((self.max_nodes, self.num_features), dtype=np.float32)
        x[: self.graph.num_nodes] = self._features(edges)
        obs = {"x": x, **padded_structure(edges, self.graph.num_nodes, self.max_nodes, self.max_edges)}
        if self.num_edge_features:
            obs[EDGE_ATTR] = padded_edge_attr(self._edge_features(edges), self.max_edges)
        return obs

    def _unpadded_observation(self, edges: np.ndarray) -> dict[str, np.ndarray]:
        """The observation's real rows and columns only (:attr:`padded` off), the edges and features
        as the task made them, not copied (a copy of the edges per pass was a measurable share of an MIS
        solve at 10^6 nodes)."""
        obs: dict[str, np.ndarray] = {
            "x": np.asarray(self._features(edges), dtype=np.float32),
            "edge_index": np.asarray(edges, dtype=np.int64),
            "num_nodes": np.array([self.graph.num_nodes], dtype=np.int64),
            "num_edges": np.array([edges.shape[1]], dtype=np.int64),
        }
        if self.num_edge_features:
            obs[EDGE_ATTR] = np.asarray(self._edge_features(edges), dtype=np.float32)
        return obs

    def _edges(self) -> np.ndarray:
        """The edges the observation shows, ``(2, E)``: the whole graph unless overridden."""
        return self.graph.edge_index

    def observed_edges(self) -> np.ndarray:
        """The edges the observations show now, ``(2, E)`` (:meth:`_edges`): the residual graph's
        where the task shrinks it (MIS, MVC), read-only."""
        return self._edges()

    def active_nodes(self) -> np.ndarray:
        """``(num_nodes,)`` bool: nodes whose action can still change the episode.

        Inactive nodes must have no observed edge to active ones; inference then runs the
        policy on the active nodes alone and gets the same per-node distributions.
        """
        return np.ones(self.graph.num_nodes, dtype=bool)

    def residual_degree(self) -> np.ndarray:
        """``(num_nodes,)`` int64: each node's edges in the last observation (the whole graph's
        unless :meth:`_edges` is overridden); tasks that count them for their features return
        that count."""
        return np.bincount(self._edges()[0], minlength=self.graph.num_nodes)

    def _start(self) -> None:
        """Reset the task state for ``self.graph``."""
        raise NotImplementedError

    def _features(self, edges: np.ndarray) -> np.ndarray:
        """Node features of the real nodes, ``(num_nodes, num_features)``, given the observed
        ``edges`` ``(2, E)``."""
        raise NotImplementedError

    def _edge_features(self, edges: np.ndarray) -> np.ndarray:
        """Features of the observed ``edges`` ``(2, E)``, ``(E, num_edge_features)``, row by column."""
        raise NotImplementedError

    def _apply(self, action) -> float:
        """Apply the action as the action space gives it; return the reward."""
        raise NotImplementedError

    def _node_actions(self, action) -> np.ndarray:
        """The actions of the real nodes, ``(num_nodes,)``, of a node-wise action."""
        return np.asarray(action)[: self.graph.num_nodes]

    def _finished(self) -> bool:
        """Whether the episode is over; called after the observation of the new state is built."""
        raise NotImplementedError

    def solution(self) -> np.ndarray:
        """The episode's answer so far, one row per line of the solution CSV."""
        raise NotImplementedError

    @staticmethod
    def objective(graph: Graph, solution: np.ndarray) -> float:
        raise NotImplementedError

    def feasible(self, graph: Graph, solution: np.ndarray) -> bool:
        """Whether ``solution`` is valid on ``graph``; a method, since it may depend on the env's
        settings (path's query); tasks whose rule does not override it as a static method."""
        return True
