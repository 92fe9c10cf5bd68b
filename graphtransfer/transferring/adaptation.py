"""Adaptation: a transferred policy trained further, within a wall-clock budget, on pieces of the
graph it will be used on (breadth-first balls, :func:`graphtransfer.graphs.sample_subgraphs`),
with the task's own reward and the run's own algorithm."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from graphtransfer.config import RunConfig
from graphtransfer.config.schema import Device, check_budget_seconds
from graphtransfer.envs.protocol import head_of
from graphtransfer.graphs import Graph, sample_subgraphs
from graphtransfer.tasks.factory import run_env
from graphtransfer.training.callbacks import PhaseTimer, StopAtDeadline, StopOnInterrupt
from graphtransfer.training.model import check_buffer_fits, make_model

ADAPT_SUBGRAPHS = 8
"""subgraphs sampled from the destination graphs, spread over them"""

ADAPT_SUBGRAPH_NODES = 1000
"""nodes per subgraph (the whole graph where it is smaller)"""

ADAPT_ROLLOUT_STEPS = 8
"""steps per env between updates at most: short rollouts, so that a budget of seconds holds several
updates and the last one ends close to it"""

ADAPT_BATCH_SIZE = 16
"""observations per minibatch at most: an update stops at the deadline between minibatches, so
small ones keep it close (16 observations of 1,000 nodes: a fraction of a second)"""

"""a week: a longer budget is taken for a typing mistake"""

_UNLIMITED_STEPS = 10**12  # the deadline ends training, not the step count


@dataclass
class AdaptResult:
    """What one adaptation did.

    Attributes:
        steps: env steps trained (those of every rollout that went into an update).
        seconds: wall-clock time spent, the sampling and the model's construction included.
        budget: the seconds it was given.
        subgraphs: the graphs it trained on.
        interrupted: stopped by Ctrl-C (or SIGTERM, SIGHUP) before the budget ended.
    """

    steps: int
    seconds: float
    budget: float
    subgraphs: list[Graph]
    interrupted: bool = False


def check_adapt_seconds(seconds: object) -> float:
    """``seconds`` of adapt: a positive finite number, at most a week."""
    return check_budget_seconds(seconds, "adapt", 60)


def adaptation_graphs(graphs: list[Graph], seed: int, count: int = ADAPT_SUBGRAPHS, size: int = ADAPT_SUBGRAPH_NODES) -> list[Graph]:
    """``count`` breadth-first balls of ``size`` nodes, shared out over ``graphs`` in turn (at
    least one per graph), each graph's seeded by ``seed`` and its position."""
    per_graph = [count // len(graphs) + (i < count % len(graphs)) for i in range(len(graphs))]
    sampled = []
    for i, (graph, how_many) in enumerate(zip(graphs, per_graph, strict=True)):
        sampled += sample_subgraphs(graph, max(how_many, 1), size, seed + i)
    return sampled


def adapt(
    policy,
    config: RunConfig,
    graphs: list[Graph],
    seconds: float,
    seed: int = 0,
    log: Callable[[str], None] = print,
    size: int = ADAPT_SUBGRAPH_NODES,
    device: Device = "cpu",
) -> AdaptResult:
    """Train ``policy`` in place on subgraphs of ``size`` nodes of ``graphs`` (:func:`adaptation_graphs`) with the
    run's algorithm and settings (its envs and epochs, the learning rate at its start, rollouts of
    at most :data:`ADAPT_ROLLOUT_STEPS` steps per env, minibatches of at most :data:`ADAPT_BATCH_SIZE`), until ``seconds`` of wall-clock
    time have passed, the sampling and the model's construction included
    (:class:`~graphtransfer.training.callbacks.StopAtDeadline`).

    Torch threads: the process's current setting, as for fine-tuning; ``device``: where it trains
    (``cpu``, ``cuda`` or ``auto``, as :class:`graphtransfer.config.Runtime` takes it).
    """
    started = time.perf_counter()
    seconds = check_adapt_seconds(seconds)
    subgraphs = adaptation_graphs(graphs, seed, size=size)
    n_steps = min(config.ppo.n_steps, ADAPT_ROLLOUT_STEPS)
    batch_size = min(config.ppo.batch_size, ADAPT_BATCH_SIZE, n_steps * config.ppo.n_envs)
    ppo = replace(config.ppo, total_timesteps=_UNLIMITED_STEPS, seed=seed, n_steps=n_steps, batch_size=batch_size)
    ppo = replace(ppo, learning_rate=_start_value(ppo.learning_rate), clip_range=_start_value(ppo.clip_range))
    tuned = replace(config, ppo=ppo, runtime=replace(config.runtime, threads=torch.get_num_threads(), device=device))
    probe = run_env(tuned, subgraphs)
    tuned = replace(tuned, head=head_of(probe).value)
    check_buffer_fits(tuned, probe, log)
    model = make_model(tuned, subgraphs, seed)
    model.policy.load_state_dict(policy.state_dict())
    sizes = sorted({g.num_nodes for g in subgraphs})
    deadline, stop = StopAtDeadline(started, seconds), StopOnInterrupt()
    try:
        with stop.listening():  # Ctrl-C stops at the next step, the weights as the last update left them
            log(f"adapting on {len(subgraphs)} subgraphs of {sizes[0]}-{sizes[-1]} nodes for {seconds:g} s")
            model.learn(_UNLIMITED_STEPS, callback=[PhaseTimer(), deadline, stop])
    finally:
        if model.env is not None:  # make_model gives it one; SB3 types it optional
            model.env.close()
    steps = deadline.completed_steps if deadline.stopped else stop.completed_steps if stop.stopped else model.num_timesteps
    policy.load_state_dict(model.policy.state_dict())
    return AdaptResult(steps, time.perf_counter() - started, seconds, subgraphs, stop.requested)


def _start_value(value: float | str) -> float | str:
    """A schedule's starting value: ``lin_3e-4`` decays over a run's budget, and adaptation has none."""
    return float(value[4:]) if isinstance(value, str) and value.startswith("lin_") else value
