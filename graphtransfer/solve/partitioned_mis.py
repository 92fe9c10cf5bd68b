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
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch
from stable_baselines3.common.policies import BasePolicy

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.config import LOCAL_MAX_PATIENCE
from graphtransfer.envs.protocol import features_of
from graphtransfer.errors import GraphTransferError, UsageError
from graphtransfer.graphs import Graph, from_edges, load_graph, resolve
from graphtransfer.graphs.partition import Part, PartMap, assign_parts, check_part_count, split
from graphtransfer.graphs.partition_files import PartFile, check_part_files, read_partition_map
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.solve.partitioned import (
    NodeModel,
    PartWorker,
    forward_refs,
    gather,
    halo_rows,
    node_model,
    part_workers,
    ray_session,
    with_halo,
)
from graphtransfer.solve.predict import write_solution_parts
from graphtransfer.tasks.factory import task_of
from graphtransfer.tasks.mis.env import IN_SET, INCLUDE, OUT, UNDECIDED

Draws = Callable[[int], np.ndarray]
"""a pass's uniform draw of every node, ``(N,)``, given the pass's number"""
PartDraws = Callable[[int], list[np.ndarray]]
"""a pass's uniform draw of every part's nodes, one ``(n,)`` array per part, given the pass's number"""


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

    def check_set(self, *status_blocks: np.ndarray) -> tuple[bool, bool, int]:
        """The set checked on the part's edges, its halo's status read from its senders' last
        boundary status (``status_blocks``): whether no edge into the part's nodes joins two nodes
        of the set (independent), whether each of its nodes outside the set has a neighbour in it
        (maximal), and how many of its nodes are in the set. Every edge of the graph is an edge
        into some part's node, so the parts' answers together check the whole set."""
        part = self.part
        if status_blocks:
            self.status[part.num_owned :] = halo_rows(part, status_blocks)
        chosen = self.status == IN_SET
        source, target = part.edge_index
        covered = chosen[: part.num_owned].copy()
        covered[target[chosen[source]]] = True
        return not bool((chosen[source] & chosen[target]).any()), bool(covered.all()), int(chosen[: part.num_owned].sum())

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The solution's rows of the part: the graph's own id of each of its nodes ``(n,)`` and
        whether it is in the set ``(n,)`` bool."""
        return self.part.own_ids(), self.in_set()


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
    nodes = [part.nodes for part in split_parts]
    part_draws = None if draws is None else functools.partial(_split_draw, draws, nodes)
    with ray_session(ray_address) as ray, part_workers(ray, model, split_parts, MISPartWorker) as workers:
        part_map = [part.outline() for part in split_parts]
        del split_parts  # the workers hold the parts' edges now
        passes, _ = _decode(ray, workers, len(model.extractor.convs), part_map, seed, part_draws)
        chosen = gather(ray, [worker.in_set.remote() for worker in workers])
    solution = np.zeros(graph.num_nodes, dtype=bool)
    for owned, chosen_of_part in zip(nodes, chosen, strict=True):
        solution[owned] = chosen_of_part
    return PartitionedSet(solution, passes, part_map)


def _split_draw(draws: Draws, nodes: list[np.ndarray], index: int) -> list[np.ndarray]:
    """Pass ``index``'s draw of every node (one call: ``draws`` may be a stream), split by part."""
    draw = draws(index)
    return [np.ascontiguousarray(draw[owned]) for owned in nodes]


def _decode(ray, workers: list, layers: int, parts: list[PartMap], seed: int, draws: PartDraws | None) -> tuple[int, list | None]:
    """The passes, each a round of calls on every part's actor per step; the driver reads only
    counts and the largest confidences. Returns the passes run and the references to the parts'
    last boundary status (``None`` where no pass ran)."""
    senders = [part.senders for part in parts]
    bound = sum(gather(ray, [worker.caro_wei_share.remote() for worker in workers]))
    candidates = max(1, math.ceil(LOCAL_MAX_PATIENCE * bound))
    sent, undecided, passes = None, sum(part.num_owned for part in parts), 0
    while undecided:
        pass_draws = [(seed, passes)] * len(parts) if draws is None else draws(passes)
        forward_refs(workers, layers, senders, pass_draws, sent)
        scores = [worker.scores.options(num_returns=3).remote(candidates) for worker in workers]
        tops = np.concatenate(gather(ray, [top for _, top, _ in scores]))
        threshold = float(np.sort(tops)[-min(candidates, tops.size)])
        chosen = [worker.commit.remote(threshold, *[scores[q][0] for q in senders[i]]) for i, worker in enumerate(workers)]
        results = [worker.apply.options(num_returns=2).remote(*[chosen[q] for q in senders[i]]) for i, worker in enumerate(workers)]
        sent = [boundary for boundary, _ in results]
        undecided, passes = sum(gather(ray, [count for _, count in results])), passes + 1
    return passes, sent


