"""The local-max decoding (graphtransfer.solve.inference) of one graph, part by part on Ray, for
any task that declares how it runs on a part (``partitioned_solve``, a
:class:`~graphtransfer.envs.protocol.PartRules`: MIS).

Each pass is the single-process pass, with every step one call on every part's actor and every exchange
a boundary block through the object store (:mod:`graphtransfer.solve.partitioned`):

1. each part's local status (its nodes', then its halo's) from its own and its senders' boundaries;
2. the forward on the residual graph (the edges between undecided nodes), layer by layer;
3. each part's confidences (the policy's probability of its commit action), its boundary's, and its
   largest ones; the driver takes the pass's threshold, the ``candidates``-th largest of all;
   with ``reductions``, the task's exact rules decide what they can of the part's undecided
   nodes from their neighbourhoods (MIS: isolated nodes join, a node with a pendant neighbour
   leaves), as the single process's passes apply them beside the policy;
4. each candidate at or above it that no undecided neighbour outranks commits (ties go to the
   lower global id, as in :func:`graphtransfer.solve.inference.local_max_commits`), halo
   neighbours read from their owners' boundary blocks; an exact join outranks every neighbour,
   an exact leave does not commit;
5. each part's nodes settle by the task's step rule (MIS: undecided nodes next to a commit, its
   own or a halo's, leave), and the exact leaves leave.

Two committed nodes are never adjacent, inside a part or across a cut, since each outranks the
other's confidence; the decoding runs until every node is decided. The same draws give the same
solution as the single-process decoding (tested); without them each part draws its own (from the
seed, the pass and the part), so the solutions differ as two seeds' do.

Where one process holds the whole graph (a graph file, not a partitioned folder), the task's
kernel (``kernel``) shrinks it before it is split, as the single-process solve does, and every
``kernel_every`` passes the graph still undecided is gathered, shrunk to its kernel again and split
anew on the same actors (:mod:`graphtransfer.solve.residual_kernels`); the solution is lifted
back through the kernels at the end. The single process stops at the task's horizon and completes
what is left with the finishing rule; this one runs passes until every node is decided (each pass
commits at least the surest node).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

import numpy as np
import torch
from stable_baselines3.common.policies import BasePolicy

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.config import KERNEL_EVERY, LOCAL_MAX_PATIENCE
from graphtransfer.envs.protocol import JOIN, LEAVE, PartRules, features_of
from graphtransfer.envs.transforms import KernelRule
from graphtransfer.errors import GraphTransferError, UsageError
from graphtransfer.graphs import Graph, from_edges, load_graph, resolve
from graphtransfer.graphs.graph import induced_subgraph
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
from graphtransfer.solve.predict import write_solution, write_solution_parts
from graphtransfer.solve.residual_kernels import Level, lifted
from graphtransfer.tasks.factory import task_of

Draws = Callable[[int], np.ndarray]
"""a pass's uniform draw of every node, ``(N,)``, given the pass's number"""
PartDraws = Callable[[int], list[np.ndarray]]
"""a pass's uniform draw of every part's nodes, one ``(n,)`` array per part, given the pass's number"""


@dataclass
class PartitionedSet:
    """What the partitioned decoding found."""

    solution: np.ndarray  # (N,) bool, the solution (MIS: the independent set)
    passes: int
    parts: list[PartMap]
    """the partition map of the graph's first split (the kernel's, where there is one)"""
    reduced: int = 0
    """the nodes the kernel decided before the first pass"""
    kernels: int = 0
    """the kernels taken of the graph still undecided between passes"""


