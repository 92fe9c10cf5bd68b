"""``predict``: a saved policy on one graph file, the per-node decision written as CSV."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphtransfer.checkpoint import load_policy, read_checkpoint
from graphtransfer.evaluate import DEFAULT_MAX_PASSES
from graphtransfer.graphs import Graph, load_graph
from graphtransfer.inference import Solution, solve
from graphtransfer.train import task_env_class


def predict(
    model: str | Path,
    graph: str | Path,
    out: str | Path | None = None,
    max_passes: int = DEFAULT_MAX_PASSES,
    deterministic: bool = False,
    seed: int = 0,
) -> tuple[Graph, Solution]:
    """Run the model in folder ``model`` on ``graph``; write ``node,decision`` rows to ``out``.

    By default every node samples its action from the policy (seeded, so runs repeat exactly);
    see :func:`graphtransfer.inference.solve` for why that is the default.
    """
    checkpoint = read_checkpoint(model)
    env_class = task_env_class(checkpoint.config.task)
    loaded = load_graph(graph)
    env = env_class([loaded], horizon=max_passes)
    policy, _ = load_policy(checkpoint, env)
    solution = solve(policy, env, deterministic=deterministic, seed=seed)
    if out is not None:
        write_solution(out, solution.solution)
    return loaded, solution


def write_solution(path: str | Path, decision: np.ndarray) -> None:
    """CSV with header ``node,decision``: 1 where the node is in the solution, else 0."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = np.stack([np.arange(decision.size), decision.astype(np.int64)], axis=1)
    np.savetxt(path, rows, fmt="%d", delimiter=",", header="node,decision", comments="")
