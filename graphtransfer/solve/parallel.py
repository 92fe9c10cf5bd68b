"""Running a saved policy over many graphs on local worker processes or a Ray cluster.

Each worker receives the model once (the checkpoint's config and tensors, in memory, so no shared
filesystem is needed) and takes one torch thread; the graphs then go out one at a time and the
results come back in the graphs' order. One graph's run depends only on the model, the graph and
the seed, so the numbers are those of the serial path.
"""

from __future__ import annotations

import functools
import logging
import multiprocessing
import os
import socket
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Literal, TypeVar

import torch

from graphtransfer.checkpoint import Checkpoint, read_checkpoint
from graphtransfer.config import AUTO_ROLLOUTS, Decoding, RunConfig, Runtime
from graphtransfer.config.schema import DecodingName, Device, NodeOrder
from graphtransfer.errors import ClusterLost, UsageError
from graphtransfer.graphs import Graph, load_graphs, resolve
from graphtransfer.io import check_output_file
from graphtransfer.solve.evaluate import NO_EXTRAS, EvalExtras, EvalRow, check_one_graph, evaluate_model, evaluate_policy
from graphtransfer.solve.inference import Solution
from graphtransfer.solve.loading import DEFAULT_RUNTIME, GraphInput, graphs_of, policy_for_graphs
from graphtransfer.solve.predict import predict_graph, write_solution
from graphtransfer.solve.rollouts import DEFAULT_DECODING

RAY_INSTALL = "pip install 'graphtransfer[ray]'"
# Fork on Linux, as torch's DataLoader does: a worker starts in milliseconds, where a spawned one
# re-imports torch, SB3 and PyG (7 s of CPU each on our 2-core machine, more than many evaluations
# take). torch re-creates its thread pools in a forked child. Spawn elsewhere (macOS cannot fork safely).
START_METHOD = "fork" if sys.platform == "linux" else "spawn"
Result = TypeVar("Result")
Job = Callable[[Checkpoint, Graph], Result]
"""one graph's work, given the model: a module-level function, or a ``functools.partial`` of one (it travels to the workers)"""


def evaluate(
    model: str | Path,
    graphs: GraphInput,
    workers: int | None = None,
    ray_address: str | None = None,
    max_nodes_per_batch: int | None = None,
    mixed_precision: bool = False,
    env: str | None = None,
    device: Device = "cpu",
    *,
    max_passes: int | None = None,
    rollouts: int | Literal["auto"] = AUTO_ROLLOUTS,
    deterministic: bool = False,
    seed: int = 0,
    commit_fraction: float | None = None,
    decoding: DecodingName | None = None,
    node_order: NodeOrder = "auto",
    reductions: bool = True,
    polish: bool = False,
    chils: bool = False,
    source: str | None = None,
    target: str | None = None,
) -> tuple[RunConfig, list[EvalRow]]:
    """``graphtransfer.evaluate``: :func:`graphtransfer.solve.evaluate.evaluate_model` on ``workers``
    processes, or on the Ray cluster at ``ray_address`` (``"auto"``, ``"local"`` or ``host:port``;
    ``workers`` actors, default one per CPU there). One worker and no Ray: the serial path itself.
    A Ray cluster that dies raises :class:`ClusterLost` holding the rows finished before.

    The decoding keywords (``max_passes``, ``rollouts``, ``seed``, ``commit_fraction``,
    ``decoding``, ``node_order``, ``reductions``) build one :class:`graphtransfer.Decoding`, the runtime keywords
    (``ray_address``, ``max_nodes_per_batch``, ``mixed_precision``) one
    :class:`graphtransfer.Runtime`, each checked as it is built; :func:`evaluate_with` takes
    the objects themselves. ``deterministic``, ``polish``, ``chils``, ``source`` and ``target`` build
    an :class:`~graphtransfer.solve.evaluate.EvalExtras`: what is reported besides the policy's
    default decoding."""
    chosen = Decoding(decoding, commit_fraction, None, seed, rollouts, max_passes, node_order, reductions)
    runtime = Runtime(max_nodes_per_batch=max_nodes_per_batch, mixed_precision=mixed_precision, ray_address=ray_address, device=device)
    extras = EvalExtras(deterministic, polish, chils, source, target)
    return evaluate_with(model, graphs, chosen, runtime, workers, env, extras)


