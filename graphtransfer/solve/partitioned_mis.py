"""The MIS local-max decoding (graphtransfer.solve.inference) of one graph, part by part on Ray.

Each pass is the single-process pass, with every step one Ray task per part and every exchange
a boundary block through the object store (:mod:`graphtransfer.solve.partitioned`):

1. each part's local status (its nodes', then its halo's) from its own and its senders' boundaries;
2. the forward on the residual graph (the edges between undecided nodes), layer by layer;
3. each part's confidences (the policy's probability of including), its boundary's, and its
   largest ones; the driver takes the pass's threshold, the ``candidates``-th largest of all;
4. each candidate at or above it that no undecided neighbour outranks commits (ties go to the
   lower global id, as in :func:`graphtransfer.solve.inference.local_max_commits`), halo
   neighbours read from their owners' boundary blocks;
5. each part's undecided nodes next to a commit, its own or a halo's, are excluded.

Two committed nodes are never adjacent, inside a part or across a cut, since each outranks the
other's confidence; the decoding runs until every node is decided, so the set is independent and
maximal. The same draws give the same set as the single-process decoding (tested); without
them each part draws its own (from the seed, the pass and the part), so the sets differ as two
seeds do. The single process stops at the task's horizon and completes what is left with the
finishing rule; this one runs passes until every node is decided (each pass commits at least the
surest node).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from stable_baselines3.common.policies import BasePolicy

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.config import LOCAL_MAX_PATIENCE
from graphtransfer.envs.mis import IN_SET, INCLUDE, OUT, UNDECIDED
from graphtransfer.envs.protocol import features_of
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, from_edges
from graphtransfer.graphs.partition import Part, assign_parts, check_part_count, split
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.solve.partitioned import (
    NodeModel,
    as_task,
    check_parts_fit,
    forward_refs,
    gather,
    node_model,
    own_degrees,
    ray_session,
    with_halo,
)
from graphtransfer.solve.predict import write_solution

Draws = Callable[[int], np.ndarray]
"""a pass's uniform draw of every node, ``(N,)``, given the pass's number"""


@dataclass
class PartitionedSet:
    """What the partitioned decoding found."""

    solution: np.ndarray  # (N,) bool, the independent set
    passes: int
    parts: list[Part]


def caro_wei_share(part: Part) -> float:
    """The part's share of the graph's Caro-Wei bound: the sum over its nodes of ``1 / (degree + 1)``."""
    return float(np.sum(1.0 / (own_degrees(part) + 1.0)))


def local_status(part: Part, own: np.ndarray | None, *blocks: np.ndarray) -> np.ndarray:
    """Step 1: the part's status and its halo's, ``(n + h,)`` int8; ``own`` ``None``: the first pass."""
    if own is None:
        return np.full(part.num_local, UNDECIDED, dtype=np.int8)
    return with_halo(part, own, blocks)


def confidences(part: Part, model: NodeModel, status: np.ndarray, h: np.ndarray, candidates: int):
    """Step 3: the probability of including of the part's nodes ``(n,)`` float32 (``-inf`` for
    decided ones), its boundary's, its ``candidates`` largest among undecided nodes, and how many
    of its nodes are undecided."""
    with torch.inference_mode():
        logits = torch.from_numpy(model.outputs(h.copy()))
        confidence = logits.log_softmax(dim=-1).exp()[:, INCLUDE].numpy()  # as NodeWiseCategorical.probs computes it
    undecided = status[: part.num_owned] == UNDECIDED
    confidence = np.where(undecided, confidence, -np.inf).astype(np.float32)
    live = confidence[undecided]
    top = np.sort(live)[-candidates:] if live.size > candidates else np.sort(live)
    return confidence, confidence[part.boundary], top, int(undecided.sum())


def commits(part: Part, status: np.ndarray, confidence: np.ndarray, threshold: float, *blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step 4: the part's nodes that commit, ``(n,)`` bool, and its boundary's."""
    local = with_halo(part, confidence, blocks)
    undecided = status == UNDECIDED
    source, target = part.edge_index  # target owned; only edges between undecided nodes can stop a commit
    live = undecided[source] & undecided[target]
    source, target = source[live], target[live]
    ids = np.concatenate([part.nodes, part.halo])
    outranked = (local[source] > local[target]) | ((local[source] == local[target]) & (ids[source] < ids[target]))
    beaten = np.zeros(part.num_owned, dtype=bool)
    beaten[target[outranked]] = True
    chosen = undecided[: part.num_owned] & (confidence >= threshold) & ~beaten
    return chosen, chosen[part.boundary]


