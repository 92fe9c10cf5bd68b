"""A node-wise policy's per-node outputs on one graph, computed part by part on a Ray cluster.

The graph is split into K parts (:mod:`graphtransfer.graphs.partition`); each part lives on one
Ray actor (:class:`PartWorker`, one process per part) for the whole solve, and every step below
is one call on every part's actor. What a part sends its neighbours, through Ray's object store,
is only its boundary's rows:

1. each part counts its nodes' degrees and sends its boundary's;
2. each part builds its nodes' features as the task declares them for a part
   (:attr:`PartRules.features <graphtransfer.envs.protocol.PartRules>`; MIS's Caro-Wei cost reads the
   halo's degrees), projects them and sends its boundary's rows;
3. for every message-passing layer, each part gathers its halo's rows from the boundaries its
   owners sent, runs the layer for its own nodes and sends its boundary's new rows;
4. each part runs the node head on its own nodes.

A part's embeddings and its adjacency stay in its actor between steps, never in the object store:
a part holds two ``(n + h, width)`` float32 buffers (a layer reads one and writes the other, in
row blocks) and its edges, one CSR copy of them per pass; the driver passes references and holds
only the partition map (each part's counts and senders, :class:`PartMap`) and, at the end, the
outputs. The numbers are the
single-process forward's (tested to 1e-5): each layer of each node reads the same rows through
the same layer functions (:mod:`graphtransfer.nn.message_passing`); only sums may add up in
another order.

What it supports: node-wise policies of tasks that declare ``partitioned_solve`` (MIS) with GraphSAGE or GIN layers and no edge features.
GCN's normalisation reads every source's degree over the whole graph, which a part's local
structure does not hold; it is refused rather than approximated. A part comes to its actor either from the driver, which
read and split the graph, or from the part's file of a partitioned graph on disk
(:mod:`graphtransfer.graphs.partition_files`), which the actor reads itself (the workers see the
driver's file system: one machine, or a shared file system); then no process reads the whole
graph, and no worker holds more than its part.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.policies import BasePolicy
from torch import nn
from torch_geometric.nn import GCNConv

from graphtransfer.config import ModelConfig
from graphtransfer.envs.protocol import PartRules
from graphtransfer.graphs import Graph
from graphtransfer.graphs.partition import Part, PartMap, assign_parts, split
from graphtransfer.graphs.partition_files import PartFile
from graphtransfer.nn import GNNExtractor, NodePolicy
from graphtransfer.nn.message_passing import GraphStructure, layer_function, relu, residual_relu
from graphtransfer.nn.policy import run_mlp
from graphtransfer.solve.memory import check_memory
from graphtransfer.solve.parallel import import_ray, init_ray


@dataclass
class NodeModel:
    """What a part needs of a node-wise policy: its extractor, without the structures it cached
    for graphs it saw, and its node head. Built by :func:`node_model`."""

    extractor: GNNExtractor
    head: nn.Sequential
    layers: list[Callable[..., torch.Tensor]]
    """the structure-based form of each of the extractor's convs (:func:`layer_function`)"""

    def encode(self, x: np.ndarray) -> np.ndarray:
        """The input projection of node features ``(n, F)``: ``(n, width)`` float32."""
        with torch.inference_mode():
            return self.extractor._encode(torch.from_numpy(x)).numpy()

    def layer(self, index: int, h: np.ndarray, structure: GraphStructure, out: np.ndarray) -> None:
        """Layer ``index`` for the first ``len(out)`` rows of ``h``, the part's own nodes,
        reading every row (the halo's too) as the extractor's layer does, written into ``out``
        a block of rows at a time (:meth:`GraphStructure.row_blocks`): no temporary of the
        part's size.

        Shapes:
            h: ``(n + halo, F)`` float32; out: ``(n, width)`` float32, contiguous.
        """
        conv, function = self.extractor.convs[index], self.layers[index]
        with torch.inference_mode():
            rows, into = torch.from_numpy(h)[:, None], torch.from_numpy(out)[:, None]  # (rows, 1, F): one sample, node-major
            for block in structure.row_blocks(out.shape[1] * out.itemsize, len(out)):
                written = function(conv, rows, structure, block, into[block])
                residual_relu(rows[block], written) if self.extractor._residual(index) else relu(written)

    def sizes(self) -> ModelConfig:
        """The widths the memory guard reads (:func:`graphtransfer.solve.memory.estimate_peak_bytes`)."""
        first = next(layer for layer in self.head if isinstance(layer, nn.Linear))
        return ModelConfig(width=self.extractor.width, head_width=first.out_features)

    def outputs(self, h: np.ndarray) -> np.ndarray:
        """The node head on embeddings ``(n, width)`` (left as they are): ``(n, outputs_per_node)``."""
        with torch.inference_mode():
            return run_mlp(self.head, torch.from_numpy(h)).numpy()


