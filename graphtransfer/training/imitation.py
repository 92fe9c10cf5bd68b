"""Learning from a search: a trained MIS policy fine-tuned so that the probability it gives a node
to join the set (the local-max decoding's ranking) follows the sets an iterated local search finds.

PPO on graphs of 20-60 nodes teaches the policy to beat greedy, but on dense random graphs its
sets stay below what a search finds in seconds (``bench/build_zoo.py --imitate``).
Here a search runs once on each of a few dense graphs of 10^3-2 x 10^3 nodes (:func:`search_sets`); then, many times, a
random part of a search's set is taken as decided (those nodes in, their neighbours out) and the
policy sees the residual graph as the decoding would show it (the env's own observation of the
undecided nodes); the loss is the binary cross-entropy between each node's commit probability and
whether the search's set holds it. The rest of a largest set of the residual graph is what a
decoding pass should commit, whatever was decided before: the labels stay right at every stage.

The search runs a fixed number of iterations (no clock), the states are drawn from ``seed`` and
torch runs one thread, so a fine-tuning is reproducible on a machine (``bench/build_zoo.py
--imitate``, what ``make zoo`` runs for the built-in MIS model).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from graphtransfer.checkpoint import Checkpoint, state_tensors
from graphtransfer.envs.protocol import features_of
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, erdos_renyi, random_geometric
from graphtransfer.graphs.graph import induced_subgraph
from graphtransfer.solve.inference import obs_to_tensors
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.tasks import Task
from graphtransfer.tasks.factory import inference_env, task_of

IMITATION_GRAPHS = [("er", nodes, degree) for nodes in (1_000, 2_000) for degree in (16.0, 64.0, 128.0, 200.0)] + [
    ("rgg", nodes, degree) for nodes in (1_000, 2_000) for degree in (64.0, 200.0)
]
"""(family, nodes, average degree) of the graphs the built-in MIS model learns from: Erdős–Rényi (seeds 100 on) and
random geometric (seeds 200 on), dense, where its sets trailed a search's most; of 10^3 nodes and more, whose
neighbourhoods are like a large graph's: without them a dense random geometric graph stayed below greedy
(``bench/imitation_variants.py``)"""
SEARCH_ITERATIONS_PER_NODE = 20
"""the search's perturbations per node of a graph: on the Erdős–Rényi graphs sets as large as 3 s of the search on the
kernel (and 50 per node found 0-2 nodes more); 144 s for the twelve graphs on one core"""
FIRST_SEED = {"er": 100, "rgg": 200}
GENERATORS = {"er": erdos_renyi, "rgg": random_geometric}
STEPS = 2_000
"""gradient steps, one residual graph each"""
LEARNING_RATE = 3e-4
DECIDED_SHARE_MAX = 0.8
"""a state takes a uniform share in [0, this] of the search's set as decided: from the whole graph (a decoding's first
pass) to the small residual graphs of its last passes"""


@dataclass(frozen=True)
class Imitation:
    """What :func:`imitate_search` did: the fine-tuned weights and how the loss moved."""

    tensors: dict[str, torch.Tensor]
    """the policy's tensors after fine-tuning, named as the checkpoint's"""
    first_loss: float
    """the mean loss over the first tenth of the steps"""
    last_loss: float
    """the mean loss over the last tenth of the steps"""
    seconds: float


def imitation_graphs() -> list[Graph]:
    """The graphs of :data:`IMITATION_GRAPHS`, each family's seeds counted from its :data:`FIRST_SEED`."""
    made, drawn = [], dict.fromkeys(FIRST_SEED, 0)
    for family, nodes, degree in IMITATION_GRAPHS:
        made.append(GENERATORS[family](nodes, degree, FIRST_SEED[family] + drawn[family]))
        drawn[family] += 1
    return made


