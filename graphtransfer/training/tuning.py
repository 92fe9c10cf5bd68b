"""Hyperparameter search with Optuna, as rl-zoo3's ``--optimize`` does: each trial trains a short
run with sampled PPO and model settings, is evaluated on held-out graphs every few thousand steps
(the evaluation ``eval`` runs) and may be pruned (by default when it falls below the median of the
trials before it).

The study lives in a SQLite file in the output folder, or in any Optuna RDB storage (``--storage``),
so a stopped search (Ctrl-C, a batch job's time limit) resumes where it was with the same command,
and several processes, on one machine (``--n-jobs``), a Ray cluster (``--ray-address``) or several
machines, share one study: each draws new
trials until the study holds the number asked for. The best trial is written as a whole run config,
``best.yaml``, that ``graphtransfer train --config`` takes. Needs ``graphtransfer[tune]``.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import multiprocessing
import multiprocessing.connection
import os
import re
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from graphtransfer.config import DEFAULT_STUDY, RunConfig, Search
from graphtransfer.envs.protocol import features_of
from graphtransfer.errors import ClusterLost, GraphTransferError, UsageError
from graphtransfer.graphs import Graph, load_graphs, resolve
from graphtransfer.io import LOCK_NAME, SharedFolderLock, atomic_write, check_output_folder, save_figure
from graphtransfer.process import allowed_cores
from graphtransfer.solve.evaluate import evaluate_policy
from graphtransfer.solve.parallel import answered, check_cluster, get_answered, import_ray, init_ray
from graphtransfer.solve.rollouts import ONE_ROLLOUT
from graphtransfer.tasks.factory import run_env
from graphtransfer.training.callbacks import Periodic, defer_interrupts, eval_score, interrupt_pending, remembered_interrupts, rng_kept
from graphtransfer.training.loop import train

if TYPE_CHECKING:  # ForkContext does not exist on Windows
    from multiprocessing.context import ForkContext, SpawnContext

STUDY_FILE, BEST_FILE, PLOT_FILE, STUDY_MARK = "study.db", "best.yaml", "study.png", "study.json"
BEST_LOCK = ".best.yaml.lock"
"""taken while best.yaml is read from the study and written"""
INSTALL = "pip install 'graphtransfer[tune]'"
HEARTBEAT_SECONDS, GRACE_SECONDS = 10, 60
"""a running trial's process stamps it this often; a running trial unstamped for GRACE_SECONDS
(its process was killed) is marked failed when any process of the study starts its next trial"""
SETUP_ATTEMPTS = 3  # tries at opening a storage that another process may be setting up at the same moment
WORKER_STOP_SECONDS = 120.0  # how long --n-jobs workers get to mark their trials failed after Ctrl-C

# dotted key -> how a trial samples it: ("log", low, high) a log-uniform float, ("int", low, high), or a list of choices.
# Ranges as rl-zoo3's PPO sampler, narrowed to what trains on graphs of tens of nodes on a CPU.
SEARCH_SPACE: dict[str, tuple | list] = {
    "ppo.learning_rate": ("log", 1e-5, 3e-3),
    "ppo.n_steps": [16, 32, 64, 128],
    "ppo.batch_size": [16, 32, 64, 128],
    "ppo.n_epochs": ("int", 1, 10),
    "ppo.gamma": [0.9, 0.95, 0.98, 0.99, 0.995],
    "ppo.gae_lambda": [0.8, 0.9, 0.95, 0.98],
    "ppo.clip_range": [0.1, 0.2, 0.3],
    "ppo.ent_coef": [0.0, 1e-4, 1e-3, 1e-2],
    "model.width": [16, 32, 64, 128],
    "model.num_layers": ("int", 1, 5),
    "model.conv": ["sage", "gcn", "gin"],
}


@dataclass
class TuneResult:
    folder: Path
    """holds best.yaml, one run folder per trial in trials/ and, by default, study.db"""
    finished: int
    """trials completed or pruned in the study, this search's and earlier ones' and other processes'"""
    pruned: int
    best_value: float | None
    best_params: dict[str, Any]
    best_config: Path | None
    """best.yaml: the best trial's whole config, for ``graphtransfer train --config``"""
    storage: str = ""
    """where the study is, as shown to the user (a password hidden)"""
    running: int = 0
    """trials still running in other processes when best.yaml was written: the one that ends last writes it again"""


def import_optuna():
    """Optuna, or a one-line error naming the extra that installs it."""
    try:
        import optuna
    except ImportError:
        raise UsageError(f"tune needs Optuna, which is not installed; {INSTALL}") from None
    # one line per trial is ours to print; a failed trial's error is raised to the caller (catch=()),
    # so Optuna's logged copy of it, traceback and all (Ctrl-C's too), would only repeat it
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    return optuna


