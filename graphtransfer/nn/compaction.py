"""Isolated nodes with equal features embedded once: the same outputs for a fraction of the work.

A node without edges aggregates nothing, so every layer of the extractor (input projection,
message passing, edge term) maps it to a function of its own feature row alone: isolated nodes
with equal rows have equal embeddings and equal head outputs. Residual-graph envs show many of
them: MIS's decided nodes keep their place in the observation with every edge gone and one of
two feature rows (in the set, excluded). In the stored steps of a PPO run on a 148,640-node
graph 85% of the nodes were isolated and 17% of the rows remained once each sample's equal
isolated rows were merged (``bench/training_recipe.py``).

:func:`compact_isolated` keeps every node with an edge and one representative of each sample's
distinct isolated rows, renumbered in their order (edges sorted by destination stay so), and
records how many nodes each kept row stands for. The policy expands per-node outputs back to
every node by index and pools with those counts as weights: the same outputs, values and
log-probabilities, and the same gradients (a representative's gradient is the sum of its group's),
except where the max pooling ties across groups (there torch splits the maximum's gradient among
the tied rows kept, not among all the nodes they stand for).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

MIN_NODES = 4096
"""batches of fewer real nodes are never compacted: its two dozen small ops cost 0.4 ms, a forward of 8
MIS steps of 50 nodes 0.5 ms (from 8,000 nodes on, an update of 8 steps of 1,000 nodes took 23-24 ms
merged against 28-30 ms whole)"""
MIN_SAVING = 0.25
"""compact only when at least this share of a batch's nodes would go: below it the indexing costs more than it saves"""
_HASH_MULTIPLIER = 0x100000001B3  # FNV-1a's 64-bit prime: spreads a row's 32-bit words over the key


class Compaction(NamedTuple):
    """A batch of observations with equal isolated rows merged, and how to read it back.

    Shapes:
        obs: the compacted batch in the padded layout, ``(B, K, F)`` features with ``K`` the
            most rows kept in a sample; the edges renumbered (int64, padding slots at node 0),
            everything else as it was.
        slots: ``(B, max_nodes)`` int64, each original slot's row in the compacted batch's
            ``(B * K)`` flattened rows (padding slots: a row of their own sample, masked by the reader).
        node_mask: ``(B, max_nodes)`` bool, the original batch's real nodes.
        counts: ``(B, K)`` float, the nodes each compacted slot stands for (0 in padding).
    """

    obs: dict[str, torch.Tensor]
    slots: torch.Tensor
    node_mask: torch.Tensor
    counts: torch.Tensor

    def expand(self, outputs: torch.Tensor) -> torch.Tensor:
        """Per-node outputs of the compacted batch, ``(B, K, C)``, for every slot of the
        original one, ``(B, max_nodes, C)``, zeros in padding; differentiable (the gradient of
        a kept row sums its group's)."""
        rows = outputs.reshape(-1, outputs.shape[-1])[self.slots]
        return rows if bool(self.node_mask.all()) else rows * self.node_mask[..., None]

    def real_counts(self) -> torch.Tensor:
        """The counts of the compacted batch's real rows, sample by sample as its disjoint graph
        lists them: ``(total_kept,)`` float, pooling's weights."""
        return self.counts[self.counts > 0]