def node_model(policy: BasePolicy) -> NodeModel:
    """The parts of ``policy`` a partitioned forward runs; a ``ValueError`` that says why for a
    policy it cannot run exactly (see the module)."""
    if not isinstance(policy, NodePolicy):
        raise ValueError(f"a partitioned forward runs node-wise policies (MIS); this is a {type(policy).__name__}")
    extractor = policy.features_extractor
    if extractor.edge_encoders is not None:
        raise ValueError("a partitioned forward runs models without edge features; this one reads edge_attr")
    layers = []
    for conv in extractor.convs:
        function = layer_function(conv)
        if isinstance(conv, GCNConv) or function is None:
            raise ValueError(
                f"a partitioned forward runs GraphSAGE (sum, mean, max or min aggregation) and GIN layers; this model has {conv}"
            )
        layers.append(function)
    light = copy.copy(extractor)  # the same weights; the structures it cached stay behind
    light._structures = {}
    return NodeModel(light, policy.node_head, layers)


def halo_rows(part: Part, blocks: tuple[np.ndarray, ...]) -> np.ndarray:
    """The halo's rows, gathered from the boundary blocks of the parts that own them.

    Shapes:
        blocks: one ``(s_q, ...)`` block per part of :meth:`Part.senders`, in that order;
        returns ``(h, ...)`` in the part's halo order.
    """
    senders = part.senders()
    if len(blocks) != len(senders):
        raise ValueError(f"part {part.index} needs boundary blocks from parts {senders}; got {len(blocks)} blocks")
    rows = np.empty((part.halo.size, *blocks[0].shape[1:]), dtype=blocks[0].dtype)
    for owner, block in zip(senders, blocks, strict=True):
        mine = part.halo_owner == owner
        rows[mine] = block[part.halo_position[mine]]
    return rows


def with_halo(part: Part, own: np.ndarray, blocks: tuple[np.ndarray, ...]) -> np.ndarray:
    """The part's own rows followed by its halo's: ``(n + h, ...)``."""
    local = np.empty((part.num_local, *own.shape[1:]), dtype=own.dtype)
    local[: part.num_owned] = own
    if part.halo.size:
        local[part.num_owned :] = halo_rows(part, blocks)
    return local


def residual_edges(part: Part, undecided: np.ndarray) -> np.ndarray:
    """The part's edges whose both ends are ``undecided`` ``(n + h,)`` bool, as a residual
    observation keeps them: ``(2, E_r)`` local ids (the part's own array where all are)."""
    live = undecided[part.edge_index[0]] & undecided[part.edge_index[1]]
    return part.edge_index if live.all() else part.edge_index[:, live]


def check_part_memory(part: Part, model: NodeModel) -> None:
    """Refuse, in a worker before any pass, a part whose passes would not fit the memory that worker
    has (the memory guard of a single-process solve, for the part's own and halo rows and the edges
    into its nodes): a one-line :class:`UsageError` naming the part and the fix."""
    what = f"part {part.index} of the graph ({part.num_owned} nodes and {part.halo.size} halo nodes)"
    fix = "split the graph into more --partitions or give the workers more memory"
    check_memory(part.num_local, int(part.edge_index.shape[1]), model.sizes(), what, fix=fix)


