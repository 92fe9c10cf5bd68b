"""Running a saved policy over many graphs on local worker processes or a Ray cluster.

Each worker receives the model once (the checkpoint's config and tensors, in memory, so no shared
filesystem is needed) and takes one torch thread; the graphs then go out one at a time and the
results come back in the graphs' order. One graph's run depends only on the model, the graph and
the seed, so the numbers are those of the serial path.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import socket
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import torch

from graphtransfer.checkpoint import Checkpoint, read_checkpoint
from graphtransfer.config import RunConfig
from graphtransfer.errors import ClusterLost, UsageError
from graphtransfer.graphs import Graph, load_graphs, resolve
from graphtransfer.io import check_output_file
from graphtransfer.solve.evaluate import EvalRow, check_one_graph, evaluate, evaluate_model
from graphtransfer.solve.inference import Solution
from graphtransfer.solve.loading import Runtime, policy_for_graphs
from graphtransfer.solve.predict import predict_graph, write_solution

RAY_INSTALL = "pip install 'graphtransfer[ray]'"
# Fork on Linux, as torch's DataLoader does: a worker starts in milliseconds, where a spawned one
# re-imports torch, SB3 and PyG (7 s of CPU each on our 2-core machine, more than many evaluations
# take). torch re-creates its thread pools in a forked child. Spawn elsewhere (macOS cannot fork safely).
START_METHOD = "fork" if sys.platform == "linux" else "spawn"
Result = TypeVar("Result")
Job = Callable[[Checkpoint, Graph, dict[str, Any]], Result]


def evaluate_many(
    model: str | Path,
    graphs: str | Path,
    workers: int | None = None,
    ray_address: str | None = None,
    max_nodes_per_batch: int | None = None,
    mixed_precision: bool = False,
    env: str | None = None,
    device: str = "cpu",
    **options: Any,
) -> tuple[RunConfig, list[EvalRow]]:
    """:func:`graphtransfer.solve.evaluate.evaluate_model` on ``workers`` processes, or on the Ray cluster
    at ``ray_address`` (``"auto"``, ``"local"`` or ``host:port``; ``workers`` actors, default one per
    CPU there). One worker and no Ray: the serial path itself. A Ray cluster that dies raises
    :class:`ClusterLost` holding the rows finished before."""
    runtime = Runtime(max_nodes_per_batch, mixed_precision, device)
    if (workers or 1) == 1 and ray_address is None:
        return evaluate_model(model, graphs, runtime, env, **options)
    checkpoint = read_checkpoint(model, env)
    loaded = load_graphs(graphs)
    check_one_graph(loaded, options.get("source"), options.get("target"))  # each worker sees one graph: checked here
    options["runtime"] = runtime
    try:
        return checkpoint.config, map_graphs(evaluate_graph, checkpoint, loaded, options, workers, ray_address)
    except ClusterLost as lost:
        raise ClusterLost(f"{lost} with {len(lost.finished)} of {len(loaded)} graphs evaluated", lost.finished) from None


def predict_many(
    model: str | Path,
    graphs: str | Path,
    out: str | Path,
    workers: int | None = None,
    ray_address: str | None = None,
    max_nodes_per_batch: int | None = None,
    mixed_precision: bool = False,
    env: str | None = None,
    force: bool = False,
    device: str = "cpu",
    **options: Any,
) -> list[tuple[Graph, Solution, Path]]:
    """:func:`graphtransfer.solve.predict.predict` on every graph that ``graphs`` names; each solution is
    written to ``out/<graph file stem>.csv`` by this process, as its result arrives, in order; an
    existing CSV is replaced only with ``force``, and never a graph or a model file."""
    loaded = load_graphs(graphs)
    folder = Path(out)
    paths = [folder / f"{Path(graph.name).stem}.csv" for graph in loaded]
    clashes = sorted({p.name for p in paths if paths.count(p) > 1})
    if clashes:
        raise UsageError(f"graphs {str(graphs)!r}: several graphs would write {clashes[0]}; give them distinct file names")
    if folder.is_file():
        raise UsageError(f"--out {folder} is a file; with a folder of graphs, --out names the folder that gets one CSV per graph")
    checkpoint = read_checkpoint(model, env)
    for path in paths:
        check_output_file(path, [resolve(graphs)], force)
    options["runtime"] = Runtime(max_nodes_per_batch, mixed_precision, device)
    results = map_graphs(solve_graph, checkpoint, loaded, options, workers, ray_address)
    for graph, path, (solution, header) in zip(loaded, paths, results, strict=True):
        write_solution(path, solution.solution, header, graph.ids())
    return [(graph, solution, path) for graph, (solution, _), path in zip(loaded, results, paths, strict=True)]


def evaluate_graph(checkpoint: Checkpoint, graph: Graph, options: dict[str, Any]) -> EvalRow:
    """One graph's evaluation row; what :func:`graphtransfer.solve.evaluate.evaluate` gives for it."""
    options = dict(options)
    loaded = policy_for_graphs(checkpoint, [graph], options.pop("runtime"))
    return evaluate(loaded.policy, checkpoint.config, [graph], **options)[0]


