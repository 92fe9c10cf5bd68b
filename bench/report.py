"""What to expect from each task: the policy's objective against the task's classical baseline and
its seconds, by graph family and size, measured in one compact run and rendered into the pages
that quote them (README.md, docs/quality.md, docs/performance.md), between markers, so that no page
can hold a figure the run did not measure.

    .venv/bin/python -m bench.report run       # measure every task -> bench/report.json (about 9 minutes on 2 cores)
    .venv/bin/python -m bench.report           # render bench/report.json into the three pages
    .venv/bin/python -m bench.report --check   # exit 1 where a page's tables differ from the rendering

``run`` trains each task without a built-in model as ``graphtransfer train --task T --graphs
small`` does (the defaults, 30,000 steps on the 24 sample graphs of 20-60 nodes, one torch thread),
uses ``--model mis`` and ``--model mvc`` as they ship, and evaluates every model on generated
graphs it never saw, one graph and one process at a time, with ``graphtransfer eval``'s defaults
(:func:`graphtransfer.evaluate`) on one thread. It records the load average beside the timings: the seconds of a
busy machine are not those of an idle one. ``tests/test_report.py`` fails when a page's tables
differ from what this module renders from the committed ``bench/report.json``. Not part of the
test run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "report.json"
PAGES = {"README.md": ("summary",), "docs/quality.md": ("quality",), "docs/performance.md": ("performance",)}
"""each page and the tables it holds, each between ``<!-- report:NAME -->`` and ``<!-- /report:NAME -->``"""
RUN_COMMAND = ".venv/bin/python -m bench.report run"


@dataclass(frozen=True)
class Plan:
    """What one task is measured on: the model (a built-in name, or None to train one), the graph
    families (names of :data:`FAMILIES`) and the sizes."""

    model: str | None
    families: tuple[str, ...]
    sizes: tuple[int, ...]


FAMILIES: dict[str, tuple[str, Callable]] = {}
"""name -> (what it is, ``build(nodes, seed)``), filled by :func:`_families` on first use"""

PLANS = {
    "mis": Plan("mis", ("er-d4", "ba-m2", "rgg-d8", "delaunay"), (1_000, 10_000, 100_000)),
    "mvc": Plan("mvc", ("er-d4", "ba-m2", "rgg-d8", "delaunay"), (1_000, 10_000, 100_000)),
    "mvc-weighted": Plan(None, ("er-d4", "rgg-d8"), (1_000, 10_000)),
    "maxcut": Plan(None, ("er-d4", "rgg-d8"), (1_000, 10_000)),
    "epidemic": Plan(None, ("er-d4", "rgg-d8"), (1_000, 10_000)),
    "matching": Plan(None, ("er-d4", "rgg-d8", "grid"), (1_000, 10_000)),
    "path": Plan(None, ("rgg-d8", "grid", "delaunay"), (1_000, 10_000)),
}
GRAPH_SEED = 1
"""the generated graphs' seed: no model was chosen or trained on these graphs"""


def _families() -> dict[str, tuple[str, Callable]]:
    from bench.path_matching_quality import grid
    from graphtransfer.graphs import barabasi_albert, delaunay, erdos_renyi, random_geometric

    if not FAMILIES:
        FAMILIES.update(
            {
                "er-d4": ("Erdős–Rényi, average degree 4", lambda n, s: erdos_renyi(n, 4.0, s)),
                "ba-m2": ("Barabási–Albert, m = 2", lambda n, s: barabasi_albert(n, 2, s)),
                "rgg-d8": ("random geometric, average degree 8", lambda n, s: random_geometric(n, 8.0, s)),
                "delaunay": ("Delaunay triangulation", delaunay),
                "grid": ("square grid", grid),
            }
        )
    return FAMILIES


