"""The seconds of one graph's solve as ``predict`` runs it (``predict_graph``), repeated in one
process: a warm-up solve, then ``--repeats`` timed solves, each on a fresh copy of the graph, so that
nothing a solve keeps on its graph (its CSR: ``Graph.csr``) serves the next, as in a ``predict``
process, which solves once. Torch runs ``--threads`` threads.

Compare a change by running it from two checkouts in turn, a few processes each, on an otherwise
idle machine (and again beside a busy process, ``python3 -c 'while True: pass'``)::

    for round in 1 2 3 4; do
      (cd ../before && PYTHONPATH=. python -m bench.solve_repeat --threads 2 --repeats 7) >> before.jsonl
      PYTHONPATH=. python -m bench.solve_repeat --threads 2 --repeats 7 >> after.jsonl
    done

Prints one JSON line: the threads, every timed solve's seconds, their median, the objective and the
load average. The built-in MIS model on the 250k sample graph unless ``--model`` and ``--graph`` say
otherwise. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import replace


def solve_seconds(model: str, graph_path: str, repeats: int) -> tuple[list[float], float]:
    """Each timed solve's seconds after one warm-up, each on a fresh copy of the graph; and the objective."""
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.graphs import load_graph
    from graphtransfer.solve.predict import predict_graph

    checkpoint, graph = read_checkpoint(model), load_graph(graph_path)
    predict_graph(checkpoint, replace(graph))
    seconds, objective = [], 0.0
    for _ in range(repeats):
        fresh = replace(graph)  # a new Graph: no CSR kept from the solve before
        started = time.perf_counter()
        solution, _ = predict_graph(checkpoint, fresh)
        seconds.append(time.perf_counter() - started)
        objective = solution.objective
    return seconds, objective


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mis")
    parser.add_argument("--graph", default="sample_graphs/large.json")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    seconds, objective = solve_seconds(args.model, args.graph, args.repeats)
    row = {
        "threads": args.threads,
        "seconds": [round(s, 4) for s in seconds],
        "median": round(statistics.median(seconds), 4),
        "objective": objective,
        "load": os.getloadavg()[0],
    }
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
