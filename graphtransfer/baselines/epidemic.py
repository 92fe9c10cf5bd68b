"""Fixed rules for the epidemic-control task, each simulated on the same course of events as
the policy (the env draws its randomness independently of the measures taken)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from graphtransfer.envs.epidemic import MEASURES, EpidemicEnv
from graphtransfer.graphs import Graph


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