def search_sets(task: Task, graphs: list[Graph], iterations_per_node: int = SEARCH_ITERATIONS_PER_NODE, seed: int = 0) -> list[np.ndarray]:
    """Each graph's set by the task's declared ``teacher`` (MIS: the iterated local search from
    greedy's set, :func:`graphtransfer.tasks.mis.search.teacher_set`), ``iterations_per_node``
    perturbations per node and no time limit: ``(N,)`` bool each."""
    if task.teacher is None:
        raise task.refuse("learning from a search", "teacher")
    return [task.teacher(graph, iterations_per_node * graph.num_nodes, seed) for graph in graphs]


def residual_state(graph: Graph, chosen: np.ndarray, rng: np.random.Generator) -> tuple[Graph, np.ndarray]:
    """A residual graph of ``graph`` where a random share (up to :data:`DECIDED_SHARE_MAX`) of the
    set ``chosen`` has joined and its neighbours have left, and the rest of ``chosen`` on it:
    ``(subgraph, labels (n,) bool)``."""
    members = np.flatnonzero(chosen)
    taken = rng.choice(members, size=int(rng.uniform(0.0, DECIDED_SHARE_MAX) * members.size), replace=False)
    decided = np.zeros(graph.num_nodes, dtype=bool)
    decided[taken] = True
    src, dst = graph.edge_index
    decided[dst[decided[src]]] = True
    subgraph, nodes = induced_subgraph(graph, ~decided)
    return subgraph, chosen[nodes]


def imitate_search(
    checkpoint: Checkpoint,
    graphs: list[Graph],
    chosen: list[np.ndarray],
    steps: int = STEPS,
    learning_rate: float = LEARNING_RATE,
    seed: int = 0,
) -> Imitation:
    """Fine-tune ``checkpoint``'s MIS policy towards the sets ``chosen`` (one per graph, e.g.
    :func:`search_sets`) for ``steps`` residual graphs (:func:`residual_state`), Adam at
    ``learning_rate``, on one CPU thread; the checkpoint itself is not changed."""
    task = task_of(checkpoint.config)
    if task.teacher is None:
        raise task.refuse("learning from a search", "teacher")
    if steps < 1 or not graphs or len(graphs) != len(chosen):
        raise UsageError(
            f"imitate_search needs at least one step and one set per graph; got {steps} steps, {len(graphs)} graphs, {len(chosen)} sets"
        )
    if not math.isfinite(learning_rate) or learning_rate <= 0:
        raise UsageError(f"imitate_search: learning_rate must be a positive number; got {learning_rate}")
    for graph, found in zip(graphs, chosen, strict=True):
        if found.shape != (graph.num_nodes,) or found.dtype != np.bool_:
            raise UsageError(f"imitate_search: the set for {graph.name} must be ({graph.num_nodes},) bool; got {found.shape} {found.dtype}")
    started, threads = time.perf_counter(), torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    try:
        policy: Any = policy_for_graphs(checkpoint, graphs[:1]).policy  # a node-wise actor-critic: its distribution has probs
        policy.train()
        optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)
        losses = []
        for step in range(steps):
            which = int(rng.integers(len(graphs)))
            subgraph, labels = residual_state(graphs[which], chosen[which], rng)
            if subgraph.num_nodes == 0:
                continue
            env = inference_env(checkpoint.config, subgraph)
            observation, _ = env.reset(seed=seed + step)
            commit = features_of(env).commit_action
            env.close()
            joining = policy.get_distribution(obs_to_tensors(observation, policy.device)).probs[0, : subgraph.num_nodes, commit]
            loss = torch.nn.functional.binary_cross_entropy(joining.clamp(1e-6, 1 - 1e-6), torch.from_numpy(labels.astype(np.float32)))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        policy.eval()
        tensors = {name: tensor.detach().clone() for name, tensor in state_tensors(policy).items()}
    finally:
        torch.set_num_threads(threads)
    tenth = max(1, len(losses) // 10)
    return Imitation(
        tensors,
        float(np.mean(losses[:tenth])),
        float(np.mean(losses[-tenth:])),
        time.perf_counter() - started,
    )