def tune(config: RunConfig, folder: str | Path, search: Search | None = None, log: Callable[[str], None] = print) -> TuneResult:
    """Search :data:`SEARCH_SPACE` around ``config`` (every other setting is kept) until the study
    holds ``search.n_trials`` finished trials or ``search.timeout`` seconds pass.

    Each trial trains ``config.ppo.total_timesteps`` steps into ``folder/trials/trial-<N>`` and is
    scored on ``config.log.eval_graphs`` (default: the training graphs) every ``config.log.eval_every``
    steps (default: a fifth of the run) by the mean policy/baseline ratio (or the objective without
    a baseline); the pruner may stop it there. best.yaml keeps ``config``'s log settings; the
    trials' own runs evaluate only for the search.

    The study is ``search.study_name`` in ``search.storage`` (default: ``folder/study.db``).
    ``search.n_jobs`` processes run trials at once; other ``tune`` processes, here or on other
    machines, may join the same storage and study name (each with its own ``folder``, or this
    one): every process draws new trials, and together they stop at ``search.n_trials``. The
    folder belongs to one study: another study's search there is refused.

    Example::

        base = RunConfig(task="mis", graphs="small", log=LogConfig(eval_graphs="evalset/", eval_every=4000))
        result = tune(base, "runs/tune/mis", Search(n_trials=20, n_jobs=2))
        train(resolve([read_file(result.best_config)]))  # graphtransfer.config.layers
    """
    optuna = import_optuna()
    search = search or Search()
    _check_search(search, config)
    folder = Path(folder)
    inputs = [resolve(spec) for spec in (config.graphs, config.log.eval_graphs) if spec]
    # a folder holding a study.db of any kind is the study to continue; the storage says what is wrong with a damaged one
    check_output_folder(folder, inputs, _is_study_folder, "study")
    if config.log.eval_graphs is None:
        log(f"evaluating trials on the training graphs {config.graphs}; pass held-out graphs (--eval-graphs) for a fairer choice")
    graphs, every = _evaluation(config)
    sense = features_of(run_env(config, graphs)).sense
    busy = (
        f"{folder}: another process holds {folder / LOCK_NAME} and does not share the study (a 'graphtransfer tune' of "
        "an earlier release); wait for it to finish, or pass another --out"
    )
    with SharedFolderLock(folder, busy) as lock, _storage_errors(folder, search):
        _check_held(folder, search, _held(folder))
        storage = open_storage(folder, search)
        _claim(folder, search)
        study = _open_study(optuna, storage, folder, search, config, every, direction="maximize" if sense == "max" else "minimize")
        if lock.alone and search.storage is None:  # only processes holding this lock use the folder's study.db
            _fail_left_running(study, optuna, lock.since, log)
        _fail_stale(study, optuna)
        done, running = _count(study, optuna, "COMPLETE", "PRUNED"), _count(study, optuna, "RUNNING")
        remaining = search.n_trials - done - running
        if remaining > 0:
            others = f" ({running} running in other processes)" if running else ""
            log(f"study {_shown(folder, search)}: {done} trials done, running up to {remaining} more{_where(search)}{others}")
            if search.n_jobs == 1 and search.ray_address is None:
                with remembered_interrupts():
                    _run_trials(study, optuna, config, folder, search, graphs, every, log)
            else:
                storage.engine.dispose()  # workers open their own connections; none of this process's may be shared
                run = _run_workers if search.ray_address is None else _run_on_ray
                run(config, folder, search, graphs, every, log)
        return _result(study, optuna, config, folder, search)


def _where(search: Search) -> str:
    if search.ray_address is not None:
        return f" in {search.n_jobs} task{'s' if search.n_jobs > 1 else ''} on the Ray cluster {search.ray_address}"
    return f" in {search.n_jobs} processes" if search.n_jobs > 1 else ""


def _check_search(search: Search, config: RunConfig) -> None:
    """Refuse, before anything is read or written, a search that cannot run: its storage URL,
    sampler and pruner (see :func:`check_storage_url`), a Ray cluster that does not answer, and more
    threads than cores."""
    from graphtransfer.training.samplers import check_pruner, check_sampler

    if search.storage is not None:
        check_storage_url(search.storage)
    check_sampler(search.sampler)
    check_pruner(search.pruner)
    if search.ray_address is not None:
        check_cluster(search.ray_address)
    each = config.runtime.threads or 1
    threads, cores = search.n_jobs * each, allowed_cores()
    if threads > cores and search.ray_address is None:
        raise UsageError(
            f"--n-jobs {search.n_jobs} with runtime.threads {each} asks for {threads} threads on {cores} cores; "
            f"use runtime.threads {max(1, cores // search.n_jobs)} or fewer jobs"
        )


