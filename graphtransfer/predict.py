"""``predict``: a saved policy on one graph file, the solution written as CSV."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from graphtransfer.checkpoint import Checkpoint, atomic_write, load_policy, read_checkpoint
from graphtransfer.evaluate import inference_env
from graphtransfer.graphs import Graph, load_graph
from graphtransfer.inference import Solution, solve
from graphtransfer.memory import check_memory
from graphtransfer.nn import configure_runtime


def predict(
    model: str | Path,
    graph: str | Path | Graph,
    out: str | Path | None = None,
    max_passes: int | None = None,
    deterministic: bool = False,
    seed: int = 0,
    commit_fraction: float | None = None,
    max_nodes_per_batch: int | None = None,
    mixed_precision: bool = False,
) -> tuple[Graph, Solution]:
    """Run the model in folder ``model`` on ``graph`` (a :class:`Graph` or what names one); write
    the solution to ``out`` as CSV.

    By default actions are sampled from the policy (seeded, so runs repeat exactly); see
    :func:`graphtransfer.inference.solve`. A graph too large for the memory available is refused
    before anything is built (:mod:`graphtransfer.memory`). ``max_nodes_per_batch`` runs the
    layers in chunks of that many nodes (same solution, less memory); ``mixed_precision``,
    bfloat16 message passing on CUDA.
    """
    loaded = graph if isinstance(graph, Graph) else load_graph(graph)
    options = {"deterministic": deterministic, "seed": seed, "commit_fraction": commit_fraction}
    runtime = {"max_nodes_per_batch": max_nodes_per_batch, "mixed_precision": mixed_precision}
    solution, header = predict_graph(read_checkpoint(model), loaded, max_passes=max_passes, **options, **runtime)
    if out is not None:
        write_solution(out, solution.solution, header)
    return loaded, solution


def predict_graph(
    checkpoint: Checkpoint,
    graph: Graph,
    max_passes: int | None = None,
    max_nodes_per_batch: int | None = None,
    mixed_precision: bool = False,
    **options,
) -> tuple[Solution, str]:
    """The policy of a checkpoint already read, on one graph: the solution and its CSV header.

    One graph's run depends only on the checkpoint, the graph and ``options`` (those of
    :func:`graphtransfer.inference.solve`), so workers that each call this give what a serial loop gives.
    """
    check_memory(graph.num_nodes, graph.edge_index[1], checkpoint.config.model, f"graph {graph.name}", max_nodes_per_batch)
    env = inference_env(checkpoint.config, graph, max_passes)
    policy, _ = load_policy(checkpoint, env)
    configure_runtime(policy, max_nodes_per_batch, mixed_precision)
    return solve(policy, env, **options), getattr(env.unwrapped, "solution_header", "step,reward")


def write_solution(path: str | Path, solution: np.ndarray, header: str) -> None:
    """CSV of the solution rows. A per-node solution gets its node id as first column."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = solution.reshape(len(solution), -1)
    if header.startswith("node,"):
        rows = np.column_stack([np.arange(len(rows)), rows])
    integral = np.issubdtype(rows.dtype, np.integer) or rows.dtype == bool
    text = io.StringIO()
    np.savetxt(
        text, rows.astype(np.int64 if integral else np.float64), fmt="%d" if integral else "%.9g", delimiter=",", header=header, comments=""
    )
    atomic_write(path, text.getvalue().encode())  # a killed run leaves the previous CSV, never half of a new one
