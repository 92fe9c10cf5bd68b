"""A node-wise policy's per-node outputs on one graph, computed part by part on a Ray cluster.

The graph is split into K parts (:mod:`graphtransfer.graphs.partition`); every step below is one
Ray task per part, and what a part sends its neighbours is only its boundary rows:

1. each part counts its nodes' degrees and sends its boundary's;
2. each part builds its nodes' MIS features (the Caro-Wei cost reads the halo's degrees,
   :func:`graphtransfer.envs.mis.node_features`), projects them and sends its boundary's rows;
3. for every message-passing layer, each part gathers its halo's rows from the boundaries its
   owners sent, runs the layer for its own nodes and sends its boundary's new rows;
4. each part runs the node head on its own nodes.

A part's state between steps (its ``(n, width)`` embeddings) and every boundary block live in
Ray's object store; the driver passes references and holds only the parts' node lists (the
partition map) and, at the end, the outputs. The numbers are the single-process forward's
(tested to 1e-5): each layer of each node reads the same rows through the same layer functions
(:mod:`graphtransfer.nn.message_passing`); only sums may add up in another order.

What it supports: node-wise policies (MIS) with GraphSAGE or GIN layers and no edge features.
GCN's normalisation reads every source's degree over the whole graph, which a part's local
structure does not hold; it is refused rather than approximated. The driver reads the graph to
partition it (the partitioner needs the whole structure); no worker holds more than its part.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from stable_baselines3.common.policies import BasePolicy
from torch import nn
from torch_geometric.nn import GCNConv

from graphtransfer.config import ModelConfig
from graphtransfer.envs.mis import UNDECIDED, caro_wei_cost, node_features
from graphtransfer.graphs import Graph
from graphtransfer.graphs.partition import Part, assign_parts, split
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

    def layer(self, index: int, h: np.ndarray, structure: GraphStructure, owned: int) -> np.ndarray:
        """Layer ``index`` for the first ``owned`` rows of ``h``, the part's own nodes, reading
        every row (the halo's too) as the extractor's layer does.

        Shapes:
            h: ``(n + halo, F)`` float32; returns ``(owned, width)``.
        """
        conv = self.extractor.convs[index]
        with torch.inference_mode():
            rows = torch.from_numpy(h)[:, None]  # (n + halo, 1, F): one sample, node-major
            out = self.layers[index](conv, rows, structure, slice(0, owned))
            out = residual_relu(rows[:owned], out) if self.extractor._residual(index) else relu(out)
            return out[:, 0].numpy()

    def sizes(self) -> ModelConfig:
        """The widths the memory guard reads (:func:`graphtransfer.solve.memory.estimate_peak_bytes`)."""
        first = next(layer for layer in self.head if isinstance(layer, nn.Linear))
        return ModelConfig(width=self.extractor.width, head_width=first.out_features)

    def outputs(self, h: np.ndarray) -> np.ndarray:
        """The node head on embeddings ``(n, width)``: ``(n, outputs_per_node)``."""
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


def residual_edges(part: Part, status: np.ndarray | None) -> np.ndarray:
    """The part's edges between undecided nodes, ``(2, E_r)`` local ids: all of them for
    ``status`` ``None`` (the first observation), else those whose both ends the local status
    ``(n + h,)`` marks undecided, as the MIS env's observation keeps them."""
    if status is None:
        return part.edge_index
    undecided = status == UNDECIDED
    return part.edge_index[:, undecided[part.edge_index[0]] & undecided[part.edge_index[1]]]


def own_degrees(part: Part, status: np.ndarray | None = None) -> np.ndarray:
    """The undecided-neighbour count of every owned node, ``(n,)``: the residual edges into it
    (both directions are stored)."""
    return np.bincount(residual_edges(part, status)[1], minlength=part.num_owned)


def boundary_degrees(part: Part, status: np.ndarray | None = None) -> np.ndarray:
    """Step 1: the degrees of the part's boundary, ``(s,)``, what its neighbours' features read."""
    return own_degrees(part, status)[part.boundary]


def first_embeddings(
    part: Part, model: NodeModel, draw: np.ndarray | tuple[int, ...], status: np.ndarray | None, *degree_blocks: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Step 2: the part's MIS features, projected.

    Args:
        draw: each owned node's uniform draw ``(n,)``, or the seed (a tuple of whole numbers)
            that, with the part's index, seeds the part's own draw.
        status: the local status ``(n + h,)`` (owned, then halo), ``None`` on the first
            observation, where every node is undecided.
        degree_blocks: :func:`boundary_degrees` of the parts in :meth:`Part.senders`.

    Returns:
        The part's embeddings ``(n, width)`` and its boundary's rows of them ``(s, width)``.
    """
    edges = residual_edges(part, status)
    degree = with_halo(part, np.bincount(edges[1], minlength=part.num_owned).astype(np.float64), degree_blocks)
    cost = caro_wei_cost(edges[::-1], degree)[: part.num_owned]  # sums over each owned node's in-neighbours
    if isinstance(draw, tuple):
        draw = np.random.default_rng([*draw, part.index]).random(part.num_owned)
    own_status = np.full(part.num_owned, UNDECIDED, dtype=np.int8) if status is None else status[: part.num_owned]
    h = model.encode(node_features(own_status, degree[: part.num_owned], cost, draw))
    return h, h[part.boundary]


def check_part_memory(part: Part, model: NodeModel) -> None:
    """Refuse, in a worker before any pass, a part whose passes would not fit the memory that worker
    has (the memory guard of a single-process solve, for the part's own and halo rows and the edges
    into its nodes): a one-line :class:`UsageError` naming the part and the fix. Run once per part
    (:func:`check_parts_fit`), not per pass: later passes would see the memory the other parts took meanwhile."""
    what = f"part {part.index} of the graph ({part.num_owned} nodes and {part.halo.size} halo nodes)"
    fix = "split the graph into more --partitions or give the workers more memory"
    check_memory(part.num_local, int(part.edge_index.shape[1]), model.sizes(), what, fix=fix)


def next_embeddings(
    part: Part, model: NodeModel, index: int, status: np.ndarray | None, h: np.ndarray, *blocks: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Step 3: layer ``index`` over the residual edges (``status`` as in :func:`first_embeddings`)
    for the part's nodes from its rows ``h`` ``(n, F)`` and its halo's (``blocks``, the boundary
    rows of the parts in :meth:`Part.senders`); the new rows ``(n, width)`` and its boundary's."""
    edges = torch.from_numpy(np.array(residual_edges(part, status)))  # a copy: the store's arrays are read-only
    out = model.layer(index, with_halo(part, h, blocks), GraphStructure(edges, part.num_local), part.num_owned)
    return out, out[part.boundary]


def part_outputs(part: Part, model: NodeModel, h: np.ndarray) -> np.ndarray:
    """Step 4: the node head on the part's embeddings, ``(n, outputs_per_node)``."""
    return model.outputs(h.copy())  # a copy: the store's arrays are read-only, the head's ReLUs run in place


def partitioned_node_outputs(
    policy: NodePolicy,
    graph: Graph,
    parts: int,
    draw: np.ndarray | None = None,
    seed: int = 0,
    ray_address: str | None = None,
) -> tuple[np.ndarray, list[Part]]:
    """The node head's outputs for every node of ``graph`` on its first MIS observation,
    computed in ``parts`` parts, one Ray task per part and step (see the module).

    Args:
        policy: a node-wise policy (:func:`node_model` says which it runs).
        parts: how many parts, 1 to the graph's node count.
        draw: every node's uniform draw ``(N,)``, as the env's observation holds it (column 4);
            ``None``: each part draws its own from ``seed`` and its index (another draw than
            the single-process env's, from the same distribution).
        ray_address: the cluster to join (``"auto"``, ``"local"``, ``host:port``); ``None``:
            the Ray instance this process already runs, else ``$RAY_ADDRESS``, else a new local one.

    Returns:
        The outputs ``(N, outputs_per_node)`` (MIS: the logits of exclude, include, defer), and
        the parts (each part's node list is the partition map).
    """
    model = node_model(policy)
    split_parts = split(graph, assign_parts(graph, parts))
    with ray_session(ray_address) as ray:
        outputs = _run_parts(ray, model, split_parts, draw, seed)
    result = np.empty((graph.num_nodes, outputs[0].shape[1]), dtype=np.float32)
    for part, rows in zip(split_parts, outputs, strict=True):
        result[part.nodes] = rows
    return result, split_parts


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


def check_parts_fit(ray, refs: list, model_ref) -> None:
    """:func:`check_part_memory` for every part, each on a worker, before the first pass."""
    gather(ray, [as_task(check_part_memory).remote(ref, model_ref) for ref in refs])


def _run_parts(ray, model: NodeModel, parts: list[Part], draw: np.ndarray | None, seed: int) -> list[np.ndarray]:
    """Steps 1-4 as Ray tasks, submitted at once: each waits only for the blocks it reads."""
    model_ref, refs = ray.put(model), [ray.put(part) for part in parts]
    check_parts_fit(ray, refs, model_ref)
    draws = [(seed,) if draw is None else ray.put(np.ascontiguousarray(draw[part.nodes], dtype=np.float64)) for part in parts]
    states = forward_refs(ray, model_ref, len(model.extractor.convs), refs, [part.senders() for part in parts], draws, [None] * len(parts))
    finish = as_task(part_outputs)
    return gather(ray, [finish.remote(ref, model_ref, h) for ref, h in zip(refs, states, strict=True)])


def forward_refs(ray, model_ref, layers: int, refs: list, senders: list[list[int]], draws: list, statuses: list) -> list:
    """Steps 1-3 submitted as Ray tasks for every part: the references to each part's last
    embeddings. ``refs`` are the parts in the object store, ``draws`` and ``statuses`` per part
    as :func:`first_embeddings` takes them (values or references)."""
    degrees = [as_task(boundary_degrees).remote(ref, status) for ref, status in zip(refs, statuses, strict=True)]
    first = as_task(first_embeddings, 2)
    states = [first.remote(ref, model_ref, draws[i], statuses[i], *[degrees[q] for q in senders[i]]) for i, ref in enumerate(refs)]
    step = as_task(next_embeddings, 2)
    for index in range(layers):
        sent = [boundary for _, boundary in states]
        states = [
            step.remote(ref, model_ref, index, statuses[i], states[i][0], *[sent[q] for q in senders[i]]) for i, ref in enumerate(refs)
        ]
    return [h for h, _ in states]


@functools.cache
def as_task(function: Callable, returns: int = 1):
    """``function`` as a Ray remote function of ``returns`` results, made once per process: each
    one made anew is pickled and exported to the cluster again on its first call."""
    return import_ray().remote(num_returns=returns)(function)


def gather(ray, refs: list) -> list:
    """``ray.get(refs)``, a task's failure raised as its own error, not Ray's wrapper with its traceback."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as err:
        raise err.cause from None
