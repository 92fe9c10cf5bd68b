"""One forward at 250,151 nodes: the plain recipe (``../shared/plain-recipe``, run as it is) vs
graphtransfer, and graphtransfer's message passing beside its floor.

- Random graph: the recipe's own ``bench_naive.py --phase transfer`` (its graph: average degree 4,
  seed 0) against our policy on the same edges, default model (GraphSAGE max, 3 × 64) and a
  2 × 64 GCN like the recipe's. Forward = ``policy._predict`` on tensors without gradients, the
  call the recipe times as ``predict_tensor``.
- Grid: a 500 × 500 grid in random order, relabelled by :func:`locality_order`; the recipe's own
  model classes (imported from its folder, unchanged) and ours on that same relabelled graph.
- Floor: the model's own sparse and dense products timed alone on the same graph, in the same
  process, beside each layer of our forward.

Every measurement runs in a fresh subprocess (peak RSS is its own), sides interleaved round by
round (A, B, A, B), medians over rounds; one torch thread each unless ``--threads``.

    python -m bench.forward                  # about 6 minutes on 2 cores
    python -m bench.forward --repeats 5 --threads 2
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

RECIPE = Path(__file__).resolve().parents[2] / "shared" / "plain-recipe"
NODES = 250_151
GRID_SIDE = 500
TAG = "RESULT_JSON:"
TIME_TARGET, MEMORY_TARGET, GRID_TIME_TARGET, FLOOR_TARGET = 1 / 4, 1 / 3, 1 / 8, 1.3
MODELS = {
    "default": dict(conv="sage", num_layers=3, width=64, aggr="max"),
    "gcn2": dict(conv="gcn", num_layers=2, width=64, project_input=False),  # the recipe's: GCN 2 -> 64 -> 64 on the raw features
}
MEASURES = {
    "seconds": "forward time",
    "peak_rss_mib": "peak RSS of the whole process (imports, graph, env, model, forwards)",
    "forward_rss_mib": "peak RSS growth during the forwards",
}
CALLS = 3  # timed forwards per process, after one warm-up; the process's median is its sample


# --------------------------------------------------------------------------- workers
def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def median_seconds(call: Callable[[], object], calls: int = CALLS) -> float:
    call()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def graph_edges(graph: str):
    """The edges of ``graph`` as numpy ``(2, E)`` int64: the recipe's random graph, or the grid
    relabelled for locality."""
    import numpy as np

    sys.path.insert(0, str(RECIPE))
    from naive_graph_env import random_graph_edge_index

    from graphtransfer.graphs.ordering import locality_order

    if graph == "random":
        return random_graph_edge_index(NODES, 4.0, 0), NODES
    ids = np.random.default_rng(0).permutation(GRID_SIDE * GRID_SIDE).reshape(GRID_SIDE, GRID_SIDE)  # as stored: no locality
    a = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    b = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    edges = np.stack([np.concatenate([a, b]), np.concatenate([b, a])])
    num_nodes = GRID_SIDE * GRID_SIDE
    new_id = np.empty(num_nodes, dtype=np.int64)
    new_id[locality_order(edges, num_nodes)] = np.arange(num_nodes)
    return new_id[edges], num_nodes


def ours(graph: str, model: str) -> dict:
    """Our policy's forward on ``graph``, peak RSS, then the floor and per-layer times."""

    from graphtransfer.config import ModelConfig
    from graphtransfer.graphs.graph import Graph
    from graphtransfer.nn import build_policy
    from graphtransfer.solve.inference import act, obs_to_tensors
    from graphtransfer.tasks.mis.env import MISEnv

    edges, num_nodes = graph_edges(graph)
    env = MISEnv([Graph(edges, num_nodes, graph)])
    obs = obs_to_tensors(env.reset(seed=0)[0], "cpu")
    policy = build_policy("node-wise", ModelConfig(**MODELS[model]), env.observation_space, env.action_space)
    before = peak_rss_mib()
    seconds = median_seconds(lambda: act(policy, obs, deterministic=True))
    result = dict(seconds=seconds, peak_rss_mib=peak_rss_mib(), forward_rss_mib=peak_rss_mib() - before, nodes=num_nodes)
    return result | layers_and_floor(policy.features_extractor, obs)