class DecodingPartWorker(PartWorker):
    """A part's actor for the decoding: the forward's steps (:class:`PartWorker`) and the
    decoding's, each on the part's own status and embeddings, kept between them."""

    def reload(self, source: Part) -> None:
        """Another graph's part in place of this one (a kernel's, split anew), its state as for a first pass."""
        self.source = source
        self.__dict__.pop("ids", None)
        self.load()

    def caro_wei_share(self) -> float:
        """The part's share of the graph's Caro-Wei bound: the sum over its nodes of ``1 / (degree + 1)``."""
        degree = np.bincount(self.part.edge_index[1], minlength=self.part.num_owned)
        return float(np.sum(1.0 / (degree + 1.0)))

    def scores(self, candidates: int, reductions: bool) -> tuple[np.ndarray, np.ndarray, int]:
        """Step 3: the probability of the commit action of the part's nodes (kept; ``-inf`` for
        decided ones, ``inf`` where an exact rule joins); returns its boundary's, its
        ``candidates`` largest among undecided nodes (the policy's), and how many of its nodes are
        undecided."""
        part, rules = self.part, self.rules
        with torch.inference_mode():
            logits = torch.from_numpy(self.outputs())
            confidence = logits.log_softmax(dim=-1).exp()[:, rules.commit].numpy()  # as NodeWiseCategorical.probs computes it
        self.h = np.zeros((0, 0), dtype=np.float32)  # the embeddings are read
        undecided = self.status[: part.num_owned] == rules.undecided
        self.confidence = np.full(part.num_owned, -np.inf, dtype=np.float32)  # (n,)
        self.confidence[self.owned_active] = confidence
        live = self.confidence[undecided]
        top = np.sort(live)[-candidates:] if live.size > candidates else np.sort(live)
        self.leaving = np.zeros(part.num_owned, dtype=bool)
        if reductions and rules.exact_actions is not None:
            exact = rules.exact_actions(self.edges, self.local_degree, self.ids, part.num_owned)
            self.confidence[undecided & (exact == JOIN)] = np.inf  # a policy commit beside it defers, as in with_exact_actions
            self.leaving = undecided & (exact == LEAVE)
        return self.confidence[part.boundary], top, int(undecided.sum())

    def commit(self, threshold: float, *blocks: np.ndarray) -> np.ndarray:
        """Step 4: the part's nodes that commit (kept, ``(n,)`` bool), its boundary's returned;
        ``blocks`` the boundary confidences of its senders."""
        part = self.part
        local = with_halo(part, self.confidence, blocks)
        undecided = self.status == self.rules.undecided
        source, target = self.edges  # the pass's residual edges: only edges between undecided nodes can stop a commit
        outranked = (local[source] > local[target]) | ((local[source] == local[target]) & (self.ids[source] < self.ids[target]))
        beaten = np.zeros(part.num_owned, dtype=bool)
        beaten[target[outranked]] = True
        self.chosen = undecided[: part.num_owned] & (self.confidence >= threshold) & ~beaten & ~self.leaving
        return self.chosen[part.boundary]

    @functools.cached_property
    def ids(self) -> np.ndarray:
        """The global id of every local node, ``(n + h,)``: ties between confidences go to the lower."""
        return np.concatenate([self.part.nodes, self.part.halo])

    def apply(self, *blocks: np.ndarray) -> tuple[np.ndarray, int]:
        """Step 5: the commits, the part's and its senders' (``blocks``), applied to the part's
        status by the task's step rule, and the exact leaves; returns its boundary's status and how
        many of its nodes are undecided."""
        part, rules = self.part, self.rules
        own = rules.settle(part.edge_index, self.status[: part.num_owned], with_halo(part, self.chosen, blocks))
        own[self.leaving & (own == rules.undecided)] = rules.left
        self.status[: part.num_owned] = own
        return own[part.boundary], int((own == rules.undecided).sum())

    def in_set(self) -> np.ndarray:
        """The part's nodes in the solution, ``(n,)`` bool."""
        return self.status[: self.part.num_owned] == self.rules.joined

    def status_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The part's nodes (the graph's positions) and their status, for the driver's next kernel."""
        return self.part.nodes, self.status[: self.part.num_owned].copy()

    def check_set(self, *status_blocks: np.ndarray) -> tuple[str | None, int]:
        """The solution checked at the part's nodes by the task's rule, its halo's status read from
        its senders' last boundary status (``status_blocks``): what is wrong there (``None``:
        nothing), and how many of its nodes are in the solution. Every edge of the graph is an
        edge into some part's node, so the parts' answers together check the whole solution."""
        part = self.part
        if status_blocks:
            self.status[part.num_owned :] = halo_rows(part, status_blocks)
        return self.rules.check(part.edge_index, self.status, part.num_owned), int(self.in_set().sum())

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The solution's rows of the part: the graph's own id of each of its nodes ``(n,)`` and
        whether it is in the solution ``(n,)`` bool."""
        return self.part.own_ids(), self.in_set()


def partitioned_decoding(
    policy: BasePolicy,
    graph: Graph,
    parts: int,
    rules: PartRules,
    seed: int = 0,
    draws: Draws | None = None,
    ray_address: str | None = None,
    reductions: bool = True,
    kernel: KernelRule | None = None,
    kernel_every: int = KERNEL_EVERY,
) -> PartitionedSet:
    """The local-max decoding of ``policy`` on ``graph`` in ``parts`` parts (see the module).

    Args:
        policy: a node-wise policy (:func:`~graphtransfer.solve.partitioned.node_model` says which it runs).
        rules: the task's declared ``partitioned_solve``.
        draws: every node's uniform draw of each pass (the env's features), e.g. the single-process
            env's stream to compare with it; ``None``: each part draws its own from ``seed``. Only
            without a kernel: a kernel's graph has other nodes.
        ray_address: as :func:`graphtransfer.solve.partitioned.partitioned_node_outputs` takes it.
        reductions: apply the task's exact rules every pass, and its ``kernel`` (the task's
            declared rule, where it has one) before the first pass and every ``kernel_every``
            passes (0: before the first only); ``False``: the policy alone decides.
    """
    if draws is not None and kernel is not None and reductions:
        raise ValueError("draws are the given graph's: a kernel's graph has other nodes; leave out one of them")
    model = node_model(policy)
    with ray_session(ray_address) as ray:
        return _solve_in_kernels(ray, model, graph, parts, rules, seed, draws, reductions, kernel if reductions else None, kernel_every)


def _solve_in_kernels(
    ray,
    model: NodeModel,
    graph: Graph,
    parts: int,
    rules: PartRules,
    seed: int,
    draws: Draws | None,
    reductions: bool,
    kernel: KernelRule | None,
    kernel_every: int,
) -> PartitionedSet:
    """The decoding on the kernel of ``graph`` (where ``kernel`` is given and decides any node),
    shrunk to its kernel again every ``kernel_every`` passes and split anew on the same actors,
    lifted back to ``graph`` at the end (see the module)."""
    first = kernel(graph) if kernel is not None else None
    solved = graph if first is None else first.graph
    split_parts = split(solved, assign_parts(solved, min(parts, solved.num_nodes)))
    nodes = [part.nodes for part in split_parts]
    part_draws = None if draws is None else functools.partial(_split_draw, draws, nodes)
    levels: list[Level] = []
    lift, passes, layers = None, 0, len(model.extractor.convs)
    with part_workers(ray, model, split_parts, rules, DecodingPartWorker) as workers:
        part_map = first_map = [part.outline() for part in split_parts]
        del split_parts  # the workers hold the parts' edges now
        while True:
            stretch = kernel_every if kernel is not None and kernel_every else None
            run = workers[: len(part_map)]
            passes, _ = _decode(ray, run, layers, part_map, seed, part_draws, reductions, passes, stretch)
            status = np.empty(solved.num_nodes, dtype=np.int8)
            for owned, rows in gather(ray, [worker.status_rows.remote() for worker in run]):
                status[owned] = rows
            residual, undecided = induced_subgraph(solved, status == rules.undecided)
            levels.append(Level(lift, status == rules.joined, undecided))
            if not undecided.size:
                break
            made = cast(KernelRule, kernel)(
                residual, lp=False
            )  # as between the single process's passes (graphtransfer.solve.residual_kernels)
            solved, lift = (residual, None) if made is None else (made.graph, made.lifting)
            split_parts = split(solved, assign_parts(solved, min(parts, solved.num_nodes)))
            gather(ray, [worker.reload.remote(part) for worker, part in zip(workers, split_parts, strict=False)])
            part_map = [part.outline() for part in split_parts]
            del residual, made, split_parts
    chosen = lifted(levels)
    if first is not None:
        chosen = first.lift(chosen)
    return PartitionedSet(chosen, passes, first_map, 0 if first is None else first.decided, len(levels) - 1)


def _split_draw(draws: Draws, nodes: list[np.ndarray], index: int) -> list[np.ndarray]:
    """Pass ``index``'s draw of every node (one call: ``draws`` may be a stream), split by part."""
    draw = draws(index)
    return [np.ascontiguousarray(draw[owned]) for owned in nodes]


