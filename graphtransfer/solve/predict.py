"""``predict``: a saved policy on one graph file, the solution written as CSV."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Literal

import numpy as np

from graphtransfer.checkpoint import Checkpoint, read_checkpoint
from graphtransfer.config import AUTO_ROLLOUTS, HASTY_FROM_NODES, Decoding, Runtime
from graphtransfer.config.schema import DecodingName, Device, NodeOrder
from graphtransfer.envs.protocol import declaration_advice, features_of
from graphtransfer.envs.transforms import NearBipartiteSet
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, load_graph, resolve
from graphtransfer.io import atomic_write, check_output_file, write_atomically
from graphtransfer.solve.evaluate import finish_rule
from graphtransfer.solve.inference import NearBipartiteRival, Solution
from graphtransfer.solve.loading import DEFAULT_RUNTIME, GraphInput, graphs_of, policy_for_graphs
from graphtransfer.solve.ordering import SolvingOrder, solving_order
from graphtransfer.solve.rollouts import DEFAULT_DECODING, best_of_rollouts, rollout_count, rollout_patience
from graphtransfer.tasks.factory import named_query, task_of


def predict(
    model: str | Path,
    graph: GraphInput,
    out: str | Path | None = None,
    max_passes: int | None = None,
    deterministic: bool | None = None,
    seed: int = 0,
    commit_fraction: float | None = None,
    decoding: DecodingName | None = None,
    rollouts: int | Literal["auto"] = AUTO_ROLLOUTS,
    max_nodes_per_batch: int | None = None,
    mixed_precision: bool = False,
    env: str | None = None,
    force: bool = False,
    node_order: NodeOrder = "auto",
    reductions: bool = True,
    device: Device = "cpu",
    source: str | None = None,
    target: str | None = None,
) -> tuple[Graph, Solution]:
    """Run the model in folder ``model`` on ``graph`` (a :class:`Graph`, a PyG ``Data``, or what names
    one); write the solution to ``out`` as CSV.

    The decoding keywords (``max_passes``, ``deterministic``, ``seed``, ``commit_fraction``,
    ``decoding``, ``rollouts``, ``node_order``, ``reductions``) build one :class:`graphtransfer.Decoding` and the
    runtime keywords (``max_nodes_per_batch``, ``mixed_precision``) one
    :class:`graphtransfer.Runtime`, each checked as it is built (a bad value is a
    :class:`~graphtransfer.errors.UsageError` naming it); :func:`predict_with` takes the two
    objects themselves.

    By default MIS and MVC decode by local maxima of the policy's scores, path takes the policy's
    most likely moves, and other tasks sample their actions from the policy (seeded, so runs
    repeat exactly); ``deterministic`` ``True`` or ``False`` takes the most likely actions or
    samples them whatever the task; see :func:`graphtransfer.solve.inference.solve` for
    ``decoding`` and ``commit_fraction``. ``rollouts`` (a count, or ``"auto"``: as many as fit a work
    budget, several up to 15,000 nodes, one above, see :func:`graphtransfer.solve.rollouts.rollout_count`)
    runs the policy that many times, seeds
    ``seed, seed + 1, ...``, and keeps the best solution (:mod:`graphtransfer.solve.rollouts`).
    A graph too large for the memory available is refused before anything is built
    (:mod:`graphtransfer.solve.memory`). ``max_nodes_per_batch`` runs the layers in chunks of that
    many nodes (same solution, less memory); ``mixed_precision``, bfloat16 message passing on
    CUDA; ``device`` (``cpu``, ``cuda`` or ``auto``), where the policy's passes run.
    ``node_order`` ``auto`` solves large MIS and MVC graphs renumbered in locality order,
    ``given`` as the file numbers them; the solution is in the graph's own order either way
    (:mod:`graphtransfer.solve.ordering`). ``env`` names the user env of a model trained on one.
    ``source`` and ``target`` (the path task) name the route's ends by the graph's own ids;
    without them path routes the graph's own query. ``out`` never replaces the graph, the model's
    files or a folder, and replaces an existing file only with ``force``.
    """
    chosen = Decoding(decoding, commit_fraction, deterministic, seed, rollouts, max_passes, node_order, reductions)
    runtime = Runtime(max_nodes_per_batch=max_nodes_per_batch, mixed_precision=mixed_precision, device=device)
    return predict_with(model, graph, out, chosen, runtime, env, force, source, target)


def predict_with(
    model: str | Path,
    graph: GraphInput,
    out: str | Path | None = None,
    decoding: Decoding = DEFAULT_DECODING,
    runtime: Runtime = DEFAULT_RUNTIME,
    env: str | None = None,
    force: bool = False,
    source: str | None = None,
    target: str | None = None,
) -> tuple[Graph, Solution]:
    """:func:`predict` with its decoding and runtime settings as the objects themselves."""
    checkpoint = read_checkpoint(model, env)
    if out is not None:
        check_output_file(Path(out), [resolve(graph)] if isinstance(graph, str | Path) else [], force)
    loaded = load_graph(graph) if isinstance(graph, str | Path) else _one_graph(graph)
    query = named_query(checkpoint.config, loaded, source, target)
    solution, header = predict_graph(checkpoint, loaded, decoding, runtime, query=query)
    if out is not None:
        write_solution(out, solution.solution, header, loaded.ids())
    return loaded, solution


def _one_graph(graph: GraphInput) -> Graph:
    """The one graph of a :class:`Graph` or PyG input; several are refused, naming what solves them."""
    graphs = graphs_of(graph)
    if len(graphs) != 1:
        raise UsageError(f"predict solves one graph; this input holds {len(graphs)}: call predict on each, or evaluate on them all")
    return graphs[0]


def predict_graph(
    model: str | Path | Checkpoint,
    graph: Graph,
    decoding: Decoding = DEFAULT_DECODING,
    runtime: Runtime = DEFAULT_RUNTIME,
    env: str | None = None,
    query: tuple[int, int] | None = None,
    order: SolvingOrder | None = None,
) -> tuple[Solution, str]:
    """The policy of a model (a folder, or a checkpoint already read) on one graph: the best
    solution of its rollouts, in the graph's own node order whatever ``decoding.node_order`` it
    was solved in (:func:`graphtransfer.solve.ordering.solving_order`), and its CSV header.
    ``order``: that solving order where the caller has made it (for this graph, model and
    ``decoding``: ``predict --polish`` searches its kernel afterwards).

    One graph's run depends only on the model, the graph and ``decoding``, so workers that each
    call this give what a serial loop gives.
    """
    checkpoint = model if isinstance(model, Checkpoint) else read_checkpoint(model, env)
    if order is None:
        order = solving_order(checkpoint.config, graph, decoding.node_order, decoding.reductions)
    count = rollout_count(decoding.rollouts, order.graph.num_nodes, order.graph.edge_index.shape[1])
    loaded = policy_for_graphs(checkpoint, [order.graph], runtime, env, decoding.max_passes, query)
    patience = rollout_patience(decoding.rollouts, order.graph.num_nodes)
    rule = finish_rule(checkpoint.config)
    solution = best_of_rollouts(loaded.policy, loaded.env, count, decoding, rule, patience, order.rule, checkpoint.experts)
    features = features_of(loaded.env)
    rival_solve = task_of(checkpoint.config).rival
    if rival_solve is not None and order.rule is not None and order.graph.num_nodes < HASTY_FROM_NODES:
        started = time.perf_counter()
        rival = rival_solve(order.graph)
        solution = against_near_bipartite(solution, rival, time.perf_counter() - started, features.sense)
    advice = declaration_advice(features) if checkpoint.config.env is not None else ""
    return replace(order.restore(solution), advice=advice), features.solution_header


def against_near_bipartite(solution: Solution, found: NearBipartiteSet | None, seconds: float, sense: str) -> Solution:
    """The policy's ``solution`` of an MIS (``sense`` ``max``) or MVC (``min``: covers, the
    complements of the sets) graph, or where the graph is nearly bipartite and the graph less a
    cover of its odd edges, solved as bipartite, gives a better one (``found``, by
    :func:`~graphtransfer.tasks.mis.near_bipartite.near_bipartite_set`; ``None`` where it refused
    the graph), that one; either way with the contest in :attr:`Solution.rival` and its ``seconds``
    (the refusal's too) counted. Up to :data:`~graphtransfer.tasks.mis.near_bipartite.ODD_EDGE_SHARE` odd edges the
    policy can be the better of the two (a grid with 10% diagonals: 1.051x greedy against 1.047x),
    so the answer is never worse than the policy's; predict runs this where its reductions are on,
    as the kernel's LP decides graphs bipartite throughout, and on kernels of fewer than
    :data:`~graphtransfer.config.HASTY_FROM_NODES` nodes, where its decoding does not hurry either:
    refusing a random graph costs a pass over its edges and a few rounds of flips (0.4 s on an
    Erdős–Rényi kernel of 972,824 nodes, 8-11 s on one of 9,723,836)."""
    seconds_in_all = solution.seconds + seconds
    if found is None:
        return replace(solution, seconds=seconds_in_all)
    rows = found.solution if sense == "max" else ~found.solution
    objective = float(np.count_nonzero(rows))
    margin = objective - solution.objective if sense == "max" else solution.objective - objective
    taken = margin > 0 or not solution.feasible
    rival = NearBipartiteRival(found.odd_edges, found.edges, margin, taken, seconds)
    if not taken:
        return replace(solution, rival=rival, seconds=seconds_in_all)
    rows = rows.astype(solution.solution.dtype)
    return replace(solution, solution=rows, objective=objective, feasible=True, finished=None, rival=rival, seconds=seconds_in_all)


NODE_COLUMNS = ("node", "mate")
"""solution CSV columns whose values are nodes (a route's nodes, a matching's mates): written as the graph's own ids"""


def write_solution(path: str | Path, solution: np.ndarray, header: str, node_ids: np.ndarray | None = None) -> None:
    """CSV of the solution rows, written atomically. Nodes are named by the graph's own ids
    (``node_ids``, e.g. ``Graph.ids()``; else by their positions): a per-node solution (header
    ``node,...``) gets its node's id as first column, and every other column the header names
    ``node`` or ``mate`` (a route's ``step,node``, a matching's ``node,mate``) holds ids too, with
    an empty cell where the solution holds -1 (an unmatched node: no id can be mistaken for it)."""
    body = header + "\n" + solution_rows(solution, header, node_ids)
    atomic_write(path, body.encode())  # a killed run leaves the previous CSV, never half of a new one


ROWS_PER_WRITE = 1 << 18
"""rows formatted at a time by :func:`write_solution_parts`: the text of one block, not the whole CSV, is in memory"""


def write_solution_parts(path: str | Path, header: str, parts: Iterable[tuple[np.ndarray, np.ndarray]]) -> None:
    """A per-node solution's CSV (as :func:`write_solution` writes it), written atomically from
    ``parts``, each the graph's own ids of some nodes ``(n,)`` and their solution ``(n,)``, taken
    one at a time and written a block of rows at a time: the rows come part after part, each
    naming its node, and no array of the whole graph is made."""

    def write(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8", newline="") as file:
            file.write(header + "\n")
            for ids, solution in parts:
                for start in range(0, len(ids), ROWS_PER_WRITE):
                    block = slice(start, start + ROWS_PER_WRITE)
                    file.write(solution_rows(solution[block], header, ids[block]))

    write_atomically(Path(path), write)


def solution_rows(solution: np.ndarray, header: str, node_ids: np.ndarray | None = None) -> str:
    """The rows of :func:`write_solution`'s CSV, without the header line."""
    rows = solution.reshape(len(solution), -1)
    integral = np.issubdtype(rows.dtype, np.integer) or rows.dtype == bool
    values = rows.astype(np.int64) if integral else rows.astype(np.float64)
    names = header.split(",")
    per_node = names[0] == "node" and len(names) > 1
    columns = [values[:, i].astype(object) for i in range(values.shape[1])]
    formats = ["%d" if integral else "%.9g"] * len(columns)
    for i, name in enumerate((names[1:] if per_node else names)[: len(columns)]):
        if name in NODE_COLUMNS and integral:
            columns[i], formats[i] = _as_ids(values[:, i], node_ids), "%s"
    if per_node:
        columns.insert(0, (np.arange(len(rows)) if node_ids is None else node_ids).astype(object))
        formats.insert(0, "%s")
    table = np.stack(columns, axis=1)
    named = [i for i, form in enumerate(formats) if form == "%s"]
    names_are_text = node_ids is not None and node_ids.dtype.kind in "UOS"  # else every named cell is a number or empty
    if names_are_text and any(isinstance(v, str) and any(ch in v for ch in ',"\n\r') for v in table[:, named].ravel().tolist()):
        text = io.StringIO()  # ids that need quoting: the csv module quotes them
        csv.writer(text, lineterminator="\n").writerows(table.tolist())
        return text.getvalue()
    return (",".join(formats) + "\n") * len(table) % tuple(table.ravel().tolist())  # several times faster than a writer row by row


def _as_ids(positions: np.ndarray, node_ids: np.ndarray | None) -> np.ndarray:
    """``(k,)`` node positions as the graph's own ids, an object array; -1 (no node) as an empty cell."""
    named = (positions if node_ids is None else node_ids[np.maximum(positions, 0)]).astype(object)
    named[positions < 0] = ""
    return named