def layers_and_floor(extractor, obs: dict) -> dict:
    """Each layer of our forward timed alone, beside the same layer's sparse and dense products
    timed alone (the floor), on the same graph; and the whole ``node_embeddings``."""
    import torch

    from graphtransfer.nn import to_disjoint
    from graphtransfer.nn.message_passing import GraphStructure

    with torch.inference_mode():
        graph = to_disjoint(obs)
        structure = GraphStructure(graph.edge_index, graph.x.shape[0])
        build = median_seconds(lambda: adjacency_of(GraphStructure(graph.edge_index, graph.x.shape[0]), extractor.convs[0]))
        h = extractor._encode(graph.x)[:, None]  # (N, 1, width), or (N, 1, F) on the raw features
        adjacency_of(structure, extractor.convs[0])  # built once, as the forward does, before layers are timed
        layers, floors = [], []
        for index, conv in enumerate(extractor.convs):
            layers.append(median_seconds(lambda index=index, h=h: extractor.layer(index, h, structure)))
            floors.append(sum(median_seconds(product) for product in products(conv, h, structure)))
            h = extractor.layer(index, h, structure)
        projection = extractor.encode[0].weight if extractor.encode is not None else None
        encode_floor = median_seconds(lambda: torch.mm(graph.x, projection.t())) if projection is not None else 0.0
        embeddings = median_seconds(lambda: extractor.node_embeddings(obs))
    return dict(layer_s=layers, layer_floor_s=floors, encode_floor_s=encode_floor, structure_s=build, embeddings_s=embeddings)


def adjacency_of(structure, conv):
    """The adjacency ``conv`` aggregates over (built on first use): GCN's normalised one, else the plain one."""
    from torch_geometric.nn import GCNConv

    return structure.gcn_adjacency(conv.improved, conv.add_self_loops) if isinstance(conv, GCNConv) else structure.adjacency


def products(conv, h, structure) -> list[Callable[[], object]]:
    """The layer's sparse product and its dense products, as separate calls."""
    import torch
    from torch_geometric.nn import GCNConv, GINConv

    from graphtransfer.nn.message_passing import REDUCTIONS, aggregate

    flat = h.view(-1, h.shape[-1])
    adjacency = adjacency_of(structure, conv)
    if isinstance(conv, GCNConv):
        weights, reduce = [conv.lin.weight], "sum"
    elif isinstance(conv, GINConv):
        weights, reduce = [conv.nn[0].weight, conv.nn[2].weight], "sum"
    else:
        weights, reduce = [conv.lin_l.weight, conv.lin_r.weight], REDUCTIONS[str(conv.aggr)]
    return [lambda: aggregate(adjacency, h, reduce)] + [lambda w=w: torch.mm(flat, w.t()) for w in weights]


def recipe_on_grid() -> dict:
    """The recipe's own classes (its env for the spaces, its extractor, SB3's MultiInputPolicy,
    built as ``bench_naive.py`` builds them), forward on the relabelled grid."""
    import numpy as np
    import torch
    from stable_baselines3 import PPO

    sys.path.insert(0, str(RECIPE))
    from naive_gnn_extractor import GNNExtractor
    from naive_graph_env import NaiveGraphEnv

    edges, num_nodes = graph_edges("grid")
    env = NaiveGraphEnv(num_nodes, seed=0)
    kwargs = dict(features_extractor_class=GNNExtractor, features_extractor_kwargs=dict(features_dim=64, hidden=64, num_layers=2))
    model = PPO("MultiInputPolicy", env, policy_kwargs=kwargs, seed=0, device="cpu", n_steps=64, batch_size=32, n_epochs=2)
    x, _ = env.reset(seed=7)
    obs = {"x": torch.as_tensor(x["x"])[None], "edge_index": torch.as_tensor(np.ascontiguousarray(edges))[None]}

    def forward():
        with torch.no_grad():
            model.policy._predict(obs, deterministic=True)

    before = peak_rss_mib()
    seconds = median_seconds(forward)
    return dict(seconds=seconds, peak_rss_mib=peak_rss_mib(), forward_rss_mib=peak_rss_mib() - before)