def _decode(
    ray,
    workers: list,
    layers: int,
    parts: list[PartMap],
    seed: int,
    draws: PartDraws | None,
    reductions: bool,
    passes: int = 0,
    stretch: int | None = None,
) -> tuple[int, list | None]:
    """The passes, each a round of calls on every part's actor per step, until every node is
    decided or ``stretch`` passes ran; the driver reads only counts and the largest confidences.
    ``passes``: those run before, which number this stretch's (each pass's draws differ). Returns
    the passes run in all and the references to the parts' last boundary status (``None`` where
    no pass ran)."""
    senders = [part.senders for part in parts]
    bound = sum(gather(ray, [worker.caro_wei_share.remote() for worker in workers]))
    candidates = max(1, math.ceil(LOCAL_MAX_PATIENCE * bound))
    sent, undecided, ran = None, sum(part.num_owned for part in parts), 0
    while undecided and (stretch is None or ran < stretch):
        pass_draws = [(seed, passes)] * len(parts) if draws is None else draws(passes)
        forward_refs(workers, layers, senders, pass_draws, sent)
        scores = [worker.scores.options(num_returns=3).remote(candidates, reductions) for worker in workers]
        tops = np.concatenate(gather(ray, [top for _, top, _ in scores]))
        threshold = float(np.sort(tops)[-min(candidates, tops.size)])
        chosen = [worker.commit.remote(threshold, *[scores[q][0] for q in senders[i]]) for i, worker in enumerate(workers)]
        results = [worker.apply.options(num_returns=2).remote(*[chosen[q] for q in senders[i]]) for i, worker in enumerate(workers)]
        sent = [boundary for boundary, _ in results]
        undecided, passes, ran = sum(gather(ray, [count for _, count in results])), passes + 1, ran + 1
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
    reduced: int = 0
    kernels: int = 0
    """as :class:`PartitionedSet`'s"""


