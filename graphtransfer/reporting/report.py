"""Writing evaluation results for people and programs: a text table, JSON, and a plot of ratio against size."""

from __future__ import annotations

import json
import re
from pathlib import Path

from graphtransfer.io import atomic_write, save_figure
from graphtransfer.solve.evaluate import EvalRow


def format_rows(rows: list[EvalRow]) -> list[str]:
    """A plain-text table: one line per graph and decoding, then the polished line if any."""
    if not rows:
        return []
    better = "higher" if rows[0].sense == "max" else "lower"
    width = max(len("graph"), *(len(row.graph.name) for row in rows))  # whole names: graphs of one family differ at the end
    labels = max(13, *(len(label) for row in rows for label in row.decodings))  # local-max-sampled is the longest
    lines = [
        f"{'graph':<{width}} {'nodes':>8} {'edges':>9} {'decoding':<{labels}} {'objective':>10} {'valid':>5} {'passes':>6} {'best of':>7} "
        f"{'secs':>6}"
        f"  vs baselines ({_what_is_compared(rows)}; {better} objective is better)"
    ]
    for row in rows:
        name = f"{row.graph.name:<{width}} {row.graph.num_nodes:>8} {row.graph.num_edges:>9}"
        for label, solution in row.decodings.items():
            versus = "  ".join(f"{b.name} {b.objective:.6g} ({row.compare(solution.objective, b.objective)})" for b in row.baselines)
            lines.append(
                f"{name} {label:<{labels}} {solution.objective:>10.6g} {'yes' if solution.feasible else 'NO':>5} "
                f"{solution.passes:>6} {solution.rollouts:>7} {solution.seconds:>6.2f}  {versus}"
            )
            name = " " * len(name)
        if row.polished is not None:
            polished = [(b.name, b.polished) for b in row.baselines if b.polished is not None]
            versus = "  ".join(f"{baseline}+polish {value:.6g} ({row.compare(row.polished, value)})" for baseline, value in polished)
            lines.append(f"{name} {'polished':<{labels}} {row.polished:>10.6g} {'yes':>5} {'':>6} {'':>7} {'':>6}  {versus}")
    return lines


def _what_is_compared(rows: list[EvalRow]) -> str:
    """The table's comparison, as :meth:`EvalRow.compare` makes it: a ratio, a difference, or both."""
    pairs = [(s.objective, b.objective) for row in rows for s in row.decodings.values() for b in row.baselines]
    pairs += [(row.polished, b.polished) for row in rows if row.polished is not None for b in row.baselines if b.polished is not None]
    kinds = {EvalRow.compares_by_ratio(value, baseline) for value, baseline in pairs}
    if kinds == {False}:
        return "policy - baseline"
    if kinds == {True, False}:
        return "policy/baseline, or policy - baseline (signed) where an objective is not positive"
    return "policy/baseline"


def finished_counts(solution) -> dict:
    """What the policy decided and what the finishing rule added, where one ran."""
    finished = solution.finished
    if finished is None:
        return {}
    return {
        "by_policy": finished.by_policy,
        "undecided": finished.undecided,
        "by_rule": finished.by_rule,
        "for_maximality": finished.for_maximality,
    }


def family(graph_name: str) -> str:
    """The graph family a name starts with: ``er-60.txt`` and ``er-n2000-d8-s1`` → ``er``."""
    return re.split(r"[-_.]", graph_name, maxsplit=1)[0] or graph_name


def rows_to_json(rows: list[EvalRow]) -> list[dict]:
    records = []
    for row in rows:
        record = {
            "graph": row.graph.name,
            "family": family(row.graph.name),
            "nodes": row.graph.num_nodes,
            "edges": row.graph.num_edges,
            "sense": row.sense,
            "decodings": {
                label: {"objective": s.objective, "feasible": s.feasible, "passes": s.passes, "seconds": round(s.seconds, 4)}
                | {"rollouts": s.rollouts, "best_rollout": {"seed": s.seed, "decoding": s.decoding}}
                | {"renumbered": s.renumbered, "reduced": s.reduced, "reduced_seconds": round(s.reduced_seconds, 4), "kernels": s.kernels}
                | finished_counts(s)
                for label, s in row.decodings.items()
            },
            "baselines": {
                b.name: {"objective": b.objective, "seconds": round(b.seconds, 4), "polished": b.polished} for b in row.baselines
            },
            "ratios": {label: {b.name: row.ratio(s.objective, b.objective) for b in row.baselines} for label, s in row.decodings.items()},
            "polished": row.polished,
            "peak_rss_mib": round(row.peak_rss_mib, 1),
        }
        records.append(record)
    return records


def write_json(rows: list[EvalRow], path: str | Path) -> None:
    """The rows as JSON (:func:`rows_to_json`), written atomically."""
    atomic_write(path, (json.dumps(rows_to_json(rows), indent=2) + "\n").encode())


def plot_ratios(rows: list[EvalRow], path: str | Path, title: str) -> None:
    """Policy / first baseline against graph size (log axis), one line per graph family and
    decoding, to the PNG ``path``. Needs matplotlib."""
    import matplotlib.pyplot as plt

    figure = ratio_figure(rows, title)
    save_figure(figure, path)
    plt.close(figure)


def ratio_figure(rows: list[EvalRow], title: str):
    """The figure :func:`plot_ratios` saves: colour is the graph family; line style, marker and a
    small sideways shift tell the decodings apart."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    if not rows or not rows[0].baselines:
        raise ValueError("nothing to plot: the task has no baseline to take ratios against")
    baseline = rows[0].baselines[0].name
    figure, axes = plt.subplots(figsize=(7, 4.5), dpi=120)
    styles, markers = ["-", "--", ":", "-."], ["o", "s", "^", "D"]
    decodings = list(rows[0].decodings)[: len(styles)]
    for colour, name in enumerate(sorted({family(r.graph.name) for r in rows})):
        members = [r for r in rows if family(r.graph.name) == name]
        for index, label in enumerate(decodings):  # colour: family; line style and marker: decoding
            # decodings often tie; a small sideways shift (on the log axis) keeps each one's points visible
            shift = 1.04 ** (index - (len(decodings) - 1) / 2)
            points = sorted((r.graph.num_nodes * shift, r.ratio(r.decodings[label].objective, r.baselines[0].objective)) for r in members)
            axes.plot(
                *zip(*points, strict=True),
                marker=markers[index],
                markerfacecolor="none",
                color=f"C{colour}",
                linestyle=styles[index],
                label=f"{name} ({label})",
            )
    axes.axhline(1.0, color="grey", linewidth=1, linestyle="--")
    axes.set_xscale("log")
    axes.set_xlabel("nodes (log scale)")
    axes.set_ylabel(f"policy / {baseline}")
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    return figure