class PartWorker:
    """One part of the graph and its state for a whole solve, a Ray actor (:func:`part_workers`):
    each method is one step of the module's list on this part, and returns what the part's
    neighbours read of it, its boundary's rows.

    A pass computes only its *active* rows, the undecided nodes, owned then halo, as the single
    process computes only the undecided nodes' subgraph: a decided node has no residual edge, so
    no undecided node reads its rows, and its rows in a boundary block are zeros.

    Args:
        source: the part, its edges numbered locally, or its file, which the actor reads.
        model: the policy's layers (:func:`node_model`).
        rules: the task's statuses and features on a part (its declared ``partitioned_solve``).
    """

    def __init__(self, source: Part | PartFile, model: NodeModel, rules: PartRules):
        self.source, self.model, self.rules = source, model, rules

    def load(self) -> None:
        """The part, read from its file where it has one, its state for the first pass, and its
        memory checked (:func:`check_part_memory`): a call, not the constructor, so that a
        damaged file or a part too large is this call's one error, which :func:`gather` raises."""
        part = self.source if isinstance(self.source, Part) else self.source.read()
        self.part = part
        self.status = np.full(part.num_local, self.rules.undecided, dtype=np.int8)  # (n + h,): own, then halo
        self.edges = part.edge_index  # (2, E_r): the residual edges of the pass, local ids
        self.degree = np.zeros(0, dtype=np.int64)  # (n,): the pass's undecided-neighbour counts
        self.local_degree = np.zeros(0)  # (n + h,) float64: the same with the halo's, from step 2 on
        self.active = np.arange(part.num_local)  # (a,): the pass's undecided local nodes, ascending (owned first)
        self.position = self.active  # (n + h,): each local node's active row, -1 for decided ones
        self.h = np.zeros((0, 0), dtype=np.float32)  # (a, F): the latest embeddings of the active rows
        check_part_memory(part, self.model)

    def start_pass(self, *status_blocks: np.ndarray) -> np.ndarray:
        """Step 1: the halo's status from its owners' boundaries (none on the first pass, where
        every node is undecided), the pass's residual edges and active rows, and the boundary's
        degrees ``(s,)``."""
        part = self.part
        if status_blocks:
            self.status[part.num_owned :] = halo_rows(part, status_blocks)
        self.h = np.zeros((0, 0), dtype=np.float32)  # the last pass's embeddings go before this pass's are made
        undecided = self.status == self.rules.undecided
        self.edges = residual_edges(part, undecided)
        self.degree = np.bincount(self.edges[1], minlength=part.num_owned)  # both directions are stored
        self.active = np.flatnonzero(undecided)
        self.position = np.full(part.num_local, -1, dtype=np.int64)
        self.position[self.active] = np.arange(self.active.size)
        return self.degree[part.boundary]

    @property
    def owned_active(self) -> np.ndarray:
        """The part's own undecided nodes, local ids, ascending: the first active rows."""
        return self.active[: np.searchsorted(self.active, self.part.num_owned)]

    def embed(self, draw: np.ndarray | tuple[int, ...], *degree_blocks: np.ndarray) -> np.ndarray:
        """Step 2: the task's features of the part's undecided nodes, projected, and its boundary's
        rows ``(s, width)``.

        Args:
            draw: each owned node's uniform draw ``(n,)``, or the seed (a tuple of whole numbers)
                that, with the part's index, seeds the part's own draw.
            degree_blocks: the boundary degrees of the parts in :meth:`Part.senders`.
        """
        part, mine = self.part, self.owned_active
        degree = self.local_degree = with_halo(part, self.degree.astype(np.float64), degree_blocks)
        if isinstance(draw, tuple):
            draw = np.random.default_rng([*draw, part.index]).random(part.num_owned)
        features = self.rules.features(self.edges, degree, self.status[: part.num_owned], draw)
        own = self.model.encode(features[mine])
        self.h = np.empty((self.active.size, own.shape[1]), dtype=np.float32)
        self.h[: mine.size] = own
        return self.boundary_rows(own)

    def layer(self, index: int, *blocks: np.ndarray) -> np.ndarray:
        """Step 3: layer ``index`` over the residual edges for the part's undecided nodes, from
        its rows and its halo's (``blocks``, the boundary rows of the parts in
        :meth:`Part.senders`); its boundary's new rows ``(s, width)``. The pass's adjacency is
        built on its first layer."""
        part, owned = self.part, self.owned_active.size
        if part.halo.size:
            halo = self.position[part.num_owned :]
            live = halo >= 0
            self.h[halo[live]] = halo_rows(part, blocks)[live]
        if index == 0:
            renumbered = self.edges if self.active.size == part.num_local else self.position[self.edges]
            self.structure = GraphStructure(read_only_tensor(renumbered), self.active.size)
        out = np.empty((self.active.size, self.model.extractor.width), dtype=np.float32)
        self.model.layer(index, self.h, self.structure, out[:owned])
        self.h = out
        return self.boundary_rows(out[:owned])

    def boundary_rows(self, own: np.ndarray) -> np.ndarray:
        """The boundary's rows of ``own`` (the part's undecided nodes' rows, ``(a_own, F)``):
        ``(s, F)``, zeros for decided boundary nodes."""
        rows = self.position[self.part.boundary]
        live = rows >= 0
        block = np.zeros((rows.size, *own.shape[1:]), dtype=own.dtype)
        block[live] = own[rows[live]]
        return block

    def outputs(self) -> np.ndarray:
        """Step 4: the node head on the embeddings of the part's undecided nodes (:attr:`owned_active`),
        ``(a_own, outputs_per_node)``: on the first pass, every node of the part."""
        return self.model.outputs(self.h[: self.owned_active.size])


