"""Residual graphs in the PPO update: their disjoint union vs one masked product on the base graph.

MIS observes the residual graph (the edges among undecided nodes), so the samples of a minibatch
all hold different edges, and the extractor's structure path builds their disjoint union per
minibatch. The alternative measured here runs them as one product over ``(N, B * width)`` on the
base graph's cached structure with a node mask per sample (:class:`ResidualStructure`, through
the same layer functions). It gives the same numbers (checked before every timing, forward and
gradients) but is not faster where it matters, so the package does not use it
(bench/RESULTS.md, "Training against ../shared/plain-recipe (issue 16)"): the product spans every
base edge, kept or not, at the same cost per column as the union's, and the masks add passes
over the ``(N, B, width)`` activations, while building the union it replaces costs 1-8 % of a forward
and backward; at best it ties (GCN with every edge kept), and MIS minibatches keep far fewer edges (an
untrained policy keeps 13-19 % of them per step, 1,000-148,640 nodes).

Timed the way the update runs: forward and backward of the node embeddings, one torch thread,
the base graph's structure built beforehand (as the extractor caches it), process (CPU)
seconds, medians; MIS-like samples of an Erdős–Rényi graph of average degree 4, each dropping a
random share of its nodes (uniform in 0-70 %, or one share for every sample with ``--sweep``).

    .venv/bin/python -m bench.residual_mask [--sizes 10000:32,148640:8] [--repeats 3] [--sweep 0,0.15,0.3]

Prints a Markdown table for bench/RESULTS.md. Not part of the test run.
"""

from __future__ import annotations  # noqa: I001 (graphtransfer first: it turns on torch's huge pages, as in training)

import graphtransfer  # noqa: F401
import argparse
import statistics
import time
from functools import cached_property

import numpy as np
import torch
from torch_geometric.nn import GCNConv

from graphtransfer.envs.contract import observation_space
from graphtransfer.tasks.factory import make_env
from graphtransfer.graphs import erdos_renyi
from graphtransfer.nn.batching import to_disjoint
from graphtransfer.nn.extractor import GNNExtractor
from graphtransfer.nn.message_passing import ALL_ROWS, GraphStructure

MODELS = {
    "SAGE max 3x64": {},
    "GCN 2x64, no input projection": {"conv": "gcn", "num_layers": 2, "project_input": False},
}
NUM_FEATURES = 5  # MIS's node features


class ResidualStructure:
    """``B`` residual graphs of one base graph, on the base's :class:`GraphStructure` with a node
    mask per sample: sample ``b`` holds exactly the base's edges between its kept nodes (what
    :func:`residual_nodes` checks). A node not kept receives and sends nothing: its aggregation
    is the empty one (0) and its GCN degree its self-loop alone. Implements what the layer
    functions read of a structure (``aggregate``, ``gcn_aggregate``, ``row_blocks``), every
    node at once (one block), for GCN with self-loops on a base without them.

    Shapes:
        nodes: ``(N, B)`` bool, the nodes each sample keeps.
    """

    def __init__(self, base: GraphStructure, nodes: torch.Tensor):
        self.base, self.num_nodes = base, base.num_nodes
        self.nodes = nodes.unsqueeze(-1)  # (N, B, 1)
        self.kept = self.nodes.float()

    @cached_property
    def in_degree(self) -> torch.Tensor:
        """``(N, B, 1)``: each kept node's edges from kept nodes, 0 at a node not kept."""
        return self.base.aggregate(self.kept) * self.kept

    def row_blocks(self, row_bytes: int) -> list[slice]:
        return [ALL_ROWS]

    def aggregate(self, h: torch.Tensor, reduce: str = "sum", rows: slice = ALL_ROWS) -> torch.Tensor:
        """Every kept node's reduction over its kept in-neighbours, 0 where there are none. For
        ``amax`` / ``amin`` the nodes not kept hold ``-inf`` / ``inf`` and never win; a node
        left with none gets 0, and the fill stops its gradient.

        Shapes:
            h: ``(N, B, F)`` contiguous; returns ``(N, B, F)``.
        """
        if reduce in ("amax", "amin"):
            filled = h.masked_fill(~self.nodes, float("-inf") if reduce == "amax" else float("inf"))
            return self.base.aggregate(filled, reduce).masked_fill(self.in_degree == 0, 0.0)
        summed = self.base.aggregate(h * self.kept) * self.kept
        return summed / self.in_degree.clamp(min=1) if reduce == "mean" else summed

    def gcn_aggregate(self, h: torch.Tensor, conv: GCNConv, rows: slice = ALL_ROWS) -> torch.Tensor:
        """``D^-1/2 (A + I) D^-1/2 h`` on each sample's residual graph, ``D`` = 1 + its in-degree
        there, as ``gcn_norm`` counts it on that graph alone."""
        scale = (self.in_degree + 1).rsqrt()  # (N, B, 1)
        outer = scale * self.kept
        return self.base.aggregate(h * outer) * outer + h * scale.square()