def predict_partitioned(
    model: str | Path,
    graph: str | Path,
    out: str | Path,
    parts: int | None,
    ray_address: str | None,
    seed: int = 0,
    env: str | None = None,
    reductions: bool = True,
    kernel_every: int = KERNEL_EVERY,
) -> PartitionedPrediction:
    """``predict --partitions``: the model in folder ``model`` on the graph ``graph`` names, in
    parts on the Ray cluster at ``ray_address`` (the decoding of :func:`partitioned_decoding`).

    ``graph`` is a partitioned graph's folder (:mod:`graphtransfer.graphs.partition_files`; ``parts``
    ``None`` or its part count), whose parts each actor reads from its file: this process reads
    only the map, the workers check the solution (:meth:`DecodingPartWorker.check_set`) and it is
    written to ``out`` part by part from the actors (:func:`graphtransfer.solve.predict.write_solution_parts`);
    the exact rules of a pass apply, the kernel cannot (it reads the whole graph). Or it is a graph
    file, which this process reads, shrinks to the task's kernel (with ``reductions``, where the
    task declares one, again every ``kernel_every`` passes) and splits into ``parts`` parts (as
    :func:`graphtransfer.graphs.partition_files.partition_graph` would); the solution is lifted,
    checked by the task's rule on the whole graph and written here. A task that declares no
    ``partitioned_solve``, a model the partitioned forward cannot run exactly, or a part count that
    does not fit is a usage error before Ray starts."""
    loaded, task = _partitioned_policy(model, env)
    rules = cast(PartRules, task.partitioned_solve)
    header = features_of(loaded.env).solution_header
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
        sources = [PartFile(absolute, index) for index in range(len(partitioned.parts))]
        about = (partitioned.name, partitioned.num_nodes, partitioned.num_edges, partitioned.ids)
        size, passes, part_map = _solve_and_write(node_model(loaded.policy), sources, out, header, seed, ray_address, rules, reductions)
        return PartitionedPrediction(*about, size, passes, part_map)
    whole = load_graph(path)
    try:
        count = check_part_count(parts, whole.num_nodes, "--partitions")
    except ValueError as err:
        raise UsageError(str(err)) from None
    kernel = task.kernel if reductions else None
    with ray_session(ray_address) as ray:
        solved = _solve_in_kernels(ray, node_model(loaded.policy), whole, count, rules, seed, None, reductions, kernel, kernel_every)
    status = np.where(solved.solution, rules.joined, rules.left).astype(np.int8)
    problem = rules.check(whole.edge_index, status, whole.num_nodes)  # the whole graph as one part without a halo
    if problem is not None:
        raise GraphTransferError(f"the partitioned solution is {problem}, a bug, please report it")
    write_solution(out, solved.solution, header, whole.ids())
    about = (whole.name, whole.num_nodes, whole.num_edges, whole.describe_ids())
    return PartitionedPrediction(*about, int(solved.solution.sum()), solved.passes, solved.parts, solved.reduced, solved.kernels)


