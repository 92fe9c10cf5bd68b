"""Message passing over a graph structure built once: the sparse fast path of the extractor.

PyG's layers rebuild their view of the graph in every call (GCN's self-loops and normalisation,
a CSR copy of the edges); a :class:`GraphStructure` builds them once per graph and every layer,
pass or rollout sample of that graph reads them. The layers below compute what PyG's
``SAGEConv``, ``GCNConv`` and ``GINConv`` compute, with their own weights (tested to 1e-5),
as one sparse product and one or two dense products per layer, with no ``(E, width)`` message
tensor and, without gradients, no temporary beyond the layer's output.

Node features are node-major ``(N, B, F)``: ``B`` feature matrices of the same graph (the
samples of one graph in a minibatch) side by side, so one sparse product over the ``(N, B·F)``
view aggregates all of them and the dense products run on the ``(N·B, F)`` view; both views
are free. ``B = 1`` is an ordinary forward. torch's sparse reductions (``torch.sparse.mm`` with
``reduce``, gradients included) have CPU kernels only; elsewhere the extractor runs PyG's layers.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import cached_property

import torch
from torch import nn
from torch_geometric.nn import GCNConv, GINConv, SAGEConv
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from graphtransfer.nn.batching import incoming_edges, to_csr_adjacency

# PyG's aggregation names → torch.sparse.mm's reductions (which have gradients on the CPU).
REDUCTIONS = {"sum": "sum", "add": "sum", "mean": "mean", "max": "amax", "min": "amin"}
ALL_ROWS = slice(None)
"""the ``rows`` of a layer call that computes every node"""
BLOCK_BYTES = 4 * 2**20
"""the output of one block of rows in a forward without gradients: it and the block's temporaries stay in cache"""


