"""Variants of learning from a search (graphtransfer.training.imitation): more graphs, other
families, more steps, from a trained MIS model's weights, each scored on the six dense Erdős–Rényi
cells of 10^4 nodes and the dense random geometric ones beside them (held-out seeds 1-3).

    .venv/bin/python -m bench.imitation_variants --start FOLDER --steps 6000 \\
        --extra ba:1000:64,ba:1000:200,ba:2000:64,ba:2000:200,rgg:5000:64,rgg:5000:200 --out v4.pt

``--start`` is the model before it learned (the thirty-first session used the built-in MIS model as
trained, ``git archive 8d470a1 graphtransfer/zoo/mis``). The graphs are :func:`imitation_graphs`
and the ``--extra`` ones (family:nodes:degree, seeds 300 on, in order); the searches' sets are kept
in ``--cache`` so that variants of the same graphs search once. The tensors are saved to ``--out``
(``torch.save``); the cells' sets and ratios to greedy are printed as JSON lines. Results:
bench/RESULTS.md, "Learning from a search for longer, on more graphs (issue 30, thirty-first session)".
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import torch

from bench.transfer_quality import DENSE_FAMILIES, DENSITY_BASELINE, checked, density_graphs
from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.graphs import Graph
from graphtransfer.solve.predict import predict_graph
from graphtransfer.tasks import TASKS
from graphtransfer.training import imitation

EXTRA_FIRST_SEED = 300
CELLS = ([10_000], [64.0, 200.0], ["er", "rgg"], [1, 2, 3])
"""(sizes, degrees, families, seeds) of the scored cells, as bench.transfer_quality.density_graphs takes them"""


def extra_graphs(spec: str) -> list[Graph]:
    """``family:nodes:degree`` comma-separated, seeded from :data:`EXTRA_FIRST_SEED` in order."""
    made = []
    for i, item in enumerate(part for part in spec.split(",") if part):
        family, nodes, degree = item.split(":")
        made.append(DENSE_FAMILIES[family](int(nodes), float(degree), EXTRA_FIRST_SEED + i))
    return made


def cached_set(graph: Graph, cache: Path) -> np.ndarray:
    """The search's set on ``graph`` (:func:`imitation.search_sets`), read from ``cache`` when searched before."""
    file = cache / f"{graph.name}-{graph.num_nodes}-{graph.edge_index.shape[1]}-{imitation.SEARCH_ITERATIONS_PER_NODE}.npy"
    if not file.exists():
        cache.mkdir(parents=True, exist_ok=True)
        np.save(file, imitation.search_sets(TASKS["mis"], [graph])[0])
    return np.load(file)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=Path, required=True, help="the MIS model folder to fine-tune from")
    parser.add_argument("--steps", type=int, default=imitation.STEPS)
    parser.add_argument("--learning-rate", type=float, default=imitation.LEARNING_RATE)
    parser.add_argument("--extra", default="", help="graphs beside imitation_graphs(): family:nodes:degree, comma-separated")
    parser.add_argument("--cache", type=Path, default=Path("runs/imitation-cache"))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.perf_counter()
    graphs = imitation.imitation_graphs() + extra_graphs(args.extra)
    found = [cached_set(graph, args.cache) for graph in graphs]
    start = read_checkpoint(args.start)
    tuned = imitation.imitate_search(start, graphs, found, steps=args.steps, learning_rate=args.learning_rate)
    torch.save(tuned.tensors, args.out)
    loss = [round(tuned.first_loss, 4), round(tuned.last_loss, 4)]
    print(json.dumps({"graphs": len(graphs), "loss": loss, "seconds": round(time.perf_counter() - started, 1)}))
    model = dataclasses.replace(start, tensors=tuned.tensors)
    for _, _, graph in density_graphs(*CELLS):
        greedy = int(DENSITY_BASELINE["mis"](graph).sum())
        solution, _ = predict_graph(model, graph)
        checked("mis", graph, solution.solution)
        found_set = int(solution.objective)
        print(json.dumps({"graph": graph.name, "greedy": greedy, "set": found_set, "ratio": round(found_set / greedy, 4)}), flush=True)


if __name__ == "__main__":
    main()