def read_only_tensor(array: np.ndarray) -> torch.Tensor:
    """``array`` as a tensor sharing its memory, which may be the object store's read-only memory:
    nothing writes into it, and copying a part's edges would double what it holds."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The given NumPy array is not writable")
        return torch.from_numpy(array)


_ACTOR_CLASSES: dict[type, Any] = {}


def as_actor(cls: type) -> Any:
    """``cls`` as a Ray actor class, made once per process (each one made anew is exported to the cluster again)."""
    if cls not in _ACTOR_CLASSES:
        _ACTOR_CLASSES[cls] = import_ray().remote(cls)
    return _ACTOR_CLASSES[cls]


@contextmanager
def part_workers(
    ray, model: NodeModel, parts: list[Part] | list[PartFile], rules: PartRules, cls: type[PartWorker] = PartWorker
) -> Iterator[list]:
    """One actor of ``cls`` per part (the part itself or its file), spread over the cluster's nodes,
    every part read (from its file: a damaged one is refused, :func:`graphtransfer.graphs.partition_files.read_part`) and its memory checked
    (:func:`check_part_memory`) before any pass; the actors are ended on the way out, their memory
    freed at once. An actor asks a CPU to be placed and holds none while it waits, so K parts start
    on a cluster of fewer CPUs."""
    actor = as_actor(cls).options(scheduling_strategy="SPREAD")
    model_ref = ray.put(model)
    workers = [actor.remote(part, model_ref, rules) for part in parts]
    try:
        gather(ray, [worker.load.remote() for worker in workers])
        yield workers
    finally:
        for worker in workers:
            ray.kill(worker)


def forward_refs(workers: list, layers: int, senders: list[list[int]], draws: list, sent: list | None) -> list:
    """Steps 1-3 submitted on every part's actor; returns the references to each part's last
    boundary rows (the calls that complete the forward). ``draws`` per part as
    :meth:`PartWorker.embed` takes them, ``sent`` the parts' boundary status of the last pass
    (``None`` on the first)."""

    def halo(blocks: list, i: int) -> list:
        return [blocks[q] for q in senders[i]]

    degrees = [worker.start_pass.remote(*([] if sent is None else halo(sent, i))) for i, worker in enumerate(workers)]
    rows = [worker.embed.remote(draws[i], *halo(degrees, i)) for i, worker in enumerate(workers)]
    for index in range(layers):
        rows = [worker.layer.remote(index, *halo(rows, i)) for i, worker in enumerate(workers)]
    return rows


def partitioned_node_outputs(
    policy: NodePolicy,
    graph: Graph,
    parts: int,
    rules: PartRules,
    draw: np.ndarray | None = None,
    seed: int = 0,
    ray_address: str | None = None,
) -> tuple[np.ndarray, list[PartMap]]:
    """The node head's outputs for every node of ``graph`` on its task's first observation,
    computed in ``parts`` parts, one Ray actor per part (see the module).

    Args:
        policy: a node-wise policy (:func:`node_model` says which it runs).
        parts: how many parts, 1 to the graph's node count.
        rules: the task's declared ``partitioned_solve``.
        draw: every node's uniform draw ``(N,)``, as the env's observation holds it (column 4);
            ``None``: each part draws its own from ``seed`` and its index (another draw than
            the single-process env's, from the same distribution).
        ray_address: the cluster to join (``"auto"``, ``"local"``, ``host:port``); ``None``:
            the Ray instance this process already runs, else ``$RAY_ADDRESS``, else a new local one.

    Returns:
        The outputs ``(N, outputs_per_node)`` (MIS: the logits of exclude, include, defer), and
        the partition map.
    """
    model = node_model(policy)
    split_parts = split(graph, assign_parts(graph, parts))
    nodes = [part.nodes for part in split_parts]
    draws = [(seed,) if draw is None else np.ascontiguousarray(draw[owned], dtype=np.float64) for owned in nodes]
    with ray_session(ray_address) as ray, part_workers(ray, model, split_parts, rules) as workers:
        part_map = [part.outline() for part in split_parts]
        del split_parts  # the workers hold the parts' edges now
        done = forward_refs(workers, len(model.extractor.convs), [part.senders for part in part_map], draws, None)
        outputs = gather(ray, [worker.outputs.remote() for worker in workers] + done)[: len(workers)]
    result = np.empty((graph.num_nodes, outputs[0].shape[1]), dtype=np.float32)
    for owned, rows in zip(nodes, outputs, strict=True):
        result[owned] = rows
    return result, part_map


@contextmanager
def ray_session(address: str | None) -> Iterator:
    """The ``ray`` module, joined to the cluster at ``address`` unless this process already runs
    Ray (see :func:`partitioned_node_outputs`); a cluster joined here is left on the way out."""
    ray = import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        init_ray(ray, address, include_dashboard=False if address == "local" else None)
    try:
        yield ray
    finally:
        if started_here:
            ray.shutdown()


def gather(ray, refs: list) -> list:
    """``ray.get(refs)``, a task's failure raised as its own error, not Ray's wrapper with its traceback."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as err:
        raise err.cause from None
