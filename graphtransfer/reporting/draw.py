"""Drawing a small graph coloured by a policy's decisions, to see what it learned.

The layout is a seeded force-directed (Fruchterman-Reingold) one computed with numpy, so the same
graph always gives the same picture and no graph library is needed. Graphs above
:data:`MAX_DRAW_NODES` are refused: the layout is quadratic in the nodes, and a picture of more
nodes shows a blot, not decisions.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from graphtransfer.config import MAX_DRAW_NODES, RunConfig
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph
from graphtransfer.io import save_figure
from graphtransfer.solve.inference import Solution, objective_text
from graphtransfer.tasks import Task
from graphtransfer.tasks.factory import task_of

GRAVITY = 2.0
"""pull towards the centre, of the order of the repulsion a node feels at distance 0.5"""
_COLOURS = ("#b8bcc2", "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#ff7f0e")


def check_drawable(graph: Graph) -> None:
    """Refuse, before any work is done, a graph too large to draw."""
    if graph.num_nodes > MAX_DRAW_NODES:
        raise UsageError(
            f"--draw: graph {graph.name} has {graph.num_nodes:,} nodes; drawing is limited to {MAX_DRAW_NODES:,} nodes, "
            "drop --draw or draw a smaller graph"
        )


def spring_layout(graph: Graph, iterations: int = 150, seed: int = 0) -> np.ndarray:
    """Node positions ``(num_nodes, 2)`` in ``[0, 1]^2``: nodes repel each other, edges pull their
    ends together, a weak gravity holds the parts together, and the step size cools linearly to
    zero (Fruchterman and Reingold, 1991).

    Repulsion is summed for all pairs with matrix products, ``O(N^2)`` memory and time per step.
    """
    n = graph.num_nodes
    rng = np.random.default_rng(seed)
    pos = rng.random((n, 2))
    if n < 2:
        return np.full((n, 2), 0.5)
    k = np.sqrt(1.0 / n)  # the ideal edge length in the unit square
    src, dst = graph.edge_index
    for step in range(iterations):
        squared = np.maximum(np.sum(pos**2, 1)[:, None] + np.sum(pos**2, 1)[None, :] - 2 * pos @ pos.T, 1e-6)
        weight = k**2 / squared  # (N, N): repulsion k^2 / d along the unit vector
        np.fill_diagonal(weight, 0.0)
        move = pos * weight.sum(1, keepdims=True) - weight @ pos
        delta = pos[src] - pos[dst]  # (2|E|, 2), both directions of every edge
        pull = delta * (np.linalg.norm(delta, axis=1, keepdims=True) / k)  # attraction d^2 / k along the edge
        move -= np.stack([np.bincount(src, pull[:, c], n) for c in range(2)], axis=1)
        move -= GRAVITY * (pos - pos.mean(0))  # keeps small components and lone nodes from drifting off
        length = np.maximum(np.linalg.norm(move, axis=1, keepdims=True), 1e-9)
        temperature = 0.1 * (1 - step / iterations)
        pos += move / length * np.minimum(length, temperature)
    pos -= pos.min(0)
    return pos / max(float(pos.max()), 1e-9)


def draw_solution(graph: Graph, solution: Solution, config: RunConfig, path: str | Path) -> None:
    """Draw ``graph`` to the PNG ``path``, nodes coloured by the per-node decisions in
    ``solution`` with a legend; a graph-level policy's chosen actions go into the title."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    check_drawable(graph)
    pos = spring_layout(graph)
    figure, axes = plt.subplots(figsize=(8, 8), dpi=110)
    src, dst = graph.edge_index[:, graph.edge_index[0] < graph.edge_index[1]]
    segments = np.stack([pos[src], pos[dst]], axis=1)  # (edges, 2, 2)
    # matplotlib's stub asks for a Sequence; its documentation takes an (n, 2, 2) array as well
    axes.add_collection(LineCollection(segments, colors="#9aa0a6", linewidths=0.6, alpha=0.6, zorder=1))  # type: ignore[arg-type]
    size = float(np.clip(12000 / max(graph.num_nodes, 1), 6, 120))
    rows = np.asarray(solution.solution)
    task = task_of(config)
    if rows.shape == (graph.num_nodes,):
        _draw_decisions(axes, pos, rows, task, size)
        _label_nodes(axes, pos, graph)
        what = f"{config.name}, {config.head or 'policy'} decisions"
    else:
        axes.scatter(pos[:, 0], pos[:, 1], s=size, c=_COLOURS[2], edgecolors="white", linewidths=0.4, zorder=2)
        what = f"{config.name}: {actions_summary(rows, task)}"
    valid = "valid" if solution.feasible else "NOT valid"
    found = f"objective {objective_text(solution.objective)} ({valid})"
    axes.set_title(
        f"{graph.name}: {graph.num_nodes:,} nodes, {graph.num_edges:,} edges\n{what}; {found}",
        fontsize=11,
    )
    axes.set_aspect("equal")
    axes.margins(0.03)
    axes.axis("off")
    figure.tight_layout()
    save_figure(figure, path)
    plt.close(figure)


def _draw_decisions(axes, pos: np.ndarray, decisions: np.ndarray, task: Task, size: float) -> None:
    """One scatter per decision value, so each gets a legend entry with its count: the task's
    ``decision_labels`` and ``decision_colours`` where it declares them; otherwise labelled by value."""
    labels = task.decision_labels
    colours = task.decision_colours or _COLOURS
    for index, value in enumerate(np.unique(decisions)):
        chosen = decisions == value
        label = labels.get(int(value), f"decision {value}")
        axes.scatter(
            pos[chosen, 0],
            pos[chosen, 1],
            s=size,
            c=colours[index % len(colours)],
            edgecolors="white",
            linewidths=0.4,
            zorder=3 if index else 2,
            label=f"{label} ({int(chosen.sum()):,})",
        )
    # below the drawing, where it hides no node
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, fontsize=10, frameon=False, markerscale=max(1.0, 60 / size) ** 0.5)


LABEL_NODES = 60
"""graphs up to this size get each node's own id written beside it (``Graph.ids()``)"""


def _label_nodes(axes, pos: np.ndarray, graph: Graph) -> None:
    """Each node's id as the graph file names it, on graphs small enough to read them."""
    if graph.num_nodes > LABEL_NODES:
        return
    for (x, y), node in zip(pos, graph.ids().tolist(), strict=True):
        axes.annotate(str(node), (x, y), fontsize=7, ha="center", va="center", zorder=4)


def actions_summary(rows: np.ndarray, task: Task) -> str:
    """Graph-level episodes: the action of each step, counted (``lockdown x12, none x3``)."""
    if rows.ndim != 2 or rows.shape[1] < 2 or not len(rows):
        return "graph-level policy"
    names = task.action_names
    if names is None and rows.dtype.kind == "f":  # a user env's (step, reward) rows
        return f"{len(rows)} steps"
    actions = [names[int(a)] if names else str(int(a)) for a in rows[:, 1]]
    counts = ", ".join(f"{name} x{count}" for name, count in Counter(actions).most_common())
    return f"actions over {len(rows)} steps: {counts} (first: {actions[0]})"