def measure_task(task: str, plan: Plan, folder: Path, log: Callable[[str], None]) -> dict:
    """Train ``task``'s model where it has no built-in one, then evaluate it on every graph of
    ``plan``: one row per graph."""
    from graphtransfer import Runtime
    from graphtransfer.graphs import write_graph
    from graphtransfer.solve.parallel import evaluate_with

    record: dict = {"task": task, "rows": []}
    if plan.model is None:
        model = folder / "models" / task
        command = ["graphtransfer", "train", "--task", task, "--graphs", "small", "--threads", "1", "--out", str(model)]
        started = time.perf_counter()
        subprocess.run([str(Path(sys.executable).parent / command[0]), *command[1:]], check=True, stdout=subprocess.DEVNULL)
        record |= {"model": f"graphtransfer train --task {task} --graphs small", "train_seconds": round(time.perf_counter() - started, 1)}
    else:
        model = plan.model
        record["model"] = f"--model {plan.model} (built in)"
    for family in plan.families:
        for nodes in plan.sizes:
            graph = _families()[family][1](nodes, GRAPH_SEED)
            path = folder / f"{family}-{nodes}.npz"
            write_graph(graph, path)
            load = os.getloadavg()[0]
            _, (row,) = evaluate_with(str(model), str(path), runtime=Runtime(threads=1), workers=1)
            baselines = {b.name: b for b in row.baselines}
            first = row.baselines[0]
            pick = max if row.sense == "max" else min
            best = pick(row.baselines, key=lambda b: b.objective)
            record["rows"].append(
                {
                    "family": family,
                    "nodes": graph.num_nodes,
                    "edges": graph.num_edges,
                    "sense": row.sense,
                    "policy": row.policy.objective,
                    "feasible": row.policy.feasible,
                    "decoding": row.policy.decoding or next(iter(row.decodings)),
                    "passes": row.policy.passes,
                    "rollouts": row.policy.rollouts,
                    "seconds": round(row.policy.seconds, 3),
                    "peak_rss_mib": round(row.policy.peak_rss_mib),
                    "baseline": first.name,
                    "baseline_objective": first.objective,
                    "baseline_seconds": round(first.seconds, 3),
                    "best_baseline": best.name,
                    "best_baseline_objective": best.objective,
                    "baselines": {name: b.objective for name, b in baselines.items()},
                    "load_before": round(load, 2),
                    "load_after": round(os.getloadavg()[0], 2),
                }
            )
            log(f"{task} {family} {nodes}: {json.dumps(record['rows'][-1])}")
    return record


def run(tasks: list[str], out: Path) -> None:
    """Measure ``tasks`` and write the results to ``out`` (kept tasks already there that were not asked for)."""
    import torch

    torch.set_num_threads(1)
    old = json.loads(out.read_text()) if out.exists() else {"tasks": {}}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    results = {
        "command": RUN_COMMAND,
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, torch {torch.__version__}",
        "threads": 1,
        "graph_seed": GRAPH_SEED,
        "families": {name: what for name, (what, _) in _families().items()},
        "tasks": dict(old["tasks"]),
    }
    with tempfile.TemporaryDirectory() as folder:
        for task in tasks:
            started = time.perf_counter()
            record = measure_task(task, PLANS[task], Path(folder), lambda line: print(line, file=sys.stderr, flush=True))
            record["seconds"] = round(time.perf_counter() - started, 1)
            results["tasks"][task] = record
            out.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


# Rendering: plain functions of the results dictionary, so that a test renders the same tables.


def _compared(row: dict, key: str = "baseline_objective") -> tuple[float, str]:
    """The policy's objective over the baseline's (minimisation too: below 1 is then better), or the
    signed difference where an objective can be zero or negative (the epidemic's return): the
    value, and its text."""
    base = row[key]
    if base > 0 and row["policy"] >= 0:
        return row["policy"] / base, f"{row['policy'] / base:.3f}"
    return row["policy"] - base, f"{row['policy'] - base:+.3f}"


def _ratio(row: dict, key: str = "baseline_objective") -> str:
    return _compared(row, key)[1]


def _number(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.3f}"


def _size(nodes: int) -> str:
    exponent = len(str(nodes)) - 1
    return f"10^{exponent}" if nodes == 10**exponent else f"{nodes:,}"


def _nominal(nodes: int) -> int:
    """The size a graph was asked for (a grid's side rounds it: 1,024 nodes for 1,000)."""
    return 10 ** round(len(str(nodes)) - 1 + (nodes / 10 ** (len(str(nodes)) - 1) > 3.16))


def _sense(rows: list[dict]) -> str:
    return "higher is better" if rows[0]["sense"] == "max" else "lower is better"


def _footer(results: dict) -> str:
    loads = [row[k] for task in results["tasks"].values() for row in task["rows"] for k in ("load_before", "load_after")]
    return (
        f"Measured by `{results['command']}` at commit {results['commit']} on {results['machine']}, "
        f"one torch thread, one graph at a time (load average {min(loads):.1f}-{max(loads):.1f} during the run); "
        f"graphs of seed {results['graph_seed']}, which no model was chosen or trained on. "
        "Rendered by `.venv/bin/python -m bench.report`."
    )


def render_quality(results: dict) -> str:
    """One table per task: the policy's objective, the task's classical baseline and the best of
    its baselines, by family and size."""
    parts = []
    for task, record in results["tasks"].items():
        rows = record["rows"]
        by_ratio = all(row["baseline_objective"] > 0 and row["policy"] >= 0 for row in rows)
        compared = "policy / baseline" if by_ratio else "policy - baseline (the objective can be negative)"
        parts.append(f"### {task}\n\nModel: `{record['model']}`; objective: {_sense(rows)}; ratio: {compared}.\n")
        parts.append("| family | nodes | edges | policy | baseline | ratio | best baseline | ratio |")
        parts.append("|---|---:|---:|---:|---|---:|---|---:|")
        for row in rows:
            mark = "" if row["feasible"] else " (infeasible)"
            parts.append(
                f"| {row['family']} | {row['nodes']:,} | {row['edges']:,} | {_number(row['policy'])}{mark} | "
                f"{row['baseline']} {_number(row['baseline_objective'])} | {_ratio(row)} | "
                f"{row['best_baseline']} {_number(row['best_baseline_objective'])} | {_ratio(row, 'best_baseline_objective')} |"
            )
        parts.append("")
    families = "; ".join(f"`{name}` {what}" for name, what in results["families"].items())
    parts.append(f"Families: {families}. {_footer(results)}")
    return "\n".join(parts)