def residual_nodes(base: torch.Tensor, edge_index: torch.Tensor, num_edges: torch.Tensor, num_nodes: int) -> torch.Tensor | None:
    """The nodes each sample keeps (those with an edge), when each sample's edges are exactly the
    base's edges between them, listed in the base's order as MIS filters them; else ``None``.
    ``O(B * E)``, no sort.

    Shapes:
        base: ``(2, E)``; edge_index: ``(B, 2, max_edges)``; num_edges: ``(B,)``; returns ``(B, N)`` bool.
    """
    samples = edge_index.shape[0]
    real = torch.arange(edge_index.shape[2]) < num_edges[:, None]  # (B, max_edges)
    listed = edge_index.transpose(0, 1)[:, real]  # (2, total edges), sample by sample
    offsets = torch.repeat_interleave(torch.arange(samples) * num_nodes, num_edges)
    nodes = torch.zeros(samples * num_nodes, dtype=torch.bool)
    nodes[listed[0] + offsets] = True
    nodes[listed[1] + offsets] = True
    nodes = nodes.view(samples, num_nodes)
    kept = nodes[:, base[0]] & nodes[:, base[1]]  # (B, E)
    if not torch.equal(kept.sum(dim=1), num_edges):
        return None
    return nodes if torch.equal(base[:, kept.nonzero()[:, 1]], listed) else None


def base_edges(num_nodes: int) -> torch.Tensor:
    """An ER graph of average degree 4, both directions, ordered by destination as MIS keeps it: ``(2, E)``."""
    edges = erdos_renyi(num_nodes, 4.0, 0).edge_index
    return torch.from_numpy(np.ascontiguousarray(edges[:, np.argsort(edges[1], kind="stable")]))


def residual_batch(base: torch.Tensor, num_nodes: int, dropped: list[float], seed: int) -> dict[str, torch.Tensor]:
    """Padded observations, one per share in ``dropped``: that share of the nodes decided, the
    base's edges among the others kept in the base's order."""
    rng = np.random.default_rng(seed)
    samples = len(dropped)
    x = torch.from_numpy(rng.random((samples, num_nodes, NUM_FEATURES), dtype=np.float32))
    edge_index = torch.zeros(samples, 2, base.shape[1], dtype=torch.long)
    num_edges = torch.zeros(samples, 1, dtype=torch.long)
    for b, share in enumerate(dropped):
        undecided = torch.from_numpy(rng.random(num_nodes) >= share)
        kept = base[:, undecided[base[0]] & undecided[base[1]]]
        edge_index[b, :, : kept.shape[1]], num_edges[b] = kept, kept.shape[1]
    return {"x": x, "edge_index": edge_index, "num_nodes": torch.full((samples, 1), num_nodes), "num_edges": num_edges}


def mis_kept_shares(num_nodes: int, steps: int = 64) -> np.ndarray:
    """The share of the graph's edges in each observed residual graph over ``steps`` steps of MIS
    on :func:`base_edges`'s graph under uniformly random actions, as an untrained policy acts."""
    env = make_env("mis", None, {}, [erdos_renyi(num_nodes, 4.0, 0)])
    obs, _ = env.reset(seed=0)
    env.action_space.seed(0)
    total, shares = int(obs["num_edges"][0]), []
    for _ in range(steps):
        shares.append(int(obs["num_edges"][0]) / total)
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()
    return np.array(shares)


def union(extractor: GNNExtractor, obs: dict[str, torch.Tensor], base: GraphStructure) -> torch.Tensor:
    """The package's path: the samples' disjoint union, a new structure per minibatch; ``(B * N, width)``."""
    graph = to_disjoint(obs)
    return extractor.embed_samples(graph.x[None], GraphStructure(graph.edge_index, graph.x.shape[0]))[:, 0]


def masked(extractor: GNNExtractor, obs: dict[str, torch.Tensor], base: GraphStructure) -> torch.Tensor:
    """The residual check, then one product on the cached base; ``(B * N, width)`` as :func:`union`."""
    to_disjoint(obs)  # the heads read the disjoint graph either way
    nodes = residual_nodes(base.edge_index, obs["edge_index"], obs["num_edges"].reshape(-1), base.num_nodes)
    h = extractor.embed_samples(obs["x"], ResidualStructure(base, nodes.t()))  # (N, B, width)
    return h.transpose(0, 1).reshape(-1, h.shape[2])


