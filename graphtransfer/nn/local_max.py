"""The local-max decoding's rule for one pass: which of the surest nodes commit together.

Used by :mod:`graphtransfer.solve.inference` (every node-wise and node-choice local-max pass) and
:mod:`graphtransfer.tasks.mis.device` (MIS passes that stay on the GPU).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

Until = Callable[[Any, Any], bool]
"""``until(undecided, degree)``: asked after a pass with the residual graph's undecided nodes (``(N,)`` bool) and each
node's undecided neighbours (``(N,)`` int), numpy arrays on the host or torch tensors on the device; true ends the episode
there (:func:`graphtransfer.solve.residual_kernels.kernel_due`)"""

LOGIT_EPS = 1e-6
"""probabilities are clamped to [eps, 1 - eps] before their log-odds are taken: a sure node keeps a finite score"""


def with_gumbel_noise(scores: torch.Tensor, scale: float, generator: torch.Generator) -> torch.Tensor:
    """``scores`` plus Gumbel noise of ``scale``, drawn from ``generator``. Sorted, the result is
    a ranking drawn near the scores' own: at ``scale`` 1 a draw without replacement in
    proportion to ``exp(scores)`` (the Gumbel-max trick), flatter above 1, sharper below."""
    uniform = torch.rand(scores.shape, generator=generator, device=scores.device).clamp_(1e-20, 1.0)
    return scores - scale * torch.log(-torch.log(uniform))


def local_max_commits(
    confidence: torch.Tensor, edge_index: torch.Tensor, candidates: int, hops: int = 1, through: torch.Tensor | None = None
) -> torch.Tensor:
    """The nodes that commit in one pass of the local-max decoding: of the ``candidates`` nodes
    with the highest ``confidence`` (the policy's probability of committing), each one whose
    confidence is higher than every neighbour's, ties going to the lower id.

    The nodes that commit are never adjacent, so none is rolled back, and the surest node always
    commits, so every pass decides something, on any graph. It is greedy in the policy's order,
    done in parallel as Luby's algorithm does with random priorities: the policy, not chance,
    picks who goes first, and the next pass ranks again what is left. The number of candidates
    is the patience: a node commits only when it is among the surest of the whole graph, not
    merely of its neighbourhood. The decoding keeps one count of candidates for the whole episode
    (:func:`graphtransfer.solve.inference.local_max_candidates`), so the passes do not grow with the graph and the last, small
    passes go fast; a share of the nodes still undecided instead took up to three times the
    passes for the same sets (``bench/transfer_quality.py``).

    ``hops`` above 1: a candidate commits where it outranks every node within that many hops,
    beyond its neighbours only along the ``through`` nodes (``(N,)`` bool; :func:`_local_max_within`),
    for node choices whose effects reach the neighbours' neighbours (a pick that dominates or
    covers its neighbourhood: two picks interact through a node still open to both).

    Shapes:
        confidence: ``(N,)``; edge_index: ``(2, E)`` directed edges (both directions);
        returns ``(N,)`` bool.
    """
    count = min(candidates, confidence.numel())
    if count == 0:
        return torch.zeros_like(confidence, dtype=torch.bool)
    if hops > 1:
        return _local_max_within(confidence, edge_index, count, hops, through)
    candidate = confidence >= torch.topk(confidence, count).values[-1]
    src, dst = edge_index[:, candidate[edge_index[0]]]  # only a candidate's edges can stop it: a few % of E
    beaten_by = (confidence[dst] > confidence[src]) | ((confidence[dst] == confidence[src]) & (dst < src))
    beaten = torch.zeros_like(candidate)
    beaten[src[beaten_by]] = True
    return candidate & ~beaten


def _local_max_within(
    confidence: torch.Tensor, edge_index: torch.Tensor, count: int, hops: int, through: torch.Tensor | None
) -> torch.Tensor:
    """Of the ``count`` nodes ranked highest (by ``confidence``, ties to the lower id), those ranked
    above every node within ``hops`` hops, beyond the first hop along ``through`` nodes only
    (``None``: any): each hop spreads the best rank one step further."""
    order = torch.argsort(confidence, descending=True, stable=True)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel(), device=order.device)
    src, dst = edge_index
    best = rank.scatter_reduce(0, dst, rank[src], reduce="amin")
    if through is not None:
        src, dst = edge_index[:, through[edge_index[0]]]
    for _ in range(hops - 1):
        best = best.scatter_reduce(0, dst, best[src], reduce="amin")
    return (rank < count) & (best == rank)
