"""Maximum independent set written as a user's own environment, twice.

``UserMISEnv`` is MIS as a user writes it from the observation contract alone: the observation is
the static graph with three node features (undecided, in the set, log of the degree), every node
acts at once (``MultiDiscrete([2] * max_nodes)``: 1 joins, 0 waits), two neighbours that both join
are settled by node id (the lower one joins), a node beside a new member leaves, and the reward
is the nodes that joined over the node count. graphtransfer trains and transfers it as it is.

``DeclaredMISEnv`` is the same env with the declarations of "Make your env transfer well"
(docs/guide/your-env.md): which action commits and which waits, which nodes are still undecided,
and the product's own rules for independent sets. With them it decodes as the built-in MIS task
does: the residual graph, local maxima of the policy's scores, exact rules in every pass, the
kernel, a finishing rule and ``--polish``. ``LocalMaxMISEnv`` declares the first two alone.

``BatchedMISEnv`` is ``UserMISEnv`` with a batched step (``UserMISBatch``): training steps all its
envs as one disjoint union, the same episodes as one by one: 2.2x the env steps per second at 50
nodes, 0.7x at 1,000, where this env's own step (a static graph) is already cheap (docs/guide/your-env.md,
"Train on many episodes at once").
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from graphtransfer.envs.batched import UnionBatch
from graphtransfer.tasks import independent_set

UNDECIDED, IN_SET, OUT = 0, 1, 2


class UserMISEnv(gym.Env):
    """Args:
    graphs: graphtransfer ``Graph`` objects to sample from (graphtransfer passes them in).
    horizon: steps per episode before it is cut short.
    """

    def __init__(self, graphs, horizon: int = 64):
        self.graphs, self.horizon = list(graphs), horizon
        self.max_nodes = max(g.num_nodes for g in self.graphs)
        self.max_edges = max(g.edge_index.shape[1] for g in self.graphs)
        self.observation_space = spaces.Dict(
            {
                "x": spaces.Box(0.0, np.inf, (self.max_nodes, 3), np.float32),
                "edge_index": spaces.Box(0, self.max_nodes - 1, (2, self.max_edges), np.int64),
                "num_nodes": spaces.Box(0, self.max_nodes, (1,), np.int64),
                "num_edges": spaces.Box(0, self.max_edges, (1,), np.int64),
            }
        )
        self.action_space = spaces.MultiDiscrete(np.full(self.max_nodes, 2))  # every node: 0 wait, 1 join

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.graph = self.graphs[self.np_random.integers(len(self.graphs))]
        self.status = np.full(self.graph.num_nodes, UNDECIDED, dtype=np.int8)
        self.steps = 0
        return self._obs(), {}

    def step(self, action):
        src, dst = self.graph.edge_index
        n = self.graph.num_nodes
        wants = (np.asarray(action)[:n] == 1) & (self.status == UNDECIDED)
        beaten = np.zeros(n, dtype=bool)
        both = wants[src] & wants[dst]
        beaten[np.maximum(src, dst)[both]] = True  # the lower id wins a clash
        joins = wants & ~beaten
        self.status[joins] = IN_SET
        beside = np.zeros(n, dtype=bool)
        beside[dst[joins[src]]] = True
        self.status[beside & (self.status == UNDECIDED)] = OUT
        self.steps += 1
        done = not (self.status == UNDECIDED).any()
        return self._obs(), float(joins.sum()) / n, done, self.steps >= self.horizon, {}

    def solution(self):
        return self.status == IN_SET

    @staticmethod
    def objective(graph, solution):
        return float(np.sum(solution))

    @staticmethod
    def feasible(graph, solution):
        src, dst = graph.edge_index
        return not (solution[src] & solution[dst]).any()

    def _obs(self):
        n, e = self.graph.num_nodes, self.graph.edge_index.shape[1]
        x = np.zeros((self.max_nodes, 3), dtype=np.float32)
        x[:n, 0], x[:n, 1] = self.status == UNDECIDED, self.status == IN_SET
        x[:n, 2] = np.log1p(self.graph.degrees())
        edge_index = np.zeros((2, self.max_edges), dtype=np.int64)
        edge_index[:, :e] = self.graph.edge_index
        return {"x": x, "edge_index": edge_index, "num_nodes": np.array([n]), "num_edges": np.array([e])}


class LocalMaxMISEnv(UserMISEnv):
    """``UserMISEnv`` with the residual view and the local-max decoding, without the problem's rules."""

    commit_action, defer_action = 1, 0  # local-max decoding: the surest nodes join, the rest wait

    def active_nodes(self):  # the undecided nodes: the policy sees the graph they span
        return self.status == UNDECIDED


class DeclaredMISEnv(LocalMaxMISEnv):
    """``UserMISEnv`` with the declarations that make it transfer as the built-in MIS task does."""

    rules = independent_set  # exact rules, kernel, finishing rule and search of independent sets


class UserMISBatch(UnionBatch):
    """``UserMISEnv``'s rules over K episodes at once: env i's node u is union node
    ``i * max_nodes + u`` (``UnionBatch``), so each rule below is ``UserMISEnv.step``'s, run once
    on the union. Padding nodes are ``OUT``: they never act."""

    def __init__(self, envs):
        super().__init__(envs)
        self.status = np.full(self.count * self.max_nodes, OUT, dtype=np.int8)
        self.edges = np.zeros((2, 0), dtype=np.int64)

    def reset(self, which, seeds):
        for i in np.flatnonzero(which):
            self.envs[i].reset(seed=seeds[i])  # the env's own start (its seed, its graph); its observation is not used
        self.start(which)

    def start(self, which):
        super().start(which)
        starting = np.repeat(which, self.max_nodes)
        self.status[starting] = np.where(self.real[starting], UNDECIDED, OUT)
        self.edges = self.replace_edges(self.edges, which)

    def observe(self, which, out):
        edges, nodes = self.edges_of(self.edges, which), self.nodes_of(which)
        degree = np.bincount(edges[0], minlength=self.status.size)[nodes]
        status = self.status[nodes]
        x = np.stack([status == UNDECIDED, status == IN_SET, np.log1p(degree)], axis=1)
        self.write_nodes("x", x.astype(np.float32), which, out)
        self.write_structure(edges, which, out)

    def apply(self, actions):
        src, dst = self.edges
        wants = (actions.reshape(-1) == 1) & (self.status == UNDECIDED)
        beaten = np.zeros_like(wants)
        both = wants[src] & wants[dst]
        beaten[np.maximum(src, dst)[both]] = True  # the lower id wins a clash
        joins = wants & ~beaten
        self.status[joins] = IN_SET
        beside = np.zeros_like(wants)
        beside[dst[joins[src]]] = True
        self.status[beside & (self.status == UNDECIDED)] = OUT
        over = ~(self.status == UNDECIDED).reshape(self.count, self.max_nodes).any(axis=1)
        return self.per_episode(joins) / self.size, over


class BatchedMISEnv(UserMISEnv):
    """``UserMISEnv`` that trains its envs as one batch."""

    batched = UserMISBatch
