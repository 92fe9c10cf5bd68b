"""A compact rollout's observations rebuilt on the learner's device (a GPU), bit for bit as the
host rebuilds them (:mod:`graphtransfer.training.buffers`).

PPO's update reads every sample of a rollout once per epoch, a minibatch at a time. Rebuilt on the
host, each minibatch's padded arrays (at 148,640 nodes and 8 samples: a 76 MB edge_index and a 28
MB x) are unpacked in numpy and copied to the GPU, and the GPU waits through most of an
update (``bench/gpu.py``). Here the compact stores (a bit per edge and per
element, the nonzero values, the distinct edge sets) go to the device once per rollout, and each
minibatch is unpacked there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

BIT_SHIFTS = torch.arange(7, -1, -1, dtype=torch.uint8)
"""numpy's packbits order: the first element in a byte's highest bit"""


def unpack_bits(packed: torch.Tensor, count: int) -> torch.Tensor:
    """``np.unpackbits(packed, axis=-1, count=count).view(bool)`` on ``packed``'s device.

    Shapes:
        packed: ``(..., nbytes)`` uint8; returns ``(..., count)`` bool.
    """
    bits = (packed[..., None] >> BIT_SHIFTS.to(packed.device)) & 1
    return bits.reshape(*packed.shape[:-1], -1)[..., :count].bool()


def ranks_in_rows(chosen: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The row, the column and the rank within its row of every True in ``chosen`` ``(R, C)``,
    row by row, columns in order."""
    row, column = torch.nonzero(chosen, as_tuple=True)
    counts = chosen.sum(dim=1)
    rank = torch.arange(row.numel(), device=chosen.device) - torch.repeat_interleave(torch.cumsum(counts, 0) - counts, counts)
    return row, column, rank


class DeviceEdges:
    """An :class:`~graphtransfer.training.buffers.EdgeStore` on ``device``: its sets' edges (and
    features), the step's set ids and bits."""

    def __init__(self, store: Any, device: torch.device):
        self.max_edges, self.edge_attr = store.max_edges, store.edge_attr
        self.set_ids = torch.from_numpy(store.set_ids).to(device)
        self.bits = torch.from_numpy(store.bits).to(device)
        used = np.unique(store.set_ids).tolist()
        self.edges = {i: torch.from_numpy(store.sets[i].edges()).to(device) for i in used}
        self.attr = {i: torch.from_numpy(store.sets[i].features()).to(device) for i in used} if self.edge_attr else {}

    def rebuild(self, steps: torch.Tensor, envs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``EdgeStore.rebuild_with_attr``: padded ``(B, 2, max_edges)`` int64 edge_index and
        ``(B, max_edges, F_e)`` edge_attr (``None`` without edge features)."""
        device = self.set_ids.device
        out = torch.zeros((steps.numel(), 2, self.max_edges), dtype=torch.int64, device=device)
        attr = None
        if self.edge_attr is not None:
            features, dtype = self.edge_attr
            attr = torch.zeros((steps.numel(), self.max_edges, features), dtype=_torch_dtype(dtype), device=device)
        ids = self.set_ids[steps, envs]
        for set_id in torch.unique(ids).tolist():
            rows = torch.nonzero(ids == set_id).squeeze(1)
            edges = self.edges[set_id]
            chosen = unpack_bits(self.bits[steps[rows], envs[rows]], edges.shape[1])
            row, edge, rank = ranks_in_rows(chosen)
            out[rows[row], 0, rank] = edges[0, edge]
            out[rows[row], 1, rank] = edges[1, edge]
            if attr is not None:
                attr[rows[row], rank] = self.attr[set_id][edge]
        return out, attr


class DeviceValues:
    """A :class:`~graphtransfer.training.buffers.ValueStore` (after its ``finish``) on
    ``device``: bits, counts, sources, starts, and each column's nonzero values in the key's dtype."""

    def __init__(self, store: Any, device: torch.device):
        self.shape, self.num_rows, self.dtype = store.shape, store.num_rows, _torch_dtype(store.dtype)
        self.bits = torch.from_numpy(store.bits).to(device)
        self.counts = torch.from_numpy(store.counts.astype(np.int64)).to(device)
        self.source = torch.from_numpy(store.source.astype(np.int64)).to(device)
        self.starts = torch.from_numpy(store.starts).to(device)
        self.values = [
            None if column.dtype is None else torch.from_numpy(column.chunks[0].astype(store.dtype)).to(device) for column in store.columns
        ]

    def rebuild(self, steps: torch.Tensor, envs: torch.Tensor) -> torch.Tensor:
        """``ValueStore.rebuild``: the ``(B, *shape)`` arrays of each (step, env)."""
        batch = steps.numel()
        out = torch.zeros((batch, self.num_rows, len(self.values)), dtype=self.dtype, device=self.bits.device)
        for column, values in enumerate(self.values):
            held = self.source[steps, envs, column]
            nonzero = unpack_bits(self.bits[held, envs, column], self.num_rows)
            counts = self.counts[held, envs, column]
            first = self.starts[held, envs, column] - (torch.cumsum(counts, 0) - counts)
            if values is None:  # every value was exactly one
                out[:, :, column][nonzero] = 1
                continue
            index = torch.repeat_interleave(first, counts) + torch.arange(int(counts.sum()), device=out.device)
            out[:, :, column][nonzero] = values[index]
        return out.reshape(batch, *self.shape)


def _torch_dtype(dtype: np.dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(0, dtype=dtype)).dtype