def evaluate_with(
    model: str | Path,
    graphs: GraphInput,
    decoding: Decoding = DEFAULT_DECODING,
    runtime: Runtime = DEFAULT_RUNTIME,
    workers: int | None = None,
    env: str | None = None,
    extras: EvalExtras = NO_EXTRAS,
) -> tuple[RunConfig, list[EvalRow]]:
    """:func:`evaluate` with its decoding and runtime settings as the objects themselves."""
    if (workers or 1) == 1 and runtime.ray_address is None:
        return evaluate_model(model, graphs, decoding, runtime, env, extras)
    checkpoint = read_checkpoint(model, env)
    loaded = graphs_of(graphs)
    check_one_graph(loaded, extras.source, extras.target)  # each worker sees one graph: checked here
    job = functools.partial(evaluate_graph, decoding=decoding, runtime=runtime, extras=extras)
    try:
        return checkpoint.config, map_graphs(job, checkpoint, loaded, workers, runtime.ray_address)
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
    *,
    max_passes: int | None = None,
    deterministic: bool | None = None,
    seed: int = 0,
    commit_fraction: float | None = None,
    decoding: DecodingName | None = None,
    rollouts: int | Literal["auto"] = AUTO_ROLLOUTS,
    node_order: NodeOrder = "auto",
    reductions: bool = True,
    device: Device = "cpu",
) -> list[tuple[Graph, Solution, Path]]:
    """:func:`graphtransfer.solve.predict.predict` on every graph that ``graphs`` names; each solution is
    written to ``out/<graph file stem>.csv`` by this process, as its result arrives, in order; an
    existing CSV is replaced only with ``force``, and never a graph or a model file. The keywords
    build a :class:`graphtransfer.Decoding` and a :class:`graphtransfer.Runtime` as ``predict``'s
    do; :func:`predict_many_with` takes the objects themselves."""
    chosen = Decoding(decoding, commit_fraction, deterministic, seed, rollouts, max_passes, node_order, reductions)
    runtime = Runtime(max_nodes_per_batch=max_nodes_per_batch, mixed_precision=mixed_precision, ray_address=ray_address, device=device)
    return predict_many_with(model, graphs, out, chosen, runtime, workers, env, force)


def predict_many_with(
    model: str | Path,
    graphs: str | Path,
    out: str | Path,
    decoding: Decoding = DEFAULT_DECODING,
    runtime: Runtime = DEFAULT_RUNTIME,
    workers: int | None = None,
    env: str | None = None,
    force: bool = False,
) -> list[tuple[Graph, Solution, Path]]:
    """:func:`predict_many` with its decoding and runtime settings as the objects themselves."""
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
    job = functools.partial(predict_graph, decoding=decoding, runtime=runtime)
    written: list[int] = []

    def write(index: int, result: tuple[Solution, str]) -> None:
        write_solution(paths[index], result[0].solution, result[1], loaded[index].ids())
        written.append(index)

    try:
        results = map_graphs(job, checkpoint, loaded, workers, runtime.ray_address, write)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the CSVs written stay, and the line says how many
        raise KeyboardInterrupt(f"the CSVs of the {len(written)} of {len(loaded)} graphs solved before are in {folder}") from None
    return [(graph, solution, path) for graph, (solution, _), path in zip(loaded, results, paths, strict=True)]


def evaluate_graph(checkpoint: Checkpoint, graph: Graph, decoding: Decoding, runtime: Runtime, extras: EvalExtras) -> EvalRow:
    """One graph's evaluation row; what :func:`graphtransfer.solve.evaluate.evaluate_policy` gives for it."""
    loaded = policy_for_graphs(checkpoint, [graph], runtime)
    return evaluate_policy(loaded.policy, checkpoint.config, [graph], decoding, extras, checkpoint.experts)[0]