def render_performance(results: dict) -> str:
    """One table per task: the policy's solve seconds (the rollouts and any kernel included, the
    model load and the graph read not), its passes and rollouts, the baseline's seconds and the
    process's peak memory, by family and size."""
    parts = []
    for task, record in results["tasks"].items():
        trained = f"; trained in {record['train_seconds']:.0f} s" if "train_seconds" in record else ""
        parts.append(f"### {task}\n\nModel: `{record['model']}`{trained}.\n")
        parts.append("| family | nodes | edges | policy s | passes x rollouts | baseline | baseline s | peak MiB | load |")
        parts.append("|---|---:|---:|---:|---:|---|---:|---:|---:|")
        for row in record["rows"]:
            parts.append(
                f"| {row['family']} | {row['nodes']:,} | {row['edges']:,} | {row['seconds']:.2f} | {row['passes']} x {row['rollouts']} | "
                f"{row['baseline']} | {row['baseline_seconds']:.2f} | {row['peak_rss_mib']:,} | {row['load_before']:.1f} |"
            )
        parts.append("")
    parts.append(_footer(results))
    return "\n".join(parts)


def render_summary(results: dict) -> str:
    """The README's table: one row per task, one column per size, each cell the range of the policy /
    baseline ratio over the families and the range of solve seconds."""
    sizes = sorted({_nominal(row["nodes"]) for task in results["tasks"].values() for row in task["rows"]})
    lines = [
        "| task | baseline | " + " | ".join(f"{_size(size)} nodes: ratio, seconds" for size in sizes) + " |",
        "|---|---|" + "---|" * len(sizes),
    ]
    for task, record in results["tasks"].items():
        cells = []
        for size in sizes:
            rows = [row for row in record["rows"] if _nominal(row["nodes"]) == size]
            if not rows:
                cells.append("")
                continue
            ratios = [text for _, text in sorted(_compared(row) for row in rows)]
            seconds = sorted(row["seconds"] for row in rows)
            spread = ratios[0] if ratios[0] == ratios[-1] else f"{ratios[0]} to {ratios[-1]}"
            cells.append(f"{spread}, {seconds[0]:.2f}-{seconds[-1]:.2f} s")
        better = "higher" if record["rows"][0]["sense"] == "max" else "lower"
        lines.append(f"| {task} ({better} is better) | {record['rows'][0]['baseline']} | " + " | ".join(cells) + " |")
    lines += ["", _footer(results)]
    return "\n".join(lines)


RENDER = {"summary": render_summary, "quality": render_quality, "performance": render_performance}


def block(name: str, text: str) -> str:
    return f"<!-- report:{name} -->\n{text}\n<!-- /report:{name} -->"


def marked(name: str) -> re.Pattern:
    return re.compile(rf"<!-- report:{name} -->\n.*?<!-- /report:{name} -->", re.S)


def rendered_pages(results: dict, root: Path = ROOT) -> dict[str, tuple[str, str]]:
    """Each page's text as it is and as the rendering makes it."""
    pages = {}
    for page, names in PAGES.items():
        text = new = (root / page).read_text()
        for name in names:
            if not marked(name).search(text):
                raise ValueError(f"{page} has no <!-- report:{name} --> ... <!-- /report:{name} --> block")
            new = marked(name).sub(lambda _, name=name: block(name, RENDER[name](results)), new)
        pages[page] = (text, new)
    return pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", nargs="?", choices=("render", "run"), default="render")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the results JSON (default bench/report.json)")
    parser.add_argument("--tasks", default=",".join(PLANS), help="run: the tasks to measure, comma-separated")
    parser.add_argument("--check", action="store_true", help="render: change nothing, exit 1 where a page differs")
    args = parser.parse_args()
    if args.action == "run":
        run(args.tasks.split(","), args.results)
    results = json.loads(args.results.read_text())
    stale = []
    for page, (text, new) in rendered_pages(results).items():
        if text != new:
            stale.append(page)
            if not args.check:
                (ROOT / page).write_text(new)
    if args.check and stale:
        sys.exit(f"tables differ from {args.results.name}: {', '.join(stale)} (run: .venv/bin/python -m bench.report)")
    print(f"{'stale' if args.check else 'rendered'}: {', '.join(stale) or 'nothing to change'}")


if __name__ == "__main__":
    main()
