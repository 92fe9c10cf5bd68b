"""How the extractor reads edge features: its mean-incoming-edge term (one scatter per forward,
the cached sparse structure path kept) against per-edge messages with PyG's ``GINEConv``
(``(E, width)`` messages in every layer), same width and depth, one torch thread.

Measured per size, interleaved (ours, GINE, ours, GINE, ...), medians: a no-gradient forward of
one graph (inference), and forward + backward over 16 samples of one graph (a PPO minibatch of
a static graph).

    python -m bench.edge_features              # about a minute on 2 cores
    python -m bench.edge_features --sizes 10000 250000
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from torch import nn
from torch_geometric.nn import GINEConv

from graphtransfer.envs.contract import observation_space, padded_edge_attr, padded_structure
from graphtransfer.graphs import barabasi_albert, edge_weights
from graphtransfer.nn import GNNExtractor

WIDTH, LAYERS, FEATURES, EDGE_FEATURES = 64, 3, 4, 1


class GINEExtractor(nn.Module):
    """The alternative: ``h + ReLU(GINE(h, e))`` per layer, messages ``ReLU(h_j + W e_ij)`` summed."""

    def __init__(self):
        super().__init__()
        self.encode = nn.Sequential(nn.Linear(FEATURES, WIDTH), nn.ReLU())
        mlp = lambda: nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, WIDTH))  # noqa: E731
        self.convs = nn.ModuleList(GINEConv(mlp(), edge_dim=EDGE_FEATURES) for _ in range(LAYERS))

    def forward(self, x, edge_index, edge_attr):
        h = self.encode(x)
        for conv in self.convs:
            h = h + torch.relu(conv(h, edge_index, edge_attr))
        return h


def batch_of(graph, samples: int) -> dict[str, torch.Tensor]:
    """``samples`` observations of ``graph`` with random node features and its edge weights."""
    rng = np.random.default_rng(0)
    obs = padded_structure(graph.edge_index, graph.num_nodes, graph.num_nodes, graph.edge_index.shape[1])
    obs["edge_attr"] = padded_edge_attr(edge_weights(graph)[:, None], graph.edge_index.shape[1])
    stacked = {k: torch.as_tensor(np.repeat(v[None], samples, axis=0)) for k, v in obs.items()}
    stacked["x"] = torch.as_tensor(rng.random((samples, graph.num_nodes, FEATURES), dtype=np.float32))
    return stacked


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(num_nodes: int, samples: int, repeats: int) -> tuple[float, float, float, float]:
    graph = barabasi_albert(num_nodes, 4, 0)
    space = observation_space(num_nodes, graph.edge_index.shape[1], FEATURES, EDGE_FEATURES)
    ours, gine = GNNExtractor(space, width=WIDTH, num_layers=LAYERS), GINEExtractor()
    one, many = batch_of(graph, 1), batch_of(graph, max(samples, 1))
    edges = torch.as_tensor(graph.edge_index)
    attr = one["edge_attr"][0]
    many_x = many["x"].reshape(-1, FEATURES)
    shifted = torch.cat([edges + k * num_nodes for k in range(max(samples, 1))], dim=1)
    many_attr = attr.repeat(max(samples, 1), 1)

    def ours_forward():
        with torch.no_grad():
            ours.node_embeddings(one)

    def gine_forward():
        with torch.no_grad():
            gine(one["x"][0], edges, attr)

    def ours_train():
        ours.node_embeddings(many)[0].sum().backward()

    def gine_train():
        gine(many_x, shifted, many_attr).sum().backward()

    forward, train = {"ours": [], "gine": []}, {"ours": [], "gine": []}
    for _ in range(repeats):  # interleaved
        forward["ours"].append(timed(ours_forward, 1))
        forward["gine"].append(timed(gine_forward, 1))
        if samples:
            train["ours"].append(timed(ours_train, 1))
            train["gine"].append(timed(gine_train, 1))
    med = {k: statistics.median(v) for k, v in forward.items()}
    tmed = {k: statistics.median(v) if v else float("nan") for k, v in train.items()}
    return med["ours"], med["gine"], tmed["ours"], tmed["gine"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("| nodes | forward: ours | GINEConv | ratio | fwd+bwd x16: ours | GINEConv | ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size in args.sizes:
        samples = 16 if size <= 10_000 else 0
        ours, gine, ours_train, gine_train = measure(size, samples, args.repeats)
        train = f"{ours_train:.3f} s | {gine_train:.3f} s | {gine_train / ours_train:.1f}x" if samples else "- | - | -"
        print(f"| {size:,} | {ours:.3f} s | {gine:.3f} s | {gine / ours:.1f}x | {train} |")


if __name__ == "__main__":
    main()