def map_graphs(
    job: Job,
    checkpoint: Checkpoint,
    graphs: Sequence[Graph],
    workers: int | None = None,
    ray_address: str | None = None,
    each: Callable[[int, Any], None] | None = None,
) -> list:
    """``[job(checkpoint, g) for g in graphs]``, on ``workers`` local processes or on Ray; ``each(index,
    result)`` is called in this process as each result arrives (so what it keeps survives a stop)."""
    each = each or (lambda index, result: None)
    if ray_address is not None:
        return _map_on_ray(job, checkpoint, graphs, workers, ray_address, each)
    if not workers or workers == 1:
        return [_kept(each, index, job(checkpoint, graph)) for index, graph in enumerate(graphs)]
    context = multiprocessing.get_context(START_METHOD)
    pool = ProcessPoolExecutor(min(workers, len(graphs)), mp_context=context, initializer=_start_worker, initargs=(checkpoint,))
    try:
        return [_kept(each, index, result) for index, result in enumerate(pool.map(_run_job, [job] * len(graphs), graphs))]
    finally:
        pool.shutdown(cancel_futures=True)


def _kept(each: Callable[[int, Any], None], index: int, result: Any) -> Any:
    each(index, result)
    return result


_worker_checkpoint: Checkpoint | None = None


def _start_worker(checkpoint: Checkpoint) -> None:
    """Runs once in each worker process: one torch thread, and the model kept for every graph."""
    global _worker_checkpoint
    torch.set_num_threads(1)
    _worker_checkpoint = checkpoint


def _run_job(job: Job, graph: Graph):
    if _worker_checkpoint is None:
        raise RuntimeError("_run_job runs in the pool's workers, after _start_worker")
    return job(_worker_checkpoint, graph)


class RayWorker:
    """A Ray actor holding the model; :func:`_map_on_ray` makes it remote (Ray is optional)."""

    def __init__(self, checkpoint: Checkpoint):
        _start_worker(checkpoint)

    def run(self, job: Job, graph: Graph):
        return _run_job(job, graph)


def _map_on_ray(
    job: Job, checkpoint: Checkpoint, graphs: Sequence[Graph], workers: int | None, address: str, each: Callable[[int, Any], None]
) -> list:
    """One actor per worker (default: one per CPU of the cluster), each given the next graph as it
    finishes one; results in the graphs' order. A cluster that dies raises :class:`ClusterLost`
    holding the results finished by then."""
    ray = import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        init_ray(ray, address, include_dashboard=False if address == "local" else None)
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
                running[worker.run.remote(job, graph)] = (index, worker)
            for ref in answered(ray, list(running), 1, finished):
                index, worker = running.pop(ref)
                finished[index] = get_answered(ray, [ref], finished)[0]
                each(index, finished[index])
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
    while len(answered(ray, refs, len(refs), {})) < len(refs):
        pass
    return get_answered(ray, refs, {})


def answered(ray, refs: list, wanted: int, finished: dict[int, Any]) -> list:
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


def get_answered(ray, refs: list, finished: dict[int, Any]) -> list:
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


def init_ray(ray, address: str | None, include_dashboard: bool | None = None) -> None:
    """``ray.init(address)``, Ray's workers' logs not forwarded to this process (and no dashboard
    with ``include_dashboard=False``); an address where no cluster answers (``None``:
    ``$RAY_ADDRESS``, else a new local instance) is refused within seconds with a one-line error
    instead of Ray's minutes of retries and its traceback."""
    named = address if address is not None else os.environ.get("RAY_ADDRESS")
    where = "--ray-address" if address is not None else "$RAY_ADDRESS"
    if named not in (None, "", "auto", "local"):
        _check_answers(named, where)
    try:
        # Ray's INFO lines are not the user's business
        ray.init(address=address, logging_level=logging.WARNING, include_dashboard=include_dashboard, log_to_driver=False)
    except ConnectionError as err:
        first = str(err).split(". ")[0].rstrip(".")
        raise UsageError(
            f"{where} {named or 'auto'}: {first}; start a cluster with 'ray start --head', or pass --ray-address local "
            "to start one in this process"
        ) from None


def check_cluster(address: str, where: str = "--ray-address") -> None:
    """Before anything is written: Ray installed, and ``address`` (``auto``, ``local`` or
    ``host:port``) a cluster that accepts a connection where it names one; else one-line usage error."""
    import_ray()
    if address not in ("", "auto", "local"):
        _check_answers(address, where)


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