def applied(part: Part, status: np.ndarray, chosen: np.ndarray, *blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Step 5: the part's new status ``(n,)``, its boundary's, and how many of its nodes are undecided."""
    joined = with_halo(part, chosen, blocks)
    own = status[: part.num_owned].copy()
    own[chosen] = IN_SET
    source, target = part.edge_index
    near = np.zeros(part.num_owned, dtype=bool)
    near[target[joined[source]]] = True
    own[near & (own == UNDECIDED)] = OUT
    return own, own[part.boundary], int((own == UNDECIDED).sum())


def partitioned_mis(
    policy: BasePolicy,
    graph: Graph,
    parts: int,
    seed: int = 0,
    draws: Draws | None = None,
    ray_address: str | None = None,
) -> PartitionedSet:
    """The local-max MIS decoding of ``policy`` on ``graph`` in ``parts`` parts (see the module).

    Args:
        policy: a node-wise policy (:func:`~graphtransfer.solve.partitioned.node_model` says which it runs).
        draws: every node's uniform draw of each pass (the env's features), e.g. the single-process
            env's stream to compare with it; ``None``: each part draws its own from ``seed``.
        ray_address: as :func:`graphtransfer.solve.partitioned.partitioned_node_outputs` takes it.
    """
    model = node_model(policy)
    split_parts = split(graph, assign_parts(graph, parts))
    with ray_session(ray_address) as ray:
        solution, passes = _decode(ray, model, split_parts, seed, draws)
    return PartitionedSet(solution, passes, split_parts)


def _decode(ray, model: NodeModel, parts: list[Part], seed: int, draws: Draws | None) -> tuple[np.ndarray, int]:
    """The passes, each a round of Ray tasks per step; the driver reads only counts and the largest confidences."""
    model_ref, refs = ray.put(model), [ray.put(part) for part in parts]
    check_parts_fit(ray, refs, model_ref)
    senders = [part.senders() for part in parts]
    bound = sum(gather(ray, [as_task(caro_wei_share).remote(ref) for ref in refs]))
    candidates = max(1, math.ceil(LOCAL_MAX_PATIENCE * bound))
    status, scored, commit, apply = as_task(local_status), as_task(confidences, 4), as_task(commits, 2), as_task(applied, 3)
    own, sent, undecided, passes = [None] * len(parts), [None] * len(parts), sum(part.num_owned for part in parts), 0
    while undecided:
        draw = None if draws is None else draws(passes)
        pass_draws = [(seed, passes) if draw is None else ray.put(np.ascontiguousarray(draw[part.nodes])) for part in parts]
        statuses = [status.remote(ref, own[i], *[sent[q] for q in senders[i] if own[i] is not None]) for i, ref in enumerate(refs)]
        embeddings = forward_refs(ray, model_ref, len(model.extractor.convs), refs, senders, pass_draws, statuses)
        scores = [scored.remote(ref, model_ref, statuses[i], embeddings[i], candidates) for i, ref in enumerate(refs)]
        tops = np.concatenate(gather(ray, [top for _, _, top, _ in scores]))
        threshold = float(np.sort(tops)[-min(candidates, tops.size)])
        chosen = [
            commit.remote(ref, statuses[i], scores[i][0], threshold, *[scores[q][1] for q in senders[i]]) for i, ref in enumerate(refs)
        ]
        results = [apply.remote(ref, statuses[i], chosen[i][0], *[chosen[q][1] for q in senders[i]]) for i, ref in enumerate(refs)]
        own, sent = [r[0] for r in results], [r[1] for r in results]
        undecided, passes = sum(gather(ray, [r[2] for r in results])), passes + 1
    solution = np.zeros(sum(part.num_owned for part in parts), dtype=bool)
    for part, status_of_part in zip(parts, gather(ray, own), strict=True):
        solution[part.nodes] = status_of_part == IN_SET
    return solution, passes


def predict_partitioned(
    model: str | Path, graph: Graph, out: str | Path, parts: int, ray_address: str | None, seed: int = 0, env: str | None = None
) -> PartitionedSet:
    """``predict --partitions``: the MIS model in folder ``model`` on ``graph`` in ``parts`` parts
    on the Ray cluster at ``ray_address`` (:func:`partitioned_mis`), the set written to ``out`` as
    predict writes it (``node,decision``, the graph's own ids). A model of another task, or one
    the partitioned forward cannot run exactly, is a usage error before Ray starts."""
    checkpoint = read_checkpoint(model, env)
    config = checkpoint.config
    if config.env is not None or config.task != "mis":
        raise UsageError(f"--partitions solves mis; this model's task is {config.env or config.task}: drop --partitions")
    try:
        check_part_count(parts, graph.num_nodes, "--partitions")
    except ValueError as err:
        raise UsageError(str(err)) from None
    try:
        placeholder, _, _ = from_edges(np.array([0]), np.array([1]), 2, "placeholder")  # the weights do not depend on the graph
        loaded = policy_for_graphs(checkpoint, [placeholder])
        node_model(loaded.policy)
    except ValueError as err:
        raise UsageError(f"--partitions: {err}") from None
    found = partitioned_mis(loaded.policy, graph, parts, seed, ray_address=ray_address)
    write_solution(out, found.solution, features_of(loaded.env).solution_header, graph.ids())
    return found
