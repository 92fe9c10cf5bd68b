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

``--split`` also gives each part's median seconds over the timed solves (``parts``): the policy's
forwards, the exact kernel's array rounds and its rules node by node (each kernel of the solve,
the one before the first pass and those between passes), and the rest (the env's steps, the
renumberings, the finish). Run with ``--threads 1`` and ``--threads 2`` in turn, it says which
part of the solve two threads speed up (Amdahl's law: the ratio of two threads to one cannot
pass what the parts that run on one core leave)::

    for round in 1 2 3 4; do
      for threads in 2 1; do PYTHONPATH=. python -m bench.solve_repeat --threads $threads --repeats 5 --split; done
    done
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace

PARTS = ("forwards", "kernel rounds", "kernel rules")
"""the parts ``--split`` times (:func:`timed_parts`); the rest of a solve is its seconds less theirs"""


def solve_seconds(model: str, graph_path: str, repeats: int, parts: list[dict[str, float]] | None = None) -> tuple[list[float], float]:
    """Each timed solve's seconds after one warm-up, each on a fresh copy of the graph; and the objective.
    ``parts``, where given, gets each timed solve's seconds in each of :data:`PARTS`."""
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.graphs import load_graph
    from graphtransfer.solve.predict import predict_graph

    checkpoint, graph = read_checkpoint(model), load_graph(graph_path)
    predict_graph(checkpoint, replace(graph))
    seconds, objective = [], 0.0
    for _ in range(repeats):
        fresh = replace(graph)  # a new Graph: no CSR kept from the solve before
        with timed_parts() if parts is not None else nullcontext({}) as spent:
            started = time.perf_counter()
            solution, _ = predict_graph(checkpoint, fresh)
            seconds.append(time.perf_counter() - started)
        if parts is not None:
            parts.append(spent)
        objective = solution.objective
    return seconds, objective


@contextmanager
def timed_parts() -> Iterator[dict[str, float]]:
    """The seconds spent, while in the block, in each of :data:`PARTS`: the MIS policy's forwards
    (``NodePolicy._distribution``), the kernel's array rounds (``low_degree_rounds``) and its rules
    node by node (``_rules_kernel``), each timed by a wrapper put in its place for the block."""
    from graphtransfer.nn.policy import NodePolicy
    from graphtransfer.tasks.mis import kernel as mis_kernel

    spent = dict.fromkeys(PARTS, 0.0)
    places = (
        (NodePolicy, "_distribution", "forwards"),
        (mis_kernel, "low_degree_rounds", "kernel rounds"),
        (mis_kernel, "_rules_kernel", "kernel rules"),
    )
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in places]

    def timing(function, part: str):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[part] += time.perf_counter() - started

        return timed

    for owner, name, part in places:
        setattr(owner, name, timing(getattr(owner, name), part))
    try:
        yield spent
    finally:
        for owner, name, function in originals:
            setattr(owner, name, function)


def median_parts(seconds: list[float], parts: list[dict[str, float]]) -> dict[str, float]:
    """Each part's median over the solves, and the rest's (each solve's seconds less its parts')."""
    medians = {part: statistics.median(spent[part] for spent in parts) for part in PARTS}
    medians["rest"] = statistics.median(total - sum(spent.values()) for total, spent in zip(seconds, parts, strict=True))
    return {part: round(value, 4) for part, value in medians.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mis")
    parser.add_argument("--graph", default="sample_graphs/large.json")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--split", action="store_true", help="also each part's median seconds (module docstring)")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    parts: list[dict[str, float]] | None = [] if args.split else None
    seconds, objective = solve_seconds(args.model, args.graph, args.repeats, parts)
    row = {
        "threads": args.threads,
        "seconds": [round(s, 4) for s in seconds],
        "median": round(statistics.median(seconds), 4),
        "objective": objective,
        "load": os.getloadavg()[0],
    }
    if parts is not None:
        row["parts"] = median_parts(seconds, parts)
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