# --------------------------------------------------------------------------- driver
def run(command: list[str], threads: int) -> dict:
    """One measurement in a fresh process with ``threads`` torch threads; its RESULT_JSON line.
    Both sides run without torch's huge pages: the recipe's as torch's default, ours as
    graphtransfer's solve commands run (``graphtransfer.process.prefer_small_pages``)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    env["THP_MEM_ALLOC_ENABLE"] = "0"
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    for line in done.stdout.splitlines():
        if line.startswith(TAG):
            return json.loads(line[len(TAG) :])
    raise RuntimeError(f"{' '.join(command)} exited {done.returncode} without a result:\n{done.stderr[-2000:]}")


def recipe_random(threads: int) -> dict:
    """``bench_naive.py --phase transfer`` as its README gives it, shortened where it does not
    touch the forward (a 64-step small training, no large-env evaluation)."""
    command = [sys.executable, str(RECIPE / "bench_naive.py"), "--phase", "transfer", "--n", str(NODES)]
    result = run(command + ["--small-timesteps", "64", "--predict-reps", str(CALLS), "--eval-large-steps", "0"], threads)
    memory = result["rss_mb"]  # high-water marks after each stage
    growth = memory["after_predict"] - memory["after_large_model"]
    return dict(seconds=result["predict_tensor_median_s"], peak_rss_mib=result["peak_rss_mb"], forward_rss_mib=growth)


def worker_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "bench.forward", "--worker", *arguments]


def measure(repeats: int, threads: int) -> dict[str, list[dict]]:
    """Every side, round by round: each round runs each side once, in the same order."""
    sides = {
        "recipe random": lambda: recipe_random(threads),
        "ours random default": lambda: run(worker_command("ours", "random", "default"), threads),
        "ours random gcn2": lambda: run(worker_command("ours", "random", "gcn2"), threads),
        "recipe grid": lambda: run(worker_command("recipe-grid"), threads),
        "ours grid default": lambda: run(worker_command("ours", "grid", "default"), threads),
        "ours grid gcn2": lambda: run(worker_command("ours", "grid", "gcn2"), threads),
    }
    results: dict[str, list[dict]] = {name: [] for name in sides}
    for round_ in range(repeats):
        for name, side in sides.items():
            results[name].append(side())
            print(f"round {round_ + 1}: {name}: {results[name][-1]['seconds']:.3f} s", file=sys.stderr, flush=True)
    return results


def med(samples: list[dict], key: str, index: int | None = None) -> float:
    return statistics.median(s[key] if index is None else s[key][index] for s in samples)


def comparison_rows(results: dict[str, list[dict]]) -> list[list[str]]:
    rows = []
    for graph, label in (("random", "random, 250,151 nodes, 1,000,594 edges"), ("grid", "500 × 500 grid, RCM order, 999,000 edges")):
        plain = results[f"recipe {graph}"]
        target = TIME_TARGET if graph == "random" else GRID_TIME_TARGET
        for model, name in (("default", "default model (SAGE max 3 × 64)"), ("gcn2", "GCN 2 × 64")):
            mine = results[f"ours {graph} {model}"]
            for key, goal in (("seconds", target), ("peak_rss_mib", MEMORY_TARGET), ("forward_rss_mib", MEMORY_TARGET)):
                a, b = med(plain, key), med(mine, key)
                metric = f"{MEASURES[key]}, {label}, {name}"
                fmt = "{:.3f} s" if key == "seconds" else "{:,.0f} MiB"
                rows.append([metric, fmt.format(a), fmt.format(b), f"{b / a:.3f}", f"≤ {goal:.3f}", "yes" if b / a <= goal else "no"])
    return rows


def floor_rows(results: dict[str, list[dict]]) -> list[list[str]]:
    rows = []
    for graph in ("random", "grid"):
        for model in MODELS:
            samples = results[f"ours {graph} {model}"]
            for index in range(len(samples[0]["layer_s"])):
                layer, floor = med(samples, "layer_s", index), med(samples, "layer_floor_s", index)
                rows.append([graph, model, f"layer {index + 1}", f"{layer * 1e3:.1f}", f"{floor * 1e3:.1f}", f"{layer / floor:.2f}"])
            floor = sum(med(samples, "layer_floor_s", i) for i in range(len(samples[0]["layer_s"]))) + med(samples, "encode_floor_s")
            whole, build = med(samples, "embeddings_s"), med(samples, "structure_s")
            for step, seconds in (
                (f"node_embeddings, structure build ({build * 1e3:.0f} ms) included", whole),
                ("less the build", whole - build),
            ):
                rows.append([graph, model, step, f"{seconds * 1e3:.1f}", f"{floor * 1e3:.1f}", f"{seconds / floor:.2f}"])
    return rows


def table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="rounds; each side once per round, medians over rounds")
    parser.add_argument("--threads", type=int, default=1, help="torch threads, the same for both sides")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, *rest = args.worker
        print(TAG + json.dumps(ours(*rest) if kind == "ours" else recipe_on_grid()), flush=True)
        return
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    results = measure(args.repeats, args.threads)
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    print(
        f"`python -m bench.forward --repeats {args.repeats} --threads {args.threads}`, {datetime.date.today()}, "
        f"{os.cpu_count()} cores, {args.threads} torch thread(s) each side, load average {' '.join(load_before)} before, "
        f"{' '.join(load_after)} after; medians of {args.repeats} interleaved rounds, each the median of {CALLS} calls.\n"
    )
    print(table(["metric", "plain recipe", "graphtransfer", "ratio", "target", "met"], comparison_rows(results)))
    print()
    print(table(["graph", "model", "step", "ours ms", "floor ms (its products alone)", "ratio (target ≤ 1.3)"], floor_rows(results)))


if __name__ == "__main__":
    main()