def solve_graph(checkpoint: Checkpoint, graph: Graph, options: dict[str, Any]) -> tuple[Solution, str]:
    """One graph's solution and CSV header; see :func:`graphtransfer.solve.predict.predict_graph`."""
    return predict_graph(checkpoint, graph, **options)


def map_graphs(
    job: Job,
    checkpoint: Checkpoint,
    graphs: Sequence[Graph],
    options: dict[str, Any],
    workers: int | None = None,
    ray_address: str | None = None,
) -> list:
    """``[job(checkpoint, g, options) for g in graphs]``, on ``workers`` local processes or on Ray."""
    if ray_address is not None:
        return _map_on_ray(job, checkpoint, graphs, options, workers, ray_address)
    if (workers or 1) == 1:
        return [job(checkpoint, graph, options) for graph in graphs]
    context = multiprocessing.get_context(START_METHOD)
    pool = ProcessPoolExecutor(min(workers, len(graphs)), mp_context=context, initializer=_start_worker, initargs=(checkpoint,))
    try:
        return list(pool.map(_run_job, [job] * len(graphs), graphs, [options] * len(graphs)))
    finally:
        pool.shutdown(cancel_futures=True)


_worker_checkpoint: Checkpoint | None = None


def _start_worker(checkpoint: Checkpoint) -> None:
    """Runs once in each worker process: one torch thread, and the model kept for every graph."""
    global _worker_checkpoint
    torch.set_num_threads(1)
    _worker_checkpoint = checkpoint


def _run_job(job: Job, graph: Graph, options: dict[str, Any]):
    return job(_worker_checkpoint, graph, options)


class RayWorker:
    """A Ray actor holding the model; :func:`_map_on_ray` makes it remote (Ray is optional)."""

    def __init__(self, checkpoint: Checkpoint):
        _start_worker(checkpoint)

    def run(self, job: Job, graph: Graph, options: dict[str, Any]):
        return _run_job(job, graph, options)


def _map_on_ray(
    job: Job, checkpoint: Checkpoint, graphs: Sequence[Graph], options: dict[str, Any], workers: int | None, address: str
) -> list:
    """One actor per worker (default: one per CPU of the cluster), each given the next graph as it
    finishes one; results in the graphs' order. A cluster that dies raises :class:`ClusterLost`
    holding the results finished by then."""
    ray = import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        init_ray(ray, address, **({"include_dashboard": False} if address == "local" else {}), log_to_driver=False)
    try:
        count = workers or int(ray.cluster_resources().get("CPU", 1))
        model, actor = ray.put(checkpoint), ray.remote(num_cpus=1)(RayWorker)
        idle = [actor.remote(model) for _ in range(max(1, min(count, len(graphs))))]
        finished: dict[int, Any] = {}
        running: dict[Any, tuple[int, Any]] = {}
        waiting = list(enumerate(graphs))[::-1]
        while waiting or running:
            while idle and waiting:
                index, graph = waiting.pop()
                worker = idle.pop()
                running[worker.run.remote(job, graph, options)] = (index, worker)
            for ref in _answered(ray, list(running), 1, finished):
                index, worker = running.pop(ref)
                finished[index] = _get(ray, [ref], finished)[0]
                idle.append(worker)
        return [finished[index] for index in range(len(graphs))]
    finally:
        if started_here:
            ray.shutdown()