@dataclass
class PartitionedPrediction:
    """What ``predict --partitions`` solved and wrote (:func:`predict_partitioned`)."""

    graph: str
    num_nodes: int
    num_edges: int
    ids: str
    """how the graph names its nodes (:meth:`Graph.describe_ids`)"""
    size: int
    passes: int
    parts: list[PartMap]


def predict_partitioned(
    model: str | Path, graph: str | Path, out: str | Path, parts: int | None, ray_address: str | None, seed: int = 0, env: str | None = None
) -> PartitionedPrediction:
    """``predict --partitions``: the MIS model in folder ``model`` on the graph ``graph`` names, in
    parts on the Ray cluster at ``ray_address`` (the decoding of :func:`partitioned_mis`).

    ``graph`` is a partitioned graph's folder (:mod:`graphtransfer.graphs.partition_files`; ``parts``
    ``None`` or its part count), whose parts each actor reads from its file: this process reads
    only the map. Or it is a graph file, which this process reads and splits into ``parts`` parts
    (as :func:`graphtransfer.graphs.partition_files.partition_graph` would) and hands to the actors,
    keeping only the map. Either way the workers check the set (independent and maximal across
    the cut, :meth:`MISPartWorker.check_set`) and the solution is written to ``out`` part by part
    from the actors (:func:`graphtransfer.solve.predict.write_solution_parts`). A model of another
    task, one the partitioned forward cannot run exactly, or a part count that does not fit is a
    usage error before Ray starts."""
    loaded = _partitioned_policy(model, env)
    path = resolve(graph)
    if path.is_dir():
        partitioned = read_partition_map(path)
        if parts is not None and parts != len(partitioned.parts):
            raise UsageError(
                f"--partitions {parts}: {path} holds the graph in {len(partitioned.parts)} parts; pass --partitions "
                f"{len(partitioned.parts)} or drop it, or partition the graph again with graphtransfer graphs partition"
            )
        check_part_files(partitioned)
        absolute = replace(partitioned, folder=path.resolve())  # the actors' working folder may differ from this one
        sources: list[Part] | list[PartFile] = [PartFile(absolute, index) for index in range(len(partitioned.parts))]
        about = (partitioned.name, partitioned.num_nodes, partitioned.num_edges, partitioned.ids)
    else:
        whole = load_graph(path)
        try:
            count = check_part_count(parts, whole.num_nodes, "--partitions")
        except ValueError as err:
            raise UsageError(str(err)) from None
        sources = split(whole, assign_parts(whole, count))
        about = (whole.name, whole.num_nodes, whole.num_edges, whole.describe_ids())
        del whole  # the parts hold what the solve needs
    header = features_of(loaded.env).solution_header
    found = _solve_and_write(node_model(loaded.policy), sources, out, header, seed, ray_address)
    return PartitionedPrediction(*about, *found)


def _partitioned_policy(model: str | Path, env: str | None):
    """The MIS model in folder ``model``, loaded once (its weights do not depend on the graph) and
    checked to run partitioned; a usage error that says why not otherwise."""
    checkpoint = read_checkpoint(model, env)
    config = checkpoint.config
    task = task_of(config)
    if not task.partitioned_solve:
        raise task.refuse("--partitions", "partitioned_solve")
    try:
        placeholder, _, _ = from_edges(np.array([0]), np.array([1]), 2, "placeholder")
        loaded = policy_for_graphs(checkpoint, [placeholder])
        node_model(loaded.policy)
    except ValueError as err:
        raise UsageError(f"--partitions: {err}") from None
    return loaded


def _solve_and_write(
    model: NodeModel, sources: list[Part] | list[PartFile], out: str | Path, header: str, seed: int, address: str | None
) -> tuple:
    """The decoding on one actor per part, the set checked on the actors, and the CSV written
    from them one part at a time; returns the set's size, the passes and the partition map."""
    with ray_session(address) as ray, part_workers(ray, model, sources, MISPartWorker) as workers:
        part_map = [source.outline() for source in sources]
        sources.clear()  # the caller's list too: the workers hold the parts now
        passes, sent = _decode(ray, workers, len(model.extractor.convs), part_map, seed, None)
        senders = [part.senders for part in part_map]
        verdicts = gather(
            ray, [w.check_set.remote(*([] if sent is None else [sent[q] for q in senders[i]])) for i, w in enumerate(workers)]
        )
        if not all(independent for independent, _, _ in verdicts):
            raise GraphTransferError("the partitioned set is not independent, a bug, please report it")
        if not all(maximal for _, maximal, _ in verdicts):
            raise GraphTransferError("the partitioned set is not maximal, a bug, please report it")
        write_solution_parts(out, header, (gather(ray, [worker.rows.remote()])[0] for worker in workers))
    return sum(size for _, _, size in verdicts), passes, part_map
