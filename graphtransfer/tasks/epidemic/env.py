"""Epidemic control: one graph-level decision per step (a ``Discrete(3)`` action).

A susceptible-infected-susceptible (SIS) epidemic spreads over the graph, a contact network.
Each step the controller picks one measure for the whole population — none, distancing or
lockdown — which scales transmission along every edge and costs a fixed amount per step.
Reward: ``-(infected fraction after the step) - cost of the measure``, so returns compare across
graph sizes. The episode ends when nobody is infected or at the horizon.

Why this task: it is the textbook network-control problem (public-health planners, and anyone
controlling a spreading process on a network), the action is genuinely graph-level, and the
trade-off — lock down early and pay, or let it spread — has to be read off the whole graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np
from gymnasium import spaces

from graphtransfer.envs.base import GraphEnv, Graphs
from graphtransfer.envs.protocol import Head
from graphtransfer.graphs import Graph
from graphtransfer.tasks.epidemic.batched import EpidemicBatch
from graphtransfer.tasks.epidemic.step import COST, TRANSMISSION, epidemic_features, spread

MEASURES = ("none", "distancing", "lockdown")


# the fixed rules eval compares the policy with, each simulated on the same course of events as the policy
# (the env draws its randomness independently of the measures taken)
def simulate(graph: Graph, rule: Callable[[EpidemicEnv], int], seed: int = 0) -> np.ndarray:
    """Run one episode on ``graph`` taking ``rule(env)`` each step; the solution rows."""
    env = EpidemicEnv([graph])
    env.reset(seed=seed)
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(rule(env))
        done = terminated or truncated
    return env.solution()


def never(graph: Graph, seed: int = 0) -> np.ndarray:
    """No measure, ever."""
    return simulate(graph, lambda env: 0, seed)


def always_lockdown(graph: Graph, seed: int = 0) -> np.ndarray:
    """Lockdown from the first step until the epidemic is gone."""
    return simulate(graph, lambda env: MEASURES.index("lockdown"), seed)


def threshold(graph: Graph, seed: int = 0, level: float = 0.02) -> np.ndarray:
    """Lockdown while more than ``level`` of the population is infected, distancing below it."""
    return simulate(graph, lambda env: MEASURES.index("lockdown" if env.infected.mean() > level else "distancing"), seed)


class EpidemicEnv(GraphEnv):
    """Node features, ``(num_nodes, 3)``: infected, ``log(1 + degree)``, and the fraction of
    neighbours infected.

    Args:
        graphs: contact networks to sample from.
        horizon: steps per episode.
        infection: probability that one infected neighbour infects a node in one step.
        recovery: probability that an infected node recovers (and becomes susceptible) per step.
        initially_infected: fraction of nodes infected at the start (at least one node).
    """

    num_features = 3
    head = Head.GRAPH_LEVEL
    objective_name = "return: -(infected fraction + measure cost), summed over steps"
    solution_header = "step,measure,infected"
    # what the task declares (graphtransfer.envs.protocol.TaskMembers)
    baselines: ClassVar[dict] = {"threshold-2%": threshold, "never": never, "always-lockdown": always_lockdown}
    action_names = MEASURES

    batched = EpidemicBatch  # training steps its envs as one disjoint union

    def __init__(self, graphs: Graphs, horizon: int = 32, infection: float = 0.25, recovery: float = 0.2, initially_infected: float = 0.05):
        super().__init__(graphs, horizon)
        self.infection, self.recovery, self.initially_infected = infection, recovery, initially_infected
        self.action_space = spaces.Discrete(len(MEASURES))

    def _start(self) -> None:
        n = self.graph.num_nodes
        self.infected = self.np_random.random(n) < self.initially_infected
        self.infected[self.np_random.integers(n)] = True
        self.history: list[tuple[int, int, int]] = []

    def _features(self, edges: np.ndarray) -> np.ndarray:
        return epidemic_features(edges, self.infected)

    def _apply(self, action) -> float:
        measure = int(action)
        # Draw both arrays every step whatever the measure, so one seed gives one course of
        # events and measures can be compared on it.
        catch, heal = self.np_random.random(self.graph.num_nodes), self.np_random.random(self.graph.num_nodes)
        escape = 1.0 - self.infection * TRANSMISSION[measure]
        self.infected = spread(self.graph.edge_index, self.infected, escape, catch, heal, self.recovery)
        self.history.append((len(self.history), measure, int(self.infected.sum())))
        return -self.infected.mean() - COST[measure]

    def _finished(self) -> bool:
        return not self.infected.any()

    def solution(self) -> np.ndarray:
        """``(steps, 3)``: step, measure taken, infected count after it."""
        return np.array(self.history, dtype=np.int64).reshape(-1, 3)

    @staticmethod
    def objective(graph: Graph, solution: np.ndarray) -> float:
        """The episode's return (higher is better)."""
        return float(-(solution[:, 2] / graph.num_nodes + COST[solution[:, 1]]).sum())
