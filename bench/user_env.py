"""A user's own MIS env against the built-in MIS task, as a user would run them: each trained on
``small`` (``graphtransfer train ... --steps 20000``), then predicted with the defaults on graphs
of four families, set sizes as a ratio of min-degree greedy's, with the seconds of each solve.

    graphtransfer train --env examples.user_mis:UserMISEnv --graphs small --out runs/user_mis
    graphtransfer train --env examples.user_mis:DeclaredMISEnv --graphs small --out runs/declared_mis
    graphtransfer train --task mis --graphs small --out runs/mis_20k    # each with --total-timesteps 20000
    python -m bench.user_env --models runs/user_mis:examples.user_mis:UserMISEnv \
        runs/declared_mis:examples.user_mis:DeclaredMISEnv runs/mis_20k --sizes 10000,100000 --repeats 3

``--models`` takes model folders, each ``FOLDER`` (a built-in task) or ``FOLDER:module:Class``
(a user env, as ``predict --env`` names it). Prints one JSON line per graph and model, then a
table: per family and size, each model's ratio to greedy and seconds, and its ratio to the last
model named (the built-in).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

from graphtransfer.cli.common import use_threads
from graphtransfer.graphs import Graph, barabasi_albert, delaunay, erdos_renyi, random_geometric
from graphtransfer.solve.predict import predict_graph
from graphtransfer.tasks.mis.baselines import greedy_min_degree

FAMILIES = {
    "ba-m3": lambda n, seed: barabasi_albert(n, 3, seed),
    "er-d8": lambda n, seed: erdos_renyi(n, 8.0, seed),
    "rgg-d8": lambda n, seed: random_geometric(n, 8.0, seed),
    "delaunay": lambda n, seed: delaunay(n, seed),
}


def model_spec(text: str) -> tuple[str, str | None]:
    """``FOLDER`` or ``FOLDER:module:Class`` as the model folder and its user env (or None)."""
    folder, _, env = text.partition(":")
    return folder, env or None


def solve_once(folder: str, env: str | None, graph: Graph) -> tuple[float, int, bool, float]:
    """One model's solve of ``graph``: its set's size, passes, feasibility and seconds."""
    started = time.perf_counter()
    solution, _ = predict_graph(folder, graph, env=env)
    return solution.objective, solution.passes, bool(solution.feasible), time.perf_counter() - started


def measure(models: list[tuple[str, str | None]], graph: Graph, greedy: int, repeats: int) -> list[dict]:
    """Every model's solve of ``graph``, ``repeats`` rounds with the models in turn; seconds: the median."""
    runs: dict[str, list] = {folder: [] for folder, _ in models}
    for _ in range(repeats):
        for folder, env in models:
            runs[folder].append(solve_once(folder, env, graph))
    rows = []
    for folder, env in models:
        size, passes, feasible, _ = runs[folder][0]
        seconds = statistics.median(run[3] for run in runs[folder])
        rows.append(
            {"graph": graph.name, "model": folder, "env": env, "size": size, "feasible": feasible, "greedy": greedy,
             "ratio": size / greedy, "passes": passes, "seconds": round(seconds, 3)}
        )  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", required=True, help="FOLDER or FOLDER:module:Class, the built-in last")
    parser.add_argument("--sizes", default="10000,100000", help="node counts, comma-separated")
    parser.add_argument("--families", default=",".join(FAMILIES), help=f"of {', '.join(FAMILIES)}")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1, help="rounds of solves per graph, the models in turn; seconds: the median")
    args = parser.parse_args()
    models = [model_spec(text) for text in args.models]
    rows = []
    for family in args.families.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            graph = FAMILIES[family](size, args.seed)
            use_threads(None, graph.num_nodes)  # torch's threads as predict chooses them (its cores no other process holds)
            greedy = int(greedy_min_degree(graph).sum())
            for row in measure(models, graph, greedy, args.repeats):
                rows.append({"family": family, "nodes": size, **row})
                print(json.dumps(rows[-1]), flush=True)
    print(f"\nload average {os.getloadavg()[0]:.2f}; ratio: set size / min-degree greedy's; vs last: / the last model's set")
    last = models[-1][0]
    for family in args.families.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            here = [r for r in rows if r["family"] == family and r["nodes"] == size]
            reference = next(r for r in here if r["model"] == last)
            cells = [
                f"{r['env'] or r['model']}: {r['ratio']:.3f}x greedy, {r['size'] / reference['size']:.3f}x last, {r['seconds']:.2f} s"
                for r in here
            ]
            print(f"{family:9s} {size:>7,d}  " + " | ".join(cells))


if __name__ == "__main__":
    main()
