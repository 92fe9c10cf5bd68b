"""K epidemic episodes stepped as one disjoint union (:class:`~graphtransfer.envs.batched.UnionBatch`):
infection passes along edges only, so :func:`~graphtransfer.tasks.epidemic.step.spread` runs once
over the union, each node escaping with its episode's measure. The per-node draws of a step (who
catches it, who heals) come from each env's own generator in the env's order, one episode at a
time (:meth:`EpidemicBatch.course`); the rest is vectorized."""

from __future__ import annotations

from typing import Protocol, cast

import numpy as np

from graphtransfer.envs.batched import Observation, UnionBatch
from graphtransfer.tasks.epidemic.step import COST, TRANSMISSION, epidemic_features, spread


class EpidemicStart(Protocol):
    """What the batch reads of an :class:`~graphtransfer.tasks.epidemic.env.EpidemicEnv`: its
    settings, and who is infected as its episode begins."""

    infection: float
    recovery: float
    infected: np.ndarray
    """``(num_nodes,)`` bool"""


class EpidemicBatch(UnionBatch):
    """The union's state: who is infected (padding nodes never are), the episodes' edges, and each
    node's episode's infection and recovery probabilities (an env's settings)."""

    def __init__(self, envs):
        super().__init__(envs)
        self.epidemics = [cast(EpidemicStart, env) for env in self.envs]
        self.infected = np.zeros(self.count * self.max_nodes, dtype=bool)
        self.edges = np.zeros((2, 0), dtype=np.int64)
        episode = np.repeat(np.arange(self.count), self.max_nodes)
        self.infection = np.array([env.infection for env in self.epidemics])[episode]
        self.recovery = np.array([env.recovery for env in self.epidemics])[episode]

    def start(self, which: np.ndarray) -> None:
        super().start(which)
        for index in np.flatnonzero(which).tolist():
            slot = self.slot(index)
            self.infected[slot] = False
            self.infected[slot.start : slot.start + int(self.size[index])] = self.epidemics[index].infected
        self.edges = self.replace_edges(self.edges, which)

    def observe(self, which: np.ndarray, out: Observation) -> None:
        edges, nodes = self.edges_of(self.edges, which), self.nodes_of(which)
        self.write_nodes("x", epidemic_features(edges, self.infected)[nodes], which, out)
        self.write_structure(edges, which, out)

    def apply(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        measure = np.asarray(actions).reshape(self.count).astype(np.int64)
        catch, heal = self.course()
        escape = 1.0 - self.infection * np.repeat(TRANSMISSION[measure], self.max_nodes)
        self.infected = spread(self.edges, self.infected, escape, catch, heal, self.recovery)
        infected = self.per_episode(self.infected)
        return -(infected / self.size) - COST[measure], infected == 0

    def course(self) -> tuple[np.ndarray, np.ndarray]:
        """Each node's ``catch`` and ``heal`` draws of this step, ``(K * max_nodes,)`` each (0 on
        padding, where nobody catches it), drawn from each env's generator as it draws them."""
        catch, heal = np.zeros(self.infected.size), np.zeros(self.infected.size)
        for index, env in enumerate(self.envs):
            real = slice(index * self.max_nodes, index * self.max_nodes + self.size[index])
            catch[real] = env.np_random.random(self.size[index])
            heal[real] = env.np_random.random(self.size[index])
        return catch, heal