class GraphStructure:
    """One graph's adjacency, built on first use and kept for every layer, pass and sample.

    Build it once per distinct graph and hand it to :meth:`GNNExtractor.embed_samples`
    (graphtransfer.nn.extractor) for every step of that graph; nothing in it depends on the
    weights, so it stays valid across updates. Do not modify ``edge_index`` afterwards.

    The layers below read a structure only through :meth:`aggregate` and :meth:`gcn_aggregate`.
    ``bench/residual_mask.py`` runs them through the same two methods on one base graph with a
    node mask per sample (residual graphs as one product over ``(N, B * F)``): exact, and
    measured slower than the samples' disjoint union for MIS's residual graphs.

    Args:
        edge_index: ``(2, E)`` int64 directed edges (source, destination).
        num_nodes: ``N``; nodes without edges are allowed.

    Shapes:
        adjacency: ``(N, N)`` sparse CSR, row ``i`` holds ones at the sources of the edges into ``i``.
        gcn_adjacency(...): ``(N, N)`` sparse CSR, GCN's normalised weights, self-loops included.
    """

    def __init__(self, edge_index: torch.Tensor, num_nodes: int):
        if edge_index.dim() != 2 or edge_index.shape[0] != 2:
            raise ValueError(f"edge_index has shape {tuple(edge_index.shape)}; expected (2, num_edges)")
        self.edge_index, self.num_nodes = edge_index.long(), int(num_nodes)
        self._gcn: dict[tuple[bool, bool], torch.Tensor] = {}

    @cached_property
    def adjacency(self) -> torch.Tensor:
        return to_csr_adjacency(self.edge_index, self.num_nodes)

    def aggregate(self, h: torch.Tensor, reduce: str = "sum", rows: slice = ALL_ROWS) -> torch.Tensor:
        """The reduction over its in-neighbours of every node in ``rows``, all ``B`` samples at once.

        Shapes:
            h: ``(N, B, F)`` contiguous; returns ``(R, B, F)`` for the ``R`` nodes of ``rows``.
        """
        return aggregate(rows_of(self.adjacency, rows), h, reduce)

    def gcn_aggregate(self, h: torch.Tensor, conv: GCNConv, rows: slice = ALL_ROWS) -> torch.Tensor:
        """``Â h`` at ``rows``, the aggregation of ``conv``: its normalised adjacency, self-loops included."""
        return aggregate(rows_of(self.gcn_adjacency(conv.improved, conv.add_self_loops), rows), h)

    def row_blocks(self, row_bytes: int, count: int | None = None) -> list[slice]:
        """The first ``count`` nodes (all by default) in blocks whose layer output, ``row_bytes``
        per node, is about :data:`BLOCK_BYTES`; ``[ALL_ROWS]`` when one block holds all nodes."""
        count = self.num_nodes if count is None else count
        size = max(1, BLOCK_BYTES // row_bytes)
        if size >= count == self.num_nodes:
            return [ALL_ROWS]
        return [slice(start, min(start + size, count)) for start in range(0, count, size)]

    def gcn_adjacency(self, improved: bool, add_self_loops: bool) -> torch.Tensor:
        """The normalised adjacency a ``GCNConv`` with these settings builds in every call
        (PyG's ``gcn_norm``), once per setting: derived from :attr:`adjacency` without a second
        sort when the graph has no self-loops (the contract's graphs have none), by ``gcn_norm``
        otherwise. Without edge weights ``gcn_norm`` gives every self-loop weight 1 whatever
        ``improved`` says, and so does the derived form."""
        key = (improved, add_self_loops)
        if key not in self._gcn:
            plain = self.adjacency
            rows = entry_rows(plain)
            if add_self_loops and not bool((rows == plain.col_indices()).any()):
                self._gcn[key] = normalised_with_self_loops(plain, rows)
            else:
                edges, weight = gcn_norm(self.edge_index, None, self.num_nodes, improved, add_self_loops, "source_to_target", torch.float32)
                self._gcn[key] = incoming_edges(edges, self.num_nodes, weight).csr_into(0, self.num_nodes)
        return self._gcn[key]


def entry_rows(adjacency: torch.Tensor) -> torch.Tensor:
    """The row of every stored entry of a CSR matrix, ``(nnz,)``."""
    row_starts = adjacency.crow_indices()
    rows = torch.arange(row_starts.numel() - 1, device=row_starts.device)
    return torch.repeat_interleave(rows, torch.diff(row_starts))


def normalised_with_self_loops(adjacency: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """``D^-1/2 (A + I) D^-1/2`` in CSR, each row's self-loop stored last, with the degrees
    ``D`` counted on targets as ``gcn_norm`` counts them; ``adjacency`` has no self-loops.

    Shapes:
        adjacency: ``(N, N)`` CSR of ones; rows: ``(nnz,)`` from :func:`entry_rows`;
        returns ``(N, N)`` CSR with ``nnz + N`` entries.
    """
    row_starts, sources = adjacency.crow_indices(), adjacency.col_indices()
    num_nodes, stored, device = row_starts.numel() - 1, sources.numel(), sources.device
    inverse_sqrt = (torch.diff(row_starts).float() + 1).pow_(-0.5)
    new_starts = row_starts + torch.arange(num_nodes + 1, device=device)
    moved = torch.arange(stored, device=device) + rows  # each earlier row's loop shifts an entry by one
    loops = new_starts[1:] - 1
    columns = torch.empty(stored + num_nodes, dtype=sources.dtype, device=device)
    columns[moved], columns[loops] = sources, torch.arange(num_nodes, device=device)
    values = torch.empty(stored + num_nodes, device=device)
    values[moved], values[loops] = inverse_sqrt[rows] * inverse_sqrt[sources], inverse_sqrt.square()
    with warnings.catch_warnings():  # torch calls CSR support beta; the products used here are tested
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(new_starts, columns, values, (num_nodes, num_nodes), check_invariants=False)


def rows_of(adjacency: torch.Tensor, rows: slice) -> torch.Tensor:
    """The rows ``rows`` of a CSR matrix: itself for :data:`ALL_ROWS`, else a block built for the
    call (views of its columns and values and a rebased copy of its row starts: about 20 us, so
    nothing is kept between calls)."""
    return adjacency if rows == ALL_ROWS else csr_rows(adjacency, rows.start, rows.stop)


def csr_rows(adjacency: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """Rows ``start..stop`` of a CSR matrix, sharing its columns and values.

    Shapes:
        adjacency: ``(N, M)`` sparse CSR; returns ``(stop - start, M)`` sparse CSR.
    """
    row_starts = adjacency.crow_indices()
    first, last = int(row_starts[start]), int(row_starts[stop])
    columns, values = adjacency.col_indices()[first:last], adjacency.values()[first:last]
    with warnings.catch_warnings():  # torch calls CSR support beta; the products used here are tested
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(
            row_starts[start : stop + 1] - first, columns, values, (stop - start, adjacency.shape[1]), check_invariants=False
        )


def aggregate(adjacency: torch.Tensor, h: torch.Tensor, reduce: str = "sum") -> torch.Tensor:
    """Every target node's reduction over its in-neighbours, for all ``B`` feature matrices at once.

    Shapes:
        adjacency: ``(R, N)`` sparse CSR, a row per target node; h: ``(N, B, F)`` contiguous;
        returns ``(R, B, F)``.
    """
    num_nodes, samples, width = h.shape
    with warnings.catch_warnings():  # torch calls sparse CSR beta; the reductions used here are tested
        warnings.simplefilter("ignore", UserWarning)
        out = torch.sparse.mm(adjacency, h.view(num_nodes, samples * width), reduce)
    return out.view(adjacency.shape[0], samples, width)


# Each layer computes the nodes of ``rows`` (all by default) from every node's ``h``, into
# ``out`` when one is given (a forward without gradients, a block of rows at a time).


def sage_layer(
    conv: SAGEConv, h: torch.Tensor, structure: GraphStructure, rows: slice = ALL_ROWS, out: torch.Tensor | None = None
) -> torch.Tensor:
    """``lin_l(aggr_j h_j) + lin_r(h_i)``, PyG's ``SAGEConv`` without projection or normalisation.

    Shapes:
        h: ``(N, B, F)``; out: ``(R, B, F_out)`` for the ``R`` nodes of ``rows``; returns ``(R, B, F_out)``.
    """
    neighbours = structure.aggregate(h, REDUCTIONS[str(conv.aggr)], rows)
    out = linear(neighbours, conv.lin_l.weight, conv.lin_l.bias, out)
    return add_linear(out, h[rows], conv.lin_r.weight)


def gcn_layer(
    conv: GCNConv, h: torch.Tensor, structure: GraphStructure, rows: slice = ALL_ROWS, out: torch.Tensor | None = None
) -> torch.Tensor:
    """``Â h W + b`` with Â the normalised adjacency; PyG projects first, here the aggregation
    comes first (the same product, associativity) so that the bias rides in the dense product.

    Shapes:
        h: ``(N, B, F)``; out: ``(R, B, F_out)``; returns ``(R, B, F_out)``.
    """
    neighbours = structure.gcn_aggregate(h, conv, rows)
    return linear(neighbours, conv.lin.weight, conv.bias, out)


def gin_layer(
    conv: GINConv, h: torch.Tensor, structure: GraphStructure, rows: slice = ALL_ROWS, out: torch.Tensor | None = None
) -> torch.Tensor:
    """``mlp((1 + ε) h_i + Σ_j h_j)``, PyG's ``GINConv``.

    Shapes:
        h: ``(N, B, F)``; out: ``(R, B, F_out)``; returns ``(R, B, F_out)``.
    """
    summed = structure.aggregate(h, "sum", rows)
    if torch.is_grad_enabled():
        summed = summed + (1 + conv.eps) * h[rows]
    else:
        summed.add_(h[rows], alpha=1 + float(conv.eps))
    result = conv.nn(summed)
    return result if out is None else out.copy_(result)


LAYERS: dict[type[nn.Module], Callable[..., torch.Tensor]] = {SAGEConv: sage_layer, GCNConv: gcn_layer, GINConv: gin_layer}


def layer_function(conv: nn.Module) -> Callable[..., torch.Tensor] | None:
    """The structure-based form of ``conv``, or ``None`` where it has none (an aggregation
    that torch's sparse products lack); the extractor then runs PyG's own layer."""
    if isinstance(conv, SAGEConv) and (str(conv.aggr) not in REDUCTIONS or conv.project or conv.normalize or not conv.root_weight):
        return None
    return LAYERS.get(type(conv))


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, out: torch.Tensor | None = None) -> torch.Tensor:
    """``x Wᵀ + b`` over the last dimension as one GEMM on the 2-D view (``addmm`` writes the
    bias as the GEMM's initial value: no separate pass over the output), into ``out`` when given.

    Shapes:
        x: ``(..., F_in)`` contiguous; weight: ``(F_out, F_in)``; out: ``(..., F_out)``
        contiguous; returns ``(..., F_out)``.
    """
    flat, shape = x.view(-1, x.shape[-1]), (*x.shape[:-1], weight.shape[0])
    if out is None:
        result = torch.mm(flat, weight.t()) if bias is None else torch.addmm(bias, flat, weight.t())
    else:
        into = out.view(-1, weight.shape[0])
        result = torch.mm(flat, weight.t(), out=into) if bias is None else torch.addmm(bias, flat, weight.t(), out=into)
    return result.view(shape)


def add_linear(out: torch.Tensor, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``out + x Wᵀ``, accumulated by the GEMM into ``out`` itself when no gradient is needed.

    Shapes:
        out: ``(..., F_out)``; x: ``(..., F_in)``, both contiguous; returns ``out``'s shape.
    """
    flat_out, flat_x = out.view(-1, out.shape[-1]), x.view(-1, x.shape[-1])
    if torch.is_grad_enabled():
        return torch.addmm(flat_out, flat_x, weight.t()).view(out.shape)
    return flat_out.addmm_(flat_x, weight.t()).view(out.shape)


def relu(out: torch.Tensor) -> torch.Tensor:
    """``ReLU(out)``, in ``out``'s own memory when no gradient is needed."""
    return torch.relu(out) if torch.is_grad_enabled() else out.relu_()


def residual_relu(h: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``h + ReLU(out)``, in ``out``'s own memory when no gradient is needed: a fresh
    ``(N, width)`` tensor per step costs page faults as well as a pass over memory."""
    if torch.is_grad_enabled():
        return h + torch.relu(out)
    return out.relu_().add_(h)