def forward_backward(run, extractor: GNNExtractor, obs: dict[str, torch.Tensor], base: GraphStructure) -> tuple[torch.Tensor, list]:
    extractor.zero_grad()
    h = run(extractor, obs, base)
    h.square().mean().backward()
    return h.detach(), [p.grad.clone() for p in extractor.parameters()]


def check_same_numbers(extractor: GNNExtractor, obs: dict[str, torch.Tensor], base: GraphStructure) -> None:
    """Both paths give the same embeddings (1e-5) and gradients (1e-5 relative to the largest)."""
    (h, grads), (h_masked, grads_masked) = (forward_backward(run, extractor, obs, base) for run in (union, masked))
    if not torch.allclose(h, h_masked, atol=1e-5, rtol=0):
        raise AssertionError(f"embeddings differ by {(h - h_masked).abs().max():.3g}")
    for grad, grad_masked in zip(grads, grads_masked, strict=True):
        if not torch.allclose(grad, grad_masked, atol=1e-5 * float(grad.abs().max()), rtol=0):
            raise AssertionError(f"gradients differ by {(grad - grad_masked).abs().max():.3g}")


def seconds(run, extractor: GNNExtractor, obs: dict[str, torch.Tensor], base: GraphStructure, repeats: int) -> float:
    """Median process seconds of forward + backward: CPU time, which other work on these shared
    cores stretches less than wall time."""
    times = []
    for _ in range(repeats):
        started = time.process_time()
        forward_backward(run, extractor, obs, base)
        times.append(time.process_time() - started)
    return statistics.median(times)


def compare(num_nodes: int, dropped: list[float], repeats: int) -> list[tuple[str, float, float, float]]:
    """(model, share of base edges kept, union seconds, masked seconds) per model."""
    edges = base_edges(num_nodes)
    base = GraphStructure(edges, num_nodes)
    _ = base.adjacency  # built once, as the extractor caches it
    obs = residual_batch(edges, num_nodes, dropped, seed=1)
    kept = float(obs["num_edges"].sum()) / (len(dropped) * edges.shape[1])
    space = observation_space(num_nodes, edges.shape[1], NUM_FEATURES)
    rows = []
    for name, kwargs in MODELS.items():
        torch.manual_seed(0)
        extractor = GNNExtractor(space, **kwargs)
        check_same_numbers(extractor, obs, base)  # also the warm-up
        rows.append((name, kept, seconds(union, extractor, obs, base, repeats), seconds(masked, extractor, obs, base, repeats)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000:32,148640:8", help="nodes:samples, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sweep", default="", help="also batches whose every sample drops this share of nodes, e.g. 0,0.15,0.3")
    args = parser.parse_args()
    torch.set_num_threads(1)
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    command = f"python -m bench.residual_mask --sizes {args.sizes} --repeats {args.repeats}"
    command += f" --sweep {args.sweep}" if args.sweep else ""
    print(f"`{command}`, {time.strftime('%Y-%m-%d %H:%M')}, load {load} before\n")
    print("| N | samples | nodes dropped | model | base edges kept | union s | masked s | masked / union |")
    print("|---:|---:|---|---|---:|---:|---:|---:|")
    notes = []
    for size in args.sizes.split(","):
        num_nodes, samples = (int(part) for part in size.split(":"))
        shares = mis_kept_shares(num_nodes)
        notes.append(
            f"MIS at {num_nodes:,} nodes, random actions, 64 steps: edges kept per step mean {shares.mean():.2f}, "
            f"median {np.median(shares):.3f}, {np.mean(shares >= 0.9):.0%} of steps at 0.9 or more"
        )
        batches = [("uniform 0-70 %", list(np.random.default_rng(0).uniform(0.0, 0.7, samples)))]
        batches += [(f"{float(share):.0%} each", [float(share)] * samples) for share in args.sweep.split(",") if share]
        for label, dropped in batches:
            for name, kept, slow, fast in compare(num_nodes, dropped, args.repeats):
                row = f"| {num_nodes:,} | {samples} | {label} | {name} | {kept:.2f} | {slow:.3f} | {fast:.3f} | {fast / slow:.2f} |"
                print(row, flush=True)
    print("\n" + "\n".join(notes))
    print(f"\nload {' '.join(open('/proc/loadavg').read().split()[:3])} after")


if __name__ == "__main__":
    main()