def _partitioned_policy(model: str | Path, env: str | None) -> tuple:
    """The model in folder ``model``, loaded once (its weights do not depend on the graph) and
    checked to run partitioned, and its task; a usage error that says why not otherwise."""
    checkpoint = read_checkpoint(model, env)
    task = task_of(checkpoint.config)
    if task.partitioned_solve is None:
        raise task.refuse("--partitions", "partitioned_solve")
    try:
        placeholder, _, _ = from_edges(np.array([0]), np.array([1]), 2, "placeholder")
        loaded = policy_for_graphs(checkpoint, [placeholder])
        node_model(loaded.policy)
    except ValueError as err:
        raise UsageError(f"--partitions: {err}") from None
    return loaded, task


def _solve_and_write(
    model: NodeModel,
    sources: list[PartFile],
    out: str | Path,
    header: str,
    seed: int,
    address: str | None,
    rules: PartRules,
    reductions: bool,
) -> tuple:
    """The decoding on one actor per part, the solution checked on the actors, and the CSV written
    from them one part at a time; returns the solution's size, the passes and the partition map."""
    with ray_session(address) as ray, part_workers(ray, model, sources, rules, DecodingPartWorker) as workers:
        part_map = [source.outline() for source in sources]
        passes, sent = _decode(ray, workers, len(model.extractor.convs), part_map, seed, None, reductions)
        senders = [part.senders for part in part_map]
        verdicts = gather(
            ray, [w.check_set.remote(*([] if sent is None else [sent[q] for q in senders[i]])) for i, w in enumerate(workers)]
        )
        problem = next((problem for problem, _ in verdicts if problem is not None), None)
        if problem is not None:
            raise GraphTransferError(f"the partitioned solution is {problem}, a bug, please report it")
        write_solution_parts(out, header, (gather(ray, [worker.rows.remote()])[0] for worker in workers))
    return sum(size for _, size in verdicts), passes, part_map
