"""The MIS local-max decoding (graphtransfer.solve.inference) of one graph, part by part on Ray.

Each pass is the single-process pass, with every step one call on every part's actor and every exchange
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

import functools
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
from graphtransfer.graphs.partition import PartMap, assign_parts, check_part_count, split
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.solve.partitioned import PartWorker, forward_refs, gather, node_model, part_workers, ray_session, with_halo
from graphtransfer.solve.predict import write_solution

Draws = Callable[[int], np.ndarray]
"""a pass's uniform draw of every node, ``(N,)``, given the pass's number"""


@dataclass
class PartitionedSet:
    """What the partitioned decoding found."""

    solution: np.ndarray  # (N,) bool, the independent set
    passes: int
    parts: list[PartMap]


class MISPartWorker(PartWorker):
    """A part's actor for the decoding: the forward's steps (:class:`PartWorker`) and the
    decoding's, each on the part's own status and embeddings, kept between them."""

    def caro_wei_share(self) -> float:
        """The part's share of the graph's Caro-Wei bound: the sum over its nodes of ``1 / (degree + 1)``."""
        degree = np.bincount(self.part.edge_index[1], minlength=self.part.num_owned)
        return float(np.sum(1.0 / (degree + 1.0)))

    def scores(self, candidates: int) -> tuple[np.ndarray, np.ndarray, int]:
        """Step 3: the probability of including of the part's nodes (kept; ``-inf`` for decided
        ones); returns its boundary's, its ``candidates`` largest among undecided nodes, and how
        many of its nodes are undecided."""
        with torch.inference_mode():
            logits = torch.from_numpy(self.outputs())
            confidence = logits.log_softmax(dim=-1).exp()[:, INCLUDE].numpy()  # as NodeWiseCategorical.probs computes it
        self.h = np.zeros((0, 0), dtype=np.float32)  # the embeddings are read
        undecided = self.status[: self.part.num_owned] == UNDECIDED
        self.confidence = np.full(self.part.num_owned, -np.inf, dtype=np.float32)  # (n,)
        self.confidence[self.owned_active] = confidence
        live = self.confidence[undecided]
        top = np.sort(live)[-candidates:] if live.size > candidates else np.sort(live)
        return self.confidence[self.part.boundary], top, int(undecided.sum())

    def commit(self, threshold: float, *blocks: np.ndarray) -> np.ndarray:
        """Step 4: the part's nodes that commit (kept, ``(n,)`` bool), its boundary's returned;
        ``blocks`` the boundary confidences of its senders."""
        part = self.part
        local = with_halo(part, self.confidence, blocks)
        undecided = self.status == UNDECIDED
        source, target = self.edges  # the pass's residual edges: only edges between undecided nodes can stop a commit
        outranked = (local[source] > local[target]) | ((local[source] == local[target]) & (self.ids[source] < self.ids[target]))
        beaten = np.zeros(part.num_owned, dtype=bool)
        beaten[target[outranked]] = True
        self.chosen = undecided[: part.num_owned] & (self.confidence >= threshold) & ~beaten
        return self.chosen[part.boundary]

    @functools.cached_property
    def ids(self) -> np.ndarray:
        """The global id of every local node, ``(n + h,)``: ties between confidences go to the lower."""
        return np.concatenate([self.part.nodes, self.part.halo])

    def apply(self, *blocks: np.ndarray) -> tuple[np.ndarray, int]:
        """Step 5: the commits, the part's and its senders' (``blocks``), applied to the part's
        status; returns its boundary's status and how many of its nodes are undecided."""
        part = self.part
        joined = with_halo(part, self.chosen, blocks)
        own = self.status[: part.num_owned]  # a view: updated in place
        own[self.chosen] = IN_SET
        source, target = part.edge_index
        near = np.zeros(part.num_owned, dtype=bool)
        near[target[joined[source]]] = True
        own[near & (own == UNDECIDED)] = OUT
        return own[part.boundary], int((own == UNDECIDED).sum())

    def in_set(self) -> np.ndarray:
        """The part's nodes in the set, ``(n,)`` bool."""
        return self.status[: self.part.num_owned] == IN_SET


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
    with ray_session(ray_address) as ray, part_workers(ray, model, split_parts, MISPartWorker) as workers:
        part_map = [part.outline() for part in split_parts]
        del split_parts  # the workers hold the parts' edges now
        solution, passes = _decode(ray, workers, len(model.extractor.convs), part_map, seed, draws)
    return PartitionedSet(solution, passes, part_map)


def _decode(ray, workers: list, layers: int, parts: list[PartMap], seed: int, draws: Draws | None) -> tuple[np.ndarray, int]:
    """The passes, each a round of calls on every part's actor per step; the driver reads only
    counts and the largest confidences."""
    senders = [part.senders for part in parts]
    bound = sum(gather(ray, [worker.caro_wei_share.remote() for worker in workers]))
    candidates = max(1, math.ceil(LOCAL_MAX_PATIENCE * bound))
    sent, undecided, passes = None, sum(part.num_owned for part in parts), 0
    while undecided:
        draw = None if draws is None else draws(passes)
        pass_draws = [(seed, passes) if draw is None else np.ascontiguousarray(draw[part.nodes]) for part in parts]
        forward_refs(workers, layers, senders, pass_draws, sent)
        scores = [worker.scores.options(num_returns=3).remote(candidates) for worker in workers]
        tops = np.concatenate(gather(ray, [top for _, top, _ in scores]))
        threshold = float(np.sort(tops)[-min(candidates, tops.size)])
        chosen = [worker.commit.remote(threshold, *[scores[q][0] for q in senders[i]]) for i, worker in enumerate(workers)]
        results = [worker.apply.options(num_returns=2).remote(*[chosen[q] for q in senders[i]]) for i, worker in enumerate(workers)]
        sent = [boundary for boundary, _ in results]
        undecided, passes = sum(gather(ray, [count for _, count in results])), passes + 1
    solution = np.zeros(sum(part.num_owned for part in parts), dtype=bool)
    for part, chosen_of_part in zip(parts, gather(ray, [worker.in_set.remote() for worker in workers]), strict=True):
        solution[part.nodes] = chosen_of_part
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