def _is_study_folder(folder: Path) -> bool:
    """A folder a search has written to: its study.db (of any kind: the storage says what is wrong
    with a damaged one), its study.json, or the note of a search that is writing study.json now."""
    return (folder / STUDY_FILE).exists() or (folder / STUDY_MARK).exists() or any(folder.glob(f".{STUDY_MARK}.*"))


def _fail_stale(study, optuna) -> None:
    """Mark failed the running trials whose process stopped stamping them (killed)."""
    with warnings.catch_warnings():  # heartbeats are "experimental" in Optuna's own words
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)


def _evaluation(config: RunConfig) -> tuple[list[Graph], int]:
    """The graphs every trial is scored on, and how many env steps apart."""
    graphs = load_graphs(config.log.eval_graphs or config.graphs)
    budget = config.ppo.total_timesteps
    every = config.log.eval_every or max(1, budget // 5)
    if every > budget:
        raise UsageError(f"--eval-every {every} exceeds the {budget} steps of a trial; use --eval-every {budget // 5 or 1} or fewer")
    return graphs, every


def _run_trials(study, optuna, config: RunConfig, folder: Path, search: Search, graphs: list[Graph], every: int, log) -> None:
    """Run trials in this process until the study is full (counting other processes' finished and
    running trials) or the timeout passes."""
    quiet = replace(config, log=replace(config.log, eval_graphs=None, eval_every=0))  # the search evaluates, not each run
    objective = _objective(quiet, graphs, every, folder, optuna, log)

    def stop_when_full(study, _trial) -> None:
        if interrupt_pending():  # a worker's Ctrl-C that came between trials: the trial just told stands
            raise KeyboardInterrupt
        if _count(study, optuna, "COMPLETE", "PRUNED", "RUNNING") >= search.n_trials:
            study.stop()

    _fail_stale(study, optuna)
    if interrupt_pending():
        raise KeyboardInterrupt
    remaining = search.n_trials - _count(study, optuna, "COMPLETE", "PRUNED", "RUNNING")
    if remaining > 0:
        study.optimize(objective, n_trials=remaining, timeout=search.timeout, catch=(), callbacks=[stop_when_full])


@contextlib.contextmanager
def _storage_errors(folder: Path, search: Search) -> Iterator[None]:
    """A storage that cannot be reached or read becomes one error naming it: the folder's study.db
    damaged, cut short, another kind of file or a folder; a --storage URL malformed, of an unknown
    database, without its driver, or where no database answers."""
    from optuna.exceptions import StorageInternalError
    from sqlalchemy.exc import SQLAlchemyError  # Optuna's storage layer

    path = folder / STUDY_FILE
    start_over = "move it away (or pass another --out) to start a new study"
    if search.storage is None and path.is_dir():
        raise UsageError(f"{path}: is a folder, not a study file; {start_over}")
    try:
        yield
    except (SQLAlchemyError, StorageInternalError) as err:
        cause = err.__cause__ if isinstance(err, StorageInternalError) and err.__cause__ else err
        detail = str(getattr(cause, "orig", None) or cause).splitlines()[0]
        if detail == "database is locked":  # SQLite's answer once another process held its write lock past the timeout
            where = path if search.storage is None else f"--storage {_hidden(search.storage)}"
            raise UsageError(
                f"{where}: another process kept the study's database locked for {_CONNECT_ARGS['sqlite']['timeout']} s; "
                "it is busy or stopped (a paused job), not damaged: try again once it goes on or ends"
            ) from None
        if search.storage is None:
            raise UsageError(
                f"{path}: is not a readable Optuna study ({detail}); the file is damaged or of another kind: {start_over}"
            ) from None
        raise UsageError(
            f"--storage {_hidden(search.storage)}: cannot be opened as an Optuna study ({detail}); "
            "check the URL and that the database runs and is reachable from here"
        ) from None


_STORAGE_EXAMPLE = "give an Optuna RDB URL, e.g. --storage sqlite:///study.db or --storage postgresql://user@host/db"


def _open_study(optuna, storage, folder: Path, search: Search, config: RunConfig, every: int, direction: str):
    """The study ``search`` names, created if the storage does not hold it yet, with the search's
    sampler and pruner; refused where it exists but is optimised the other way (another task's)."""
    from graphtransfer.training.samplers import make_pruner, make_sampler

    study = optuna.create_study(
        study_name=search.study_name,
        storage=storage,
        load_if_exists=True,
        direction=direction,
        sampler=make_sampler(search.sampler, config.ppo.seed),
        pruner=make_pruner(search.pruner, every),
    )
    if study.direction.name.lower() != direction:
        raise UsageError(
            f"study {_shown(folder, search)} {study.direction.name.lower()}s its score, but this task's is to {direction[:-1]}e: "
            "it was made for another task; pass another --study-name"
        )
    return study


def open_storage(folder: Path, search: Search):
    """Optuna's RDB storage for ``search`` (default: ``folder/study.db``), with heartbeats on, so a
    trial whose process was killed is marked failed by the next process that starts a trial
    rather than left running forever; it is checked here, so a storage that cannot be opened
    fails before anything trains."""
    from sqlalchemy.exc import IntegrityError, OperationalError

    url = search.storage or f"sqlite:///{(folder / STUDY_FILE).resolve()}"
    backend = check_storage_url(url)
    for attempt in range(1, SETUP_ATTEMPTS):
        try:
            return _rdb_storage(url, backend)
        except (IntegrityError, OperationalError):
            # two processes that meet a new storage both create Optuna's tables and one fails; its next
            # try finds them. A storage that cannot be opened fails every try, the last one raised.
            time.sleep(attempt)
    return _rdb_storage(url, backend)


def _rdb_storage(url: str, backend: str):
    import optuna

    with warnings.catch_warnings():  # heartbeats are "experimental" in Optuna's own words
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.storages.RDBStorage(
            url,
            engine_kwargs={"connect_args": _CONNECT_ARGS[backend]} if backend in _CONNECT_ARGS else {},
            heartbeat_interval=HEARTBEAT_SECONDS,
            grace_period=GRACE_SECONDS,
        )


def check_storage_url(url: str) -> str:
    """Refuse, before anything is written, a ``--storage`` that is no database URL or names a
    database in memory (lost when tune ends, and unseen by other processes); the URL's backend."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        parsed = make_url(url) if "://" in url else None
    except (ArgumentError, ValueError) as err:
        raise UsageError(f"--storage {_hidden(url)}: is not a database URL ({err}); {_STORAGE_EXAMPLE}") from None
    if parsed is None:
        raise UsageError(f"--storage {_hidden(url)}: is not a database URL; {_STORAGE_EXAMPLE}")
    shown = parsed.render_as_string(hide_password=True)
    try:
        parsed.get_dialect().import_dbapi()
    except NoSuchModuleError:
        unknown = f"names a database SQLAlchemy does not know ({parsed.drivername})"
        raise UsageError(f"--storage {shown}: {unknown}; {_STORAGE_EXAMPLE}") from None
    except ImportError as err:
        raise UsageError(
            f"--storage {shown}: the database driver it needs is not installed (no module {err.name!r}); install it "
            "(e.g. pip install psycopg2-binary for postgresql://, pymysql for mysql+pymysql://) or use --storage sqlite:///study.db"
        ) from None
    backend = parsed.get_backend_name()
    if backend == "sqlite" and parsed.database in (None, "", ":memory:"):
        raise UsageError(f"--storage {url}: is a database in memory, lost when tune ends; name a file, e.g. --storage sqlite:///study.db")
    return backend


# several processes write one study: SQLite waits for another writer's transaction instead of failing
# at once; a server that does not answer is given up on within seconds, not the driver's minutes
_CONNECT_ARGS = {"sqlite": {"timeout": 60}, "postgresql": {"connect_timeout": 5}, "mysql": {"connect_timeout": 5}}


def _hidden(url: str) -> str:
    """``url`` with its password, if any, replaced by ``***`` (quoted where it is no URL SQLAlchemy reads)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError, TypeError):
        return repr(re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", str(url)))


def _shown(folder: Path, search: Search) -> str:
    """The study as the user reads it: the folder's study file, or its name in the storage."""
    if search.storage is None and search.study_name == DEFAULT_STUDY:
        return str(folder / STUDY_FILE)
    return f"'{search.study_name}' in {_hidden(search.storage) if search.storage else folder / STUDY_FILE}"


def _held(folder: Path) -> dict[str, str | None] | None:
    """Which study ``folder``'s trials belong to (see :func:`_claim`); a study.db without that
    note is the folder's own study of an earlier release; None: no study yet."""
    mark = folder / STUDY_MARK
    if not mark.exists():
        return {"storage": None, "study_name": DEFAULT_STUDY} if (folder / STUDY_FILE).exists() else None
    try:
        held = json.loads(mark.read_text())
    except (OSError, ValueError):
        held = None
    if not (isinstance(held, dict) and isinstance(held.get("study_name"), str) and isinstance(held.get("storage"), str | None)):
        raise UsageError(f"{mark}: is damaged (it names the study this folder's trials belong to); pass another --out")
    return {"storage": held["storage"], "study_name": held["study_name"]}


def _check_held(folder: Path, search: Search, held: dict[str, str | None] | None) -> None:
    """Refuse a search of another study in a folder that holds one's trials: the trial folders of
    two studies would overwrite each other."""
    if held is not None and held != _identity(search):
        where = f"--storage {held['storage']} " if held["storage"] else ""
        raise UsageError(
            f"{folder}: holds the trials of study '{held['study_name']}' in {held['storage'] or 'its ' + STUDY_FILE}; "
            f"pass {where}--study-name {held['study_name']} to go on with it, or another --out for this one"
        )


def _claim(folder: Path, search: Search) -> None:
    """Note which study ``folder``'s trials belong to (their run folders are numbered by it), unless
    a note is there; of two processes that note at once, one wins and the other is checked against it."""
    mark = folder / STUDY_MARK
    if mark.exists():
        return
    note = folder / f".{STUDY_MARK}.{os.getpid()}.tmp"
    atomic_write(note, (json.dumps(_identity(search)) + "\n").encode())
    try:
        os.link(note, mark)  # fails where the note exists: the first one stays
    except FileExistsError:
        _check_held(folder, search, _held(folder))
    finally:
        note.unlink()


def _identity(search: Search) -> dict[str, str | None]:
    return {"storage": _hidden(search.storage) if search.storage else None, "study_name": search.study_name}


def _run_workers(config: RunConfig, folder: Path, search: Search, graphs: list[Graph], every: int, log: Callable[[str], None]) -> None:
    """Run ``search.n_jobs`` worker processes (:func:`_work`) on the study and print their lines
    here. Each is a session of its own, so Ctrl-C reaches only this process, which passes it on
    once to each worker (they mark their running trials failed) and waits for them to end. A
    worker that fails stops the others; its error is raised here."""
    context = _worker_context(config.runtime.threads or 1)
    workers, ends = [], []
    with remembered_interrupts():
        try:
            for _ in range(search.n_jobs):
                receiving, sending = context.Pipe(duplex=False)
                worker = context.Process(target=_work, args=(sending, config, folder.resolve(), search, graphs, every), name="tune worker")
                worker.start()
                sending.close()  # the worker holds the only sending end, so its end reads as EOF here
                workers.append(worker)
                ends.append(receiving)
            errors = _relay(workers, ends, log)
        except KeyboardInterrupt:
            _stop(workers)
            raise
    for index, worker in enumerate(workers):
        if worker.exitcode not in (0, 130):  # a failure, not a worker another one's failure stopped
            raise (UsageError if worker.exitcode == 2 else GraphTransferError)(errors.get(index) or _ended(worker.exitcode))
    if any(worker.exitcode == 130 for worker in workers):
        raise KeyboardInterrupt  # a worker stopped by a signal of its own


def _worker_context(threads: int) -> ForkContext | SpawnContext:
    """How workers start: forked on Linux when each trains on one torch thread, so a worker starts
    in milliseconds with this process's imports and graphs, where a fresh interpreter spends
    seconds importing torch, PyG and SB3 again. Otherwise fresh ('spawn'): an OpenMP thread pool
    this process may have started does not survive a fork (a forked worker's first op on several
    threads would hang), macOS forks unsafely and Windows not at all."""
    return multiprocessing.get_context("fork") if sys.platform == "linux" and threads == 1 else multiprocessing.get_context("spawn")


def _ended(code: int | None) -> str:
    if code is not None and code < 0:
        return f"a tune worker process was killed by {signal.Signals(-code).name}; run the same command again to go on"
    return f"a tune worker process ended with exit code {code}"


def _relay(workers: list, ends: list[Connection], log: Callable[[str], None]) -> dict[int, str]:
    """Print the workers' lines until every worker has ended; the error each sent, by worker. The
    first worker to fail stops the others."""
    errors: dict[int, str] = {}
    reading = {end: index for index, end in enumerate(ends)}
    while reading:
        for ready in multiprocessing.connection.wait(list(reading)):
            end = cast(Connection, ready)  # wait gives back the connections it was given
            index = reading[end]
            try:
                kind, text = end.recv()
            except EOFError:  # the worker has ended
                del reading[end]
                workers[index].join()
                if workers[index].exitcode != 0:
                    _stop(workers)
                continue
            if kind == "error":
                errors[index] = text
            else:
                log(text)
    return errors


def _stop(workers: list) -> None:
    """Ctrl-C, once, to each worker still running; those that have not ended after
    :data:`WORKER_STOP_SECONDS` are killed."""
    for worker in workers:
        if worker.is_alive():
            os.kill(worker.pid, signal.SIGINT)
    deadline = time.monotonic() + WORKER_STOP_SECONDS
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
        if worker.is_alive():
            worker.kill()
            worker.join()


def _work(sending, config: RunConfig, folder: Path, search: Search, graphs: list[Graph], every: int) -> None:
    """One worker process of ``tune --n-jobs``, started by :func:`_run_workers`: runs trials on the
    study until it is full and sends ``("line", text)`` per trial to the process that started it;
    or sends ``("error", text)`` and exits 2 (bad input) or 1 (a failure); exits 130 on Ctrl-C."""
    if sys.platform != "win32":
        os.setsid()  # Ctrl-C at the terminal reaches the process that started this one, which passes it on once
    defer_interrupts()  # that Ctrl-C stops this worker where its trial is marked failed, not inside a write to the study
    try:
        _join_study(config, folder, search, graphs, every, log=lambda line: sending.send(("line", line)))
    except KeyboardInterrupt:
        sys.exit(130)
    except UsageError as err:
        _exit_with(sending, str(err), 2)
    except Exception as err:  # noqa: BLE001 - whatever ends a worker is one line for the process that started it
        _exit_with(sending, str(err) if isinstance(err, GraphTransferError) else f"{type(err).__name__}: {err}", 1)


def _run_on_ray(config: RunConfig, folder: Path, search: Search, graphs: list[Graph], every: int, log: Callable[[str], None]) -> None:
    """Run ``search.n_jobs`` workers (:func:`_work_on_ray`) as tasks of ``runtime.threads`` CPUs on
    the Ray cluster at ``search.ray_address`` and print their lines here, as they come. Ctrl-C
    cancels them (each marks its running trial failed) and waits for them to end; a worker that
    fails stops the others and its error is raised here, and a cluster that stops answering is
    :class:`graphtransfer.errors.ClusterLost` within seconds."""
    ray = import_ray()
    from ray.util.queue import Queue

    started_here = not ray.is_initialized()
    if started_here:
        init_ray(ray, search.ray_address, include_dashboard=False)
    try:
        lines = Queue()
        task = ray.remote(num_cpus=config.runtime.threads or 1, max_retries=0)(_work_on_ray)
        shared = ray.put(graphs)
        running = [task.remote(lines, config, folder.resolve(), search, shared, every) for _ in range(search.n_jobs)]
        with remembered_interrupts():
            _follow(ray, running, lines, log)
    finally:
        if started_here:
            ray.shutdown()


def _follow(ray, running: list, lines, log: Callable[[str], None]) -> None:
    """Print the tasks' lines (from the Ray queue ``lines``) until every task has ended; cancel
    those left when one fails, on Ctrl-C, or when the cluster stops answering."""
    try:
        while running:
            ready = answered(ray, running, 1, {})
            _print_queued(lines, log)
            for ref in ready:
                running.remove(ref)
                get_answered(ray, [ref], {})  # a worker's own error is raised as itself
    except ClusterLost:
        raise  # nothing more can be asked of a cluster that is gone
    except BaseException:
        _cancel(ray, running)
        _print_queued(lines, log)
        raise
    _print_queued(lines, log)


def _print_queued(lines, log: Callable[[str], None]) -> None:
    while not lines.empty():
        log(lines.get())


def _cancel(ray, running: list) -> None:
    """Ctrl-C to each task still running (a KeyboardInterrupt in it); wait for them, at most
    :data:`WORKER_STOP_SECONDS`, to mark their trials failed."""
    for ref in running:
        ray.cancel(ref)
    with contextlib.suppress(Exception):  # the cluster may be gone too
        ray.wait(running, num_returns=len(running), timeout=WORKER_STOP_SECONDS)


def _work_on_ray(lines, config: RunConfig, folder: Path, search: Search, graphs: list[Graph], every: int) -> None:
    """One worker of ``tune --ray-address``, a Ray task started by :func:`_run_on_ray`: runs trials
    on the study until it is full, putting a line per trial on ``lines`` (a Ray queue). Cancelled,
    it marks its running trial failed and ends; any other error is raised to the caller."""
    try:
        _join_study(config, folder, search, graphs, every, log=lines.put)
    except KeyboardInterrupt:
        return


def _exit_with(sending, error: str, code: int) -> None:
    sending.send(("error", error))
    sys.exit(code)


def _join_study(config: RunConfig, folder: Path, search: Search, graphs: list[Graph], every: int, log: Callable[[str], None]) -> None:
    """A worker's part (:func:`_work`, :func:`_work_on_ray`): trials on the study in its storage until it is full."""
    optuna = import_optuna()
    with _storage_errors(folder, search):
        study = _load_study(optuna, folder, search, config, every)
        _run_trials(study, optuna, config, folder, search, graphs, every, log)


def _load_study(optuna, folder: Path, search: Search, config: RunConfig, every: int):
    """The study the first process created, with this process's sampler and pruner."""
    from graphtransfer.training.samplers import make_pruner, make_sampler

    return optuna.load_study(
        study_name=search.study_name,
        storage=open_storage(folder, search),
        sampler=make_sampler(search.sampler, config.ppo.seed),
        pruner=make_pruner(search.pruner, every),
    )


def _objective(config: RunConfig, graphs: list[Graph], every: int, folder: Path, optuna, log: Callable[[str], None]):
    """The function Optuna calls per trial: sample, train with evaluations reported, score. The
    line it prints names the settings the trial trained with, as best.yaml would hold them."""

    def objective(trial) -> float:
        if interrupt_pending():  # raised here, Optuna marks the trial it has just made failed
            raise KeyboardInterrupt
        values = sample(trial)
        trial_config = with_values(config, values)
        reporter = ReportToTrial(trial, trial_config, graphs, every)
        result = train(trial_config, folder / "trials" / f"trial-{trial.number}", log=lambda _: None, callback=reporter, force=True)
        if result.interrupted:
            raise KeyboardInterrupt  # Ctrl-C: the trial is marked failed; the study resumes with the next
        if reporter.pruned:
            log(f"trial {trial.number}: pruned at step {reporter.steps} (score {reporter.score:.4g}); {_describe(values, trial_config)}")
            raise optuna.TrialPruned()
        reporter.at_end()  # the score at the budget, if the last evaluation came earlier
        log(f"trial {trial.number}: score {reporter.score:.4g} ({reporter.by}); {_describe(values, trial_config)}")
        return reporter.score

    return objective


def sample(trial) -> dict[str, Any]:
    """The trial's settings from :data:`SEARCH_SPACE`, by dotted key."""
    values = {}
    for key, how in SEARCH_SPACE.items():
        if isinstance(how, list):
            values[key] = trial.suggest_categorical(key, how)
        elif how[0] == "log":
            values[key] = trial.suggest_float(key, how[1], how[2], log=True)
        else:
            values[key] = trial.suggest_int(key, how[1], how[2])
    return values


def with_values(config: RunConfig, values: dict[str, Any]) -> RunConfig:
    """``config`` with the dotted ``values`` set, checked as every layer is. A batch larger than a
    rollout is cut to the rollout (as rl-zoo3 does), since PPO refuses it."""
    values = dict(values)
    n_envs = config.ppo.n_envs
    rollout = values.get("ppo.n_steps", config.ppo.n_steps) * n_envs
    if values.get("ppo.batch_size", config.ppo.batch_size) > rollout:
        values["ppo.batch_size"] = rollout
    data = config.to_dict()
    for key, value in values.items():
        section, _, name = key.partition(".")
        data[section][name] = value
    return RunConfig.from_dict(data, "the trial")


class ReportToTrial(Periodic):
    """Evaluates on the held-out graphs every ``every`` steps, reports the score to the Optuna
    trial, and stops training (returns False from the next step) once Optuna prunes it."""

    def __init__(self, trial, config: RunConfig, graphs: list[Graph], every: int):
        super().__init__(every, contextlib.nullcontext)
        self.trial, self.config, self.graphs = trial, config, graphs
        self.pruned = False
        self.score, self.by, self.steps = float("nan"), "", 0

    def act(self) -> None:
        with rng_kept():  # as the run's own evaluations: a trial trains the same weights with or without them
            rows = evaluate_policy(self.model.policy, self.config, self.graphs, ONE_ROLLOUT)  # one rollout, as the run's evaluations
        self.score, self.by = eval_score(rows)
        self.steps = self.model.num_timesteps
        self.trial.report(self.score, self.steps)
        self.pruned = self.trial.should_prune()

    def _on_step(self) -> bool:
        return not self.pruned


def _fail_left_running(study, optuna, before: float, log: Callable[[str], None]) -> None:
    """Trials left running by a search that was killed would never finish: mark failed those that
    started before ``before`` (a ``time.time()``), when no other process was in the study."""
    cutoff = datetime.datetime.fromtimestamp(before)  # Optuna stamps trials in local time
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        if trial.datetime_start is not None and trial.datetime_start < cutoff:
            study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
            log(f"trial {trial.number}: left running by a stopped search; marked failed")


def _count(study, optuna, *states: str) -> int:
    wanted = tuple(getattr(optuna.trial.TrialState, state) for state in states)
    return len(study.get_trials(deepcopy=False, states=wanted))


def _describe(values: dict[str, Any], config: RunConfig) -> str:
    """``learning_rate=0.000312, n_steps=64, ...``: the settings a trial trained with (``config``),
    on one line; a drawn value that was changed to run (a batch cut to the rollout) says so."""
    ran = _settings(config, values)
    parts = []
    for key, value in ran.items():
        name = key.partition(".")[2]
        shown = f"{name}={value:.3g}" if isinstance(value, float) else f"{name}={value}"
        if value != values[key]:
            shown += f" ({values[key]} drawn, cut to the rollout of {config.ppo.n_steps * config.ppo.n_envs})"
        parts.append(shown)
    return ", ".join(parts)


def _settings(config: RunConfig, keys) -> dict[str, Any]:
    """The values of the dotted ``keys`` in ``config``."""
    return {key: getattr(getattr(config, key.partition(".")[0]), key.partition(".")[2]) for key in keys}


def _result(study, optuna, config: RunConfig, folder: Path, search: Search) -> TuneResult:
    """The study's state; writes best.yaml when a trial has completed. Processes sharing the study
    write it one at a time, each from the study as it is then, so the one that writes last leaves
    the best of every trial finished by then; a trial still running elsewhere is said."""
    from filelock import FileLock  # the folder's own lock is held shared by every process of the study

    shown = _shown(folder, search)
    with FileLock(folder / BEST_LOCK):
        finished, pruned = _count(study, optuna, "COMPLETE", "PRUNED"), _count(study, optuna, "PRUNED")
        running = _count(study, optuna, "RUNNING")
        if _count(study, optuna, "COMPLETE") == 0:
            return TuneResult(folder, finished, pruned, None, {}, None, shown, running)
        best = study.best_trial
        best_config = with_values(config, best.params)
        path = folder / BEST_FILE
        still = f", {running} still running in other processes" if running else ""
        header = f"# best of {finished} trials{still} (trial {best.number}, score {best.value:.6g}); "
        header += f"'graphtransfer train --config {path}'\n"
        atomic_write(path, (header + best_config.to_yaml()).encode())
    return TuneResult(folder, finished, pruned, best.value, _settings(best_config, best.params), path, shown, running)


def plot_study(folder: str | Path, out: str | Path | None = None, search: Search | None = None) -> Path:
    """Draw the study of ``folder`` (or the one ``search`` names: its storage and study name):
    each trial's score (pruned ones at their last report) and the best so far, against the trial
    number; and each trial's reported scores against env steps."""
    optuna = import_optuna()
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    folder, search = Path(folder), search or Search()
    if search.storage is None and not (folder / STUDY_FILE).exists():
        raise UsageError(f"{folder}: holds no {STUDY_FILE}; run 'graphtransfer tune --out {folder}' first")
    with _storage_errors(folder, search):
        storage = open_storage(folder, search)
        try:
            study = optuna.load_study(study_name=search.study_name, storage=storage)
        except KeyError:  # no such study; an SQLite file of other tables, or an empty one
            raise UsageError(_no_study(folder, search, storage)) from None
        trials, maximise = study.trials, study.direction == optuna.study.StudyDirection.MAXIMIZE
    figure, (history, curves) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=120)
    best, xs, bests = None, [], []
    for trial in trials:
        reports = sorted(trial.intermediate_values.items())
        if reports:
            curves.plot(*zip(*reports, strict=True), marker=".", alpha=0.7, linestyle="--" if trial.state.name == "PRUNED" else "-")
        value = trial.value if trial.state.name == "COMPLETE" else (reports[-1][1] if reports and trial.state.name == "PRUNED" else None)
        if value is None:
            continue
        pruned = trial.state.name == "PRUNED"
        history.scatter(trial.number, value, marker="x" if pruned else "o", color="grey" if pruned else "C0")
        if not pruned:
            best = value if best is None else (max(best, value) if maximise else min(best, value))
        if best is not None:
            xs.append(trial.number)
            bests.append(best)
    history.step(xs, bests, where="post", color="C1", label="best so far")
    history.set(xlabel="trial (x: pruned, at its last evaluation)", ylabel="score", title="study history")
    curves.set(xlabel="env steps", ylabel="score (held-out evaluation)", title="evaluations per trial (dashed: pruned)")
    for axes in (history, curves):
        axes.grid(True, alpha=0.3)
    history.legend(fontsize=8)
    figure.tight_layout()
    path = Path(out) if out else folder / PLOT_FILE
    save_figure(figure, path)
    plt.close(figure)
    return path


def _no_study(folder: Path, search: Search, storage) -> str:
    """What to say when ``storage`` holds no study of ``search``'s name."""
    if search.storage is None and search.study_name == DEFAULT_STUDY:
        return f"{folder / STUDY_FILE}: holds no graphtransfer study; run 'graphtransfer tune --out {folder}' first"
    names = sorted(summary.study_name for summary in storage.get_all_studies())
    held = f"it holds {', '.join(repr(name) for name in names[:5])}{', ...' if len(names) > 5 else ''}" if names else "it holds none"
    where = _hidden(search.storage) if search.storage else folder / STUDY_FILE
    return f"{where}: no study named '{search.study_name}' ({held}); check --study-name"
