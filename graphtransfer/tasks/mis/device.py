"""MIS local-max passes that stay on the policy's device (a GPU): status, residual edges,
features and decisions as torch tensors, the env's own rules.

On a GPU the forwards of a solve are a small part of it: at 250k nodes the 20 passes' forwards
took about 0.1 s of a 1.3 s solve, the rest was the env's numpy work between them (the residual
graph, the features, the renumbering of the undecided nodes) and the copies to and from the
device (``bench/gpu.py``). Here each pass is a few kernels over the residual
edges, and the only copies are the graph's edges once and each pass's random draws.

The passes are :class:`~graphtransfer.tasks.mis.env.MISEnv`'s, rule for rule (with the decoding's
exact reductions in torch, :func:`reduction_actions`: no copy to the host between passes): the same random features,
drawn from the env's generator in the same order (``np_random.random(N)`` per observation), the same
residual edges in the same order, the local-max commits of
:func:`graphtransfer.nn.local_max.local_max_commits`, and at the end the env's status and
residual edges are set to where the passes left them, so the env's ``solution()``, the finishing
rule and the objective read the episode as if its ``step`` had run. Run on the CPU the passes give
the CPU path's set (tested); only float rounding of the features (torch's ``log`` against numpy's)
could ever break a tie differently.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from graphtransfer.nn.local_max import LOGIT_EPS, Until, local_max_commits, with_gumbel_noise
from graphtransfer.tasks.mis.constants import DEFER, EXCLUDE, IN_SET, INCLUDE, NUM_FEATURES, OUT, UNDECIDED


def device_passes(
    policy,
    env,
    seed: int,
    candidates: int,
    order_noise: float,
    generator: torch.Generator,
    reductions: bool = True,
    until: Until | None = None,
) -> list[float]:
    """An MIS episode of local-max passes (see :func:`graphtransfer.solve.inference.solve`), run on
    ``policy.device`` from the env's start (:meth:`~graphtransfer.envs.base.GraphEnv.begin_episode`
    with ``seed``) to its end (every node decided, or the env's horizon); returns each pass's
    reward. With ``reductions``, each pass also applies the env's exact rules
    (:func:`graphtransfer.tasks.mis.env.reduction_actions`: isolated nodes join, dominated nodes leave,
    see :func:`dominated`). ``until(undecided, degree)``, asked after every pass with the residual
    graph's undecided nodes and degrees as tensors, ends the episode there when true, as
    :func:`graphtransfer.solve.inference.solve` asks it of the env. The env is left as its own
    steps would leave it."""
    task = env.unwrapped  # the MIS env
    task.begin_episode(seed=seed)
    device, num_nodes = policy.device, task.graph.num_nodes
    status = torch.zeros(num_nodes, dtype=torch.int8, device=device)  # UNDECIDED
    edges = torch.from_numpy(task.graph.edge_index).to(device, non_blocking=True)
    edges = edges[:, torch.sort(edges[1], stable=True).indices]  # by destination, as the env keeps them (by_destination)
    triangles = reductions and task.has_triangles(task.graph.edge_index, num_nodes)  # the env's own choice, from the same edges
    rewards: list[float] = []
    degree = torch.bincount(edges[0], minlength=num_nodes)  # undecided neighbours: the features' and the rules'
    while True:
        x = node_features(status, edges, degree, task.np_random.random(num_nodes))
        joins = _pass_commits(policy, x, status, edges, candidates, order_noise, generator)
        leaves = None
        if reductions:  # isolated nodes have no neighbour to clash with; a commit on a dominated node gives way
            exact = reduction_actions(edges, degree, triangles, status == UNDECIDED)
            leaves = exact == EXCLUDE
            joining = exact == INCLUDE
            joining[joins] = True
            joins = torch.nonzero(joining & ~leaves).squeeze(1)
        status[joins] = IN_SET
        status[edges[1, status[edges[0]] == IN_SET]] = OUT  # a new member's neighbours leave (commits are never adjacent)
        if leaves is not None:
            status[leaves & (status == UNDECIDED)] = OUT
        edges = residual(edges, status)
        task.steps += 1
        rewards.append(joins.numel() / num_nodes)
        undecided = status == UNDECIDED
        if not bool(undecided.any()) or task.steps >= task.horizon:
            break
        degree = torch.bincount(edges[0], minlength=num_nodes)
        if until is not None and until(undecided, degree):
            break
    task.status, task._live = status.cpu().numpy(), edges.cpu().numpy()
    return rewards


def _pass_commits(policy, x, status, edges, candidates, order_noise, generator) -> torch.Tensor:
    """The nodes that join in this pass: the policy on the undecided nodes alone, renumbered
    ``0..U-1`` (decided nodes have no residual edge), then local-max; returns their ids."""
    active = torch.nonzero(status == UNDECIDED).squeeze(1)
    new_id = torch.full((status.numel(),), -1, dtype=torch.long, device=status.device)
    new_id[active] = torch.arange(active.numel(), device=status.device)
    compact_edges = new_id[edges]
    compact = {
        "x": x[active][None],
        "edge_index": compact_edges[None],
        "num_nodes": torch.tensor([[active.numel()]], device=status.device),
        "num_edges": torch.tensor([[edges.shape[1]]], device=status.device),
    }
    confidence = policy.get_distribution(compact).probs[0, :, INCLUDE]
    if order_noise:
        confidence = with_gumbel_noise(torch.logit(confidence, eps=LOGIT_EPS), order_noise, generator)
    return active[local_max_commits(confidence, compact_edges, candidates)]


def reduction_actions(
    edges: torch.Tensor, degree: torch.Tensor, triangles: bool = True, active: torch.Tensor | None = None
) -> torch.Tensor:
    """:func:`graphtransfer.tasks.mis.env.reduction_actions` in torch, on the edges' device, with no copy to
    the host: ``INCLUDE`` for an ``active`` node without neighbours, ``EXCLUDE`` for a node a
    neighbour dominates (:func:`dominated`; without ``triangles`` the pendants' neighbours alone,
    :func:`pendant_dominated`), ``DEFER`` elsewhere. ``active`` (default: every node) marks the
    residual graph's nodes among the episode graph's, whose decided nodes, without residual edges,
    defer: the numpy rules' answer on the residual graph renumbered, node for node.

    Shapes:
        edges ``(2, E)`` ordered by destination, both directions; degree, active ``(N,)``; returns ``(N,)`` int64.
    """
    actions = torch.full_like(degree, DEFER, dtype=torch.int64)
    actions[dominated(edges, degree) if triangles else pendant_dominated(edges, degree)] = EXCLUDE
    isolated = degree == 0
    actions[isolated if active is None else isolated & active] = INCLUDE
    return actions


def dominated(edges: torch.Tensor, degree: torch.Tensor) -> torch.Tensor:
    """:func:`graphtransfer.tasks.mis.env.dominated` in torch, on the edges' device: the nodes ``u``
    with a neighbour ``v`` whose closed neighbourhood lies inside ``u``'s (for equal ones, ``v``
    the lower id). The same bit-mask filter and neighbour-by-neighbour check; the masks hash the
    nodes differently, which changes only which pairs reach the check, not the answer.

    Shapes:
        edges ``(2, E)`` ordered by destination, both directions; degree ``(N,)``; returns ``(N,)`` bool.
    """
    num_nodes, device = degree.numel(), degree.device
    out = torch.zeros(num_nodes, dtype=torch.bool, device=device)
    src, dst = edges
    if src.numel() == 0:
        return out
    words = int(min(16, max(1, math.ceil(4 * (src.numel() / num_nodes + 1) / 64))))
    nodes = torch.arange(num_nodes, device=device)
    bit = nodes * 2654435761 % (64 * words)  # Knuth's multiplicative hash; no overflow below 2^31 nodes
    members = torch.unique(torch.cat([nodes * 64 * words + bit, dst * 64 * words + bit[src]]))  # (node, bit) of N[node], once each
    owner, member_bit = members // (64 * words), members % (64 * words)
    masks = torch.zeros(num_nodes * words, dtype=torch.int64, device=device)
    masks.index_add_(0, owner * words + member_bit // 64, torch.ones_like(member_bit) << (member_bit % 64))  # distinct bits: sum = or
    masks = masks.view(num_nodes, words)
    fits = degree[dst] <= degree[src]
    u, v = src[fits], dst[fits]
    for word in range(words):
        keep = (masks[v, word] & ~masks[u, word]) == 0
        u, v = u[keep], v[keep]
    count = degree[v]
    pair = torch.repeat_interleave(torch.arange(u.numel(), device=device), count)
    offset = torch.arange(pair.numel(), device=device) - torch.repeat_interleave(torch.cumsum(count, 0) - count, count)
    neighbour = src[(torch.cumsum(degree, 0) - degree)[v][pair] + offset]  # v's neighbours: its run of edges by destination
    keys = torch.sort(dst * num_nodes + src).values
    wanted = u[pair] * num_nodes + neighbour
    found = keys[torch.searchsorted(keys, wanted).clamp_(max=keys.numel() - 1)] == wanted
    hits = torch.zeros(u.numel(), dtype=torch.int64, device=device).index_add_(0, pair, (found | (neighbour == u[pair])).long())
    nested = hits == count
    u, v = u[nested], v[nested]
    out[u[(degree[v] < degree[u]) | (v < u)]] = True
    return out


def pendant_dominated(edges: torch.Tensor, degree: torch.Tensor) -> torch.Tensor:
    """:func:`graphtransfer.tasks.mis.domination.pendant_dominated` in torch: the nodes ``u`` with a
    neighbour ``v`` of degree 1 (for two adjacent pendants, the higher id)."""
    out = torch.zeros(degree.numel(), dtype=torch.bool, device=degree.device)
    src, dst = edges
    pendant = degree[src] == 1
    v, u = src[pendant], dst[pendant]
    out[u[(degree[v] < degree[u]) | (v < u)]] = True
    return out


def residual(edges: torch.Tensor, status: torch.Tensor) -> torch.Tensor:
    """The edges between undecided nodes, in their order: ``(2, E')``."""
    undecided = status == UNDECIDED
    return edges[:, undecided[edges[0]] & undecided[edges[1]]]


def node_features(status: torch.Tensor, edges: torch.Tensor, live_degree: torch.Tensor, draw: np.ndarray) -> torch.Tensor:
    """:func:`graphtransfer.tasks.mis.env.node_features` of the residual ``edges`` (each node's count of
    them ``live_degree``) and the pass's ``draw``, on ``status``'s device, in float64 until the
    float32 result as the env computes it.

    Shapes:
        status ``(N,)`` int8; edges ``(2, E)``; live_degree ``(N,)`` int64; draw ``(N,)``; returns ``(N, 6)`` float32.
    """
    num_nodes = status.numel()
    degree = live_degree.double()
    inverse = 1.0 / (degree + 1.0)
    cost = inverse.index_add(0, edges[0], inverse[edges[1]])
    undecided = status == UNDECIDED
    draw_t = torch.from_numpy(draw).to(status.device, non_blocking=True) * undecided
    features = torch.zeros((num_nodes, NUM_FEATURES), dtype=torch.float32, device=status.device)
    features[torch.arange(num_nodes, device=status.device), status.long()] = 1.0
    features[:, 3] = torch.log1p(degree) + 0.3 * draw_t
    features[:, 4] = draw_t
    features[:, 5] = torch.log(cost) * undecided
    return features
