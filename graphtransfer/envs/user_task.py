"""A user's env seen as the decoding sees a built-in task: the residual graph, a pass budget, the
problem's rules, and a graph that can be swapped for its kernel.

The user declares what their env can do (:class:`~graphtransfer.envs.protocol.GraphEnvProtocol`);
:class:`UserTask` turns those declarations into the members the decoding machinery reads on the
built-in tasks (``observed_edges``, ``residual_degree``, ``use_graph``, ``horizon``, ``padded``),
so that nothing in ``solve/`` asks whose env it runs.

- ``active_nodes()`` declared: the policy sees the graph the active nodes span. Observed edges
  that touch an inactive node are dropped, in training and at inference alike, so a user may
  observe the static graph and still get the residual view the local-max decoding needs.
- At inference the pass budget is the solve's (``--max-passes``, else the env's
  ``inference_horizon``, else :data:`USER_PASSES` where the env declares ``active_nodes``): an env
  that cuts its episodes at a training horizon is stepped on while nodes are undecided.
- ``rules`` declared (:class:`~graphtransfer.envs.protocol.Rules`): its exact rules act in every
  local-max pass. A node they leave out is dropped from the residual view here (the env is told to
  wait there), so an env needs no action of its own for leaving.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import gymnasium as gym
import numpy as np

from graphtransfer.envs.protocol import JOIN, LEAVE, EnvFeatures, Rules, features_of
from graphtransfer.graphs import Graph

USER_PASSES = 1024
"""the pass budget at inference of a user env that declares ``active_nodes`` and neither an
``inference_horizon`` nor a ``--max-passes``: it ends sooner, once no node is active"""


class UserTask(gym.Env):
    """``env`` (a user's env, perhaps wrapped) with the members the decoding reads on a built-in task.

    Args:
        env: the user's env as built, with contract spaces.
        rebuild: ``rebuild(graph)``, the same env class built on another graph (a kernel of the
            residual graph).
        graphs: the graphs ``env`` was built on.
        budget: at inference, the passes allowed. ``None``: training, the env's own episodes.
        own_episodes: at inference, whether the env's own truncation (a training horizon) still
            ends the solve; ``False`` where it declares active nodes or the passes were given.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        env: gym.Env,
        rebuild: Callable[[Graph], gym.Env],
        graphs: list[Graph],
        budget: int | None = None,
        own_episodes: bool = True,
    ):
        self.env, self.rebuild = env, rebuild
        self.graphs = list(graphs)
        self.graph = self.graphs[0]
        self.horizon = budget or 0
        self.inference = budget is not None
        self.own_episodes = own_episodes
        self.padded = True
        self.observation_space, self.action_space = env.observation_space, env.action_space
        self.name = type(env.unwrapped).__name__
        self._declare(features_of(env))
        self._left = np.zeros(0, dtype=bool)
        self._edges = np.zeros((2, 0), dtype=np.int64)
        self._memo: dict = {}  # the rules' memory of the graph (Rules.exact_actions)
        self.steps = 0

    def _declare(self, features: EnvFeatures) -> None:
        """Declare what the user's env declares (read once, :func:`~graphtransfer.envs.protocol.features_of`),
        with the residual view, the rules' exact actions and the pass budget in between."""
        self._features = features
        self.head, self.sense, self.solution_header = features.head, features.sense, features.solution_header
        self.inference_deterministic = features.inference_deterministic
        self._commit, self._defer = features.commit_action or 0, features.defer_action or 0
        self._rules = features.rules
        self._active = features.active_nodes
        declared: dict[str, Any] = {
            "commit_action": features.commit_action,
            "defer_action": features.defer_action,
            "action_masks": features.action_masks,
            "open_nodes": features.open_nodes,
            "covers": features.covers,
            "inference_horizon": features.inference_horizon,
            "rules": features.rules,
            "exact_actions": features.exact_actions,
            "active_nodes": None if features.active_nodes is None else self._active_nodes,
            "step_many": None if features.step_many is None else self._step_many,
        }
        if features.exact_actions is None and features.rules is not None and features.rules.exact_actions is not None:
            declared["exact_actions"] = self._exact_actions
        if features.answering is not None:
            answering = features.answering
            declared.update(solution=answering.solution, objective=answering.objective, feasible=answering.feasible)
        for member, value in declared.items():
            if value is None:
                vars(self).pop(member, None)
            else:
                setattr(self, member, value)

    @property
    def unwrapped(self) -> gym.Env:
        return self

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        if self._features.answering is not None:  # an env with an answer names the episode's graph
            self.graph = self._features.answering.graph
        self.steps = 0
        self._left = np.zeros(int(obs["num_nodes"][0]), dtype=bool)
        return self._view(obs), info

    def step(self, action):
        action = np.asarray(action)
        leaving = None
        if self._rules is not None and action.ndim == 1 and action.size and action.min() == LEAVE:
            leaving = action == LEAVE
            action = np.where(leaving, self._defer, action)
        result = self.env.step(action)
        if leaving is not None:
            self._left |= leaving[: self._left.size]
        return self._transition(result)

    def _step_many(self, nodes: np.ndarray):
        step_many = cast(Callable[[np.ndarray], tuple], self._features.step_many)
        return self._transition(step_many(nodes))

    def _transition(self, result: tuple):
        obs, reward, terminated, truncated, info = result
        self.steps += 1
        obs = self._view(obs)
        if self.inference:
            if self._active is not None:
                terminated = terminated or not self._active_nodes().any()
            truncated = truncated and self.own_episodes
            truncated = not terminated and (truncated or self.steps >= self.horizon)
        return obs, reward, terminated, truncated, info

    def _active_nodes(self) -> np.ndarray:
        """The env's active nodes, less those the rules left out."""
        active = np.asarray(cast(Callable[[], np.ndarray], self._active)(), dtype=np.bool_)
        return active & ~self._left[: active.size] if self._left.size else active

    def _view(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The observation with only the edges between active nodes (where the env declares them),
        padded as the env padded it or cut to its real rows and columns (:attr:`padded` off)."""
        num_nodes, num_edges = int(obs["num_nodes"][0]), int(obs["num_edges"][0])
        edges = obs["edge_index"][:, :num_edges]
        if self._active is not None:
            active = self._active_nodes()
            kept = active[edges[0]] & active[edges[1]]
            if not kept.all():
                obs = dict(obs)
                edges = np.compress(kept, edges, axis=1)
                padded = np.zeros_like(obs["edge_index"])
                padded[:, : edges.shape[1]] = edges
                obs["edge_index"], obs["num_edges"] = padded, np.array([edges.shape[1]], dtype=np.int64)
                if "edge_attr" in obs:
                    attr = np.zeros_like(obs["edge_attr"])
                    attr[: edges.shape[1]] = obs["edge_attr"][:num_edges][kept]
                    obs["edge_attr"] = attr
        self._edges = edges
        if self.padded:
            return obs
        real = {**obs, "x": obs["x"][:num_nodes], "edge_index": edges}
        if "edge_attr" in obs:
            real["edge_attr"] = obs["edge_attr"][: edges.shape[1]]
        return real

    def observed_edges(self) -> np.ndarray:
        """The edges the last observation showed, ``(2, E)``: the residual graph's."""
        return self._edges

    def residual_degree(self) -> np.ndarray:
        """Each node's edges in the last observation."""
        return np.bincount(self._edges[1], minlength=self.graph.num_nodes)

    def _exact_actions(self, edge_index: np.ndarray, num_nodes: int) -> np.ndarray:
        """The declared rules' exact actions on a residual graph, in the env's action codes and
        :data:`~graphtransfer.envs.protocol.LEAVE` (see :class:`~graphtransfer.envs.protocol.Rules`)."""
        rules = cast(Rules, self._rules)
        decided = rules.exact_actions(edge_index, num_nodes, self._active_nodes(), self._memo)  # type: ignore[misc]  # exact_actions is declared (see _declare)
        return np.select([decided == JOIN, decided == LEAVE], [np.int64(self._commit), np.int64(LEAVE)], self._defer)

    def use_graph(self, graph: Graph) -> None:
        """Run the episodes from the next reset on ``graph`` (a kernel of a residual graph): the
        user's env built again on it."""
        self.env = self.rebuild(graph)
        self._declare(features_of(self.env))
        self.graphs, self.graph = [graph], graph
        self._memo = {}

    def close(self) -> None:
        self.env.close()