def compact_isolated(obs: dict[str, torch.Tensor], min_saving: float = MIN_SAVING) -> Compaction | None:
    """The batch with each sample's isolated nodes of equal feature rows merged into one, or
    ``None`` when that would remove less than ``min_saving`` of its nodes, when the batch has
    fewer than :data:`MIN_NODES` real nodes, and where two rows share a hash but differ (merging
    stays exact by not happening).

    Shapes:
        obs: the contract's padded batch (``x`` ``(B, max_nodes, F)``, ``edge_index``
        ``(B, 2, max_edges)``, ``num_nodes`` and ``num_edges`` ``(B, 1)``), as
        :func:`~graphtransfer.nn.batching.to_disjoint` reads it.
    """
    x = obs["x"]
    batch_size, max_nodes, num_features = x.shape
    device = x.device
    num_nodes = obs["num_nodes"].reshape(batch_size).long()
    total = int(num_nodes.sum())
    if total < MIN_NODES:
        return None
    num_edges = obs["num_edges"].reshape(batch_size, 1).long()
    edge_index = obs["edge_index"][:, :, : int(num_edges.max())].long()  # the slots past every sample's edges: zeros
    real = torch.arange(max_nodes, device=device) < num_nodes[:, None]  # (B, max_nodes)
    real_edges = torch.arange(edge_index.shape[2], device=device) < num_edges
    if not bool(real_edges.all()):
        edge_index = edge_index * real_edges[:, None]  # padding edges at node 0: every index in range
    isolated = real & ~_with_edges(edge_index, real_edges, max_nodes)
    found = int(isolated.sum())
    if found == 0 or found < min_saving * total:
        return None
    members = isolated.reshape(-1).nonzero().squeeze(1)  # flat ids b * max_nodes + node, ascending
    flat_x = x.reshape(-1, num_features)
    rows = flat_x[members]
    _, group = torch.unique(_row_keys(rows, members // max_nodes), return_inverse=True)
    first = torch.full((int(group.max()) + 1,), batch_size * max_nodes, dtype=torch.long, device=device)
    first.scatter_reduce_(0, group, members, reduce="amin")  # each group's representative: its first node
    representative = first[group]
    if not torch.equal(flat_x[representative], rows):  # a hash collision (or NaN): no merging
        return None
    keep = real.reshape(-1).clone()
    keep[members] = False
    keep[first] = True
    keep = keep.view(batch_size, max_nodes)
    kept = keep.sum(1)  # (B,)
    if int(kept.sum()) > (1 - min_saving) * total:
        return None
    return _compacted(obs, x, edge_index, keep, kept, members, representative, real)


def _with_edges(edge_index: torch.Tensor, real_edges: torch.Tensor, max_nodes: int) -> torch.Tensor:
    """``(B, max_nodes)`` bool, the nodes a real edge (``real_edges`` ``(B, max_edges)``) of their sample starts or ends at."""
    batch_size = edge_index.shape[0]
    shifted = (
        edge_index if batch_size == 1 else edge_index + (torch.arange(batch_size, device=edge_index.device) * max_nodes)[:, None, None]
    )
    ends = shifted.reshape(-1) if bool(real_edges.all()) else shifted.transpose(0, 1)[:, real_edges].reshape(-1)
    touched = torch.zeros(batch_size * max_nodes, dtype=torch.bool, device=edge_index.device)
    touched[ends] = True
    return touched.view(batch_size, max_nodes)


def _row_keys(rows: torch.Tensor, sample: torch.Tensor) -> torch.Tensor:
    """A 64-bit key per (sample, feature row): equal rows of a sample share it; unequal rows
    rarely do, and :func:`compact_isolated` checks. Shapes: rows ``(R, F)``; returns ``(R,)``."""
    words = rows.float().contiguous().view(torch.int32).long()
    key = sample.clone()
    for column in words.unbind(1):  # F is a handful of features
        key = (key ^ column) * _HASH_MULTIPLIER  # wraps modulo 2^64, as a hash should
    return key


def _compacted(
    obs: dict[str, torch.Tensor],
    x: torch.Tensor,
    edge_index: torch.Tensor,
    keep: torch.Tensor,
    kept: torch.Tensor,
    members: torch.Tensor,
    representative: torch.Tensor,
    real: torch.Tensor,
) -> Compaction:
    """The :class:`Compaction` once the rows to keep are known (see :func:`compact_isolated`)."""
    batch_size, max_nodes, num_features = x.shape
    width = int(kept.max())
    position = keep.cumsum(1) - 1  # (B, max_nodes): a kept node's row in its sample's compacted rows
    source = torch.arange(batch_size * max_nodes, device=x.device)
    source[members] = representative  # each node's row is its representative's
    sample = source // max_nodes
    slots = (sample * width + position.reshape(-1)[source].clamp(min=0)).view(batch_size, max_nodes)
    kept_ids = keep.reshape(-1).nonzero().squeeze(1)  # flat ids, ascending
    compact_x = x.new_zeros((batch_size * width, num_features))
    compact_x[kept_ids // max_nodes * width + position.reshape(-1)[kept_ids]] = x.reshape(-1, num_features)[kept_ids]
    # real edges join kept nodes only; padding edges (at node 0 now) are never read
    renumbered = edge_index.new_zeros((batch_size, 2, obs["edge_index"].shape[2]))  # every slot: edge heads write into each
    renumbered[:, :, : edge_index.shape[2]] = position.gather(1, edge_index.reshape(batch_size, -1)).clamp_(min=0).view_as(edge_index)
    counts = x.new_zeros(batch_size * width, dtype=torch.float32)
    every = bool(real.all())
    counts.index_add_(0, slots.reshape(-1) if every else slots[real], torch.ones(int(real.sum()), device=x.device))
    compacted = {**obs, "x": compact_x.view(batch_size, width, num_features), "edge_index": renumbered}
    compacted["num_nodes"] = kept.to(obs["num_nodes"].dtype).view_as(obs["num_nodes"])
    return Compaction(compacted, slots, real, counts.view(batch_size, width))