CLUSTER_CHECK_SECONDS = 1.0
"""how often a wait on the cluster asks its head whether it still answers"""


def get_from_cluster(ray, refs: list) -> list:
    """``ray.get(refs)`` that does not wait on a cluster that is gone: an actor that died with its
    node, or a head that no longer accepts connections (asked every second without all answers),
    raises :class:`ClusterLost` within seconds, before Ray's own wait for the head (a minute) ends
    this process with no chance to save anything. A job's or env's own error is raised as itself."""
    while len(_answered(ray, refs, len(refs), {})) < len(refs):
        pass
    return _get(ray, refs, {})


def _answered(ray, refs: list, wanted: int, finished: dict[int, Any]) -> list:
    """The refs answered within a second, while ``wanted`` of them are not, after asking the head
    whether it still answers: :class:`ClusterLost` (holding ``finished``) if it does not."""
    ready, _ = ray.wait(refs, num_returns=wanted, timeout=CLUSTER_CHECK_SECONDS)
    if len(ready) < wanted:
        address = ray.get_runtime_context().gcs_address
        host, _, port = address.rpartition(":")
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=RAY_CONNECT_SECONDS).close()
        except OSError as err:
            reason = err.strerror or type(err).__name__
            raise ClusterLost(f"the Ray cluster's head at {address} stopped answering ({reason})", finished) from None
    return ready


def _get(ray, refs: list, finished: dict[int, Any]) -> list:
    """``ray.get(refs)`` once they have answered; a job's own error is raised as itself."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as err:  # the worker's own error, not Ray's wrapper with its traceback
        raise err.cause from None
    except ray.exceptions.RayActorError as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ClusterLost(f"a Ray actor died with its node or process ({first})", finished) from None


def import_ray():
    """The ``ray`` module, or a usage error that says how to install it."""
    try:
        import ray
    except ImportError:
        raise UsageError(f"--ray-address needs Ray, which is not installed; install it with: {RAY_INSTALL}") from None
    return ray


RAY_CONNECT_SECONDS = 5.0
"""how long an address is given to answer before it is refused (Ray itself retries for minutes)"""


def init_ray(ray, address: str | None, **options) -> None:
    """``ray.init(address, **options)``; an address where no cluster answers (``None``:
    ``$RAY_ADDRESS``, else a new local instance) is refused within seconds with a one-line error
    instead of Ray's minutes of retries and its traceback."""
    named = address if address is not None else os.environ.get("RAY_ADDRESS")
    where = "--ray-address" if address is not None else "$RAY_ADDRESS"
    if named not in (None, "", "auto", "local"):
        _check_answers(named, where)
    try:
        ray.init(address=address, logging_level=logging.WARNING, **options)  # Ray's INFO lines are not the user's business
    except ConnectionError as err:
        first = str(err).split(". ")[0].rstrip(".")
        raise UsageError(
            f"{where} {named or 'auto'}: {first}; start a cluster with 'ray start --head', or pass --ray-address local "
            "to start one in this process"
        ) from None


def _check_answers(address: str, where: str) -> None:
    """Refuse ``host:port`` (or ``ray://host:port``) unless something accepts a connection there."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"{where} {address!r}: expected auto, local or host:port (e.g. 10.0.0.5:6379)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=RAY_CONNECT_SECONDS).close()
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise UsageError(
            f"{where} {address}: no Ray cluster answers there ({reason}); start one with 'ray start --head --port {port}' "
            f"on {host}, or check the address"
        ) from None
