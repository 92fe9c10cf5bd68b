"""Experiment tracking of a training run in MLflow (``train --track mlflow``) or Weights & Biases
(``train --track wandb``): the run's settings, every scalar SB3 logs (what TensorBoard gets) at its
env step, and the saved model folder as an artifact once its save has committed.

Both are an optional extra (``pip install 'graphtransfer[track]'``), never required, and both
record offline by default, so nothing needs the network:

- MLflow: a local SQLite database, ``./mlflow.db``, with the artifacts in ``mlartifacts/`` beside
  it (MLflow 3 keeps its folder store only behind an opt-out); ``--track-uri`` names another
  database (a path or ``sqlite:///path``) or any MLflow URI (a server). The run is written through
  an ``MlflowClient`` of its own: the process's global MLflow state is left as it was.
- W&B: an offline run in ``wandb/`` under the folder ``--track-uri`` names, else under
  ``WANDB_DIR``, else under the working directory, for ``wandb sync`` to upload later; ``WANDB_MODE`` (``online``, a
  logged-in user's choice) overrides the offline default. The project is the run's task (or env)
  name, the run is named after the model folder.
"""

from __future__ import annotations

import logging
import math
import os
import re
import time
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from filelock import FileLock
from stable_baselines3.common.logger import KVWriter

from graphtransfer.config import ALGOS, RunConfig
from graphtransfer.errors import GraphTransferError, UsageError
from graphtransfer.io import check_path_form

TRACKERS = ("mlflow", "wandb")
TRACK_EXTRA = "pip install 'graphtransfer[track]'"
DEFAULT_STORE = "mlflow.db"
"""the tracking database, relative to the working directory, when no --track-uri is given"""
ARTIFACTS = "mlartifacts"
"""the folder beside a local database that a new experiment's artifacts go to"""
MODEL_ARTIFACT = "model"
"""where the model folder goes among the run's artifacts"""
SQLITE_HEADER = b"SQLite format 3\x00"


@dataclass(frozen=True)
class Tracking:
    """Where a training run is tracked: the tool (:data:`TRACKERS`), its store and the experiment."""

    tool: str = "mlflow"
    uri: str | None = None
    """MLflow: a tracking URI, or the path of a local database (default :data:`DEFAULT_STORE`); W&B:
    the folder its ``wandb/`` run folders go in (default the working directory)"""
    experiment: str | None = None
    """the experiment's name; default the run's task (or env) name"""


def local_database(uri: str) -> Path | None:
    """The SQLite file a tracking URI names (``sqlite:///path`` or a plain path), else ``None``."""
    parsed = urlparse(uri)
    if parsed.scheme == "sqlite":
        return Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None
    return Path(uri) if parsed.scheme == "" else None


def tracking_uri(tracking: Tracking) -> str:
    """The URI MLflow gets: the given one, a plain path as ``sqlite:///`` and its absolute path."""
    uri = tracking.uri or DEFAULT_STORE
    database = local_database(uri)
    return f"sqlite:///{database.resolve()}" if database is not None else uri


def check_tracking(tracking: Tracking) -> None:
    """Refuse, before training starts, a tool we do not know, a missing extra, and a local
    database that cannot be written."""
    if tracking.tool not in TRACKERS:
        raise UsageError(f"--track {tracking.tool!r} must be one of {', '.join(TRACKERS)}, e.g. --track mlflow")
    if tracking.tool == "wandb":
        _check_wandb_folder(tracking)
        _wandb()
        return
    database = local_database(tracking.uri or DEFAULT_STORE)
    if database is not None:
        _check_database(database, "--track-uri" if tracking.uri else f"--track (its default database ./{DEFAULT_STORE})")
    _mlflow()


def _check_database(database: Path, option: str) -> None:
    """The output rule for the local database (:func:`graphtransfer.io.check_path_form`): in a
    folder this process can write, new or an SQLite file (MLflow's), never another file."""
    check_path_form(database, option)
    if database.is_dir():
        raise UsageError(f"{option} {database}: is a folder; name the database file, e.g. --track-uri {database / DEFAULT_STORE}")
    if database.exists():
        with open(database, "rb") as handle:
            if handle.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
                raise UsageError(f"{option} {database}: exists and is not an SQLite database; name a new file or MLflow's database")
    check_path_form(database.resolve().parent / ARTIFACTS, option)


def _mlflow():
    try:
        import mlflow
    except ImportError:
        raise UsageError(f"--track mlflow needs the mlflow package: {TRACK_EXTRA} (or pip install mlflow-skinny)") from None
    return mlflow


@contextmanager
def _quiet():
    """MLflow's and alembic's INFO lines (a new database's tables) kept off the run's output."""
    loggers = [logging.getLogger(name) for name in ("mlflow", "alembic")]
    levels = [logger.level for logger in loggers]
    try:
        for logger in loggers:
            logger.setLevel(logging.WARNING)
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def start_tracking(tracking: Tracking, config: RunConfig, folder: Path) -> MLflowRun | WandbRun:
    """The tracked run of a training run about to start in ``folder``, in MLflow or W&B."""
    return WandbRun(tracking, config, folder) if tracking.tool == "wandb" else MLflowRun(tracking, config, folder)


def tracking_summary(tracking: Tracking, config: RunConfig) -> str:
    """The line that says where a finished run was tracked and how to look at it."""
    if tracking.tool == "wandb":
        runs = wandb_folder(tracking) / "wandb"
        return f"tracked in W&B ({wandb_mode()}): {runs}, project {config.name!r} (to upload an offline run: wandb sync --sync-all {runs})"
    where = tracking_uri(tracking)
    return f"tracked in MLflow: {where}, experiment {config.name!r} (to browse: mlflow ui --backend-store-uri {where})"


class MLflowRun:
    """One MLflow run of a training run: :attr:`metrics` is the SB3 logger output that records its
    scalars, :meth:`finish` logs the model folder and closes the run."""

    def __init__(self, tracking: Tracking, config: RunConfig, folder: Path):
        mlflow = _mlflow()
        self.uri = tracking_uri(tracking)
        try:
            self.client, self.run_id = _start_run(mlflow, tracking, config, folder)
            params = [mlflow.entities.Param(key, _param_text(value)) for key, value in flat_settings(tracked_settings(config)).items()]
            for first in range(0, len(params), 100):  # MLflow takes at most 100 parameters per batch
                self.client.log_batch(self.run_id, params=params[first : first + 100])
        except Exception as err:  # MLflow's own errors, SQLAlchemy's, the disk's: nothing was trained yet
            raise TrackingFailed(f"MLflow store {self.uri}: {_first_line(err)}; nothing was trained") from None
        self.metrics = MLflowOutput(self.client, self.run_id)

    def finish(self, folder: Path | None, status: str) -> None:
        """Log ``folder`` (the committed model folder, without its hidden lock and staging files;
        ``None`` when nothing was saved) and end the run with MLflow's ``status`` (FINISHED,
        KILLED for an interrupted run, FAILED). A store that failed meanwhile raises
        :class:`TrackingFailed`; the model folder is saved by then."""
        try:
            if self.metrics.failure is not None:
                raise self.metrics.failure
            for entry in sorted(folder.iterdir()) if folder is not None else []:
                if entry.is_dir() and not entry.name.startswith("."):
                    self.client.log_artifacts(self.run_id, str(entry), f"{MODEL_ARTIFACT}/{entry.name}")
                elif entry.is_file() and not entry.name.startswith("."):
                    self.client.log_artifact(self.run_id, str(entry), MODEL_ARTIFACT)
            self.client.set_terminated(self.run_id, status if self.metrics.failure is None else "FAILED")
        except Exception as err:
            with suppress(Exception):
                self.client.set_terminated(self.run_id, "FAILED")
            saved = f"; the model is saved in {folder} all the same" if folder is not None else ""
            raise TrackingFailed(f"MLflow run {self.run_id} in {self.uri}: {_first_line(err)}{saved}") from None


class TrackingFailed(GraphTransferError):
    """The tracking store failed during or after training (the model folder is saved regardless)."""


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"


def _start_run(mlflow, tracking: Tracking, config: RunConfig, folder: Path):
    """A client of the store and a new run in the experiment (created if new). A local database is
    created, or its tables brought up to date, under a lock beside it: MLflow's migrations of one
    database by two processes at once fail."""
    database = local_database(tracking.uri or DEFAULT_STORE)
    artifacts = (database.resolve().parent / ARTIFACTS).as_uri() if database is not None else None
    lock = FileLock(f"{database.resolve()}.lock") if database is not None else nullcontext()
    with lock, _quiet():
        client = mlflow.MlflowClient(tracking_uri=tracking_uri(tracking))
        name = tracking.experiment or config.name
        found = client.get_experiment_by_name(name)
        experiment = found.experiment_id if found is not None else _create_experiment(client, name, artifacts)
    tags = {"graphtransfer.folder": str(folder.resolve()), "graphtransfer.task": config.name}
    return client, client.create_run(experiment, run_name=folder.name, tags=tags).info.run_id


def _create_experiment(client, name: str, artifacts: str | None) -> str:
    """Create the experiment ``name`` (its artifacts in ``artifacts``, else the store's default);
    a process that created it meanwhile (two runs started at once) wins."""
    try:
        return client.create_experiment(name, artifact_location=artifacts)
    except Exception:  # MLflow raises its own MlflowException for a name taken meanwhile
        found = client.get_experiment_by_name(name)
        if found is None:
            raise
        return found.experiment_id


MAX_PARAM_CHARS = 6000
"""MLflow's longest parameter value"""


def _param_text(value: Any) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= MAX_PARAM_CHARS else text[: MAX_PARAM_CHARS - 3] + "..."


def tracked_settings(config: RunConfig) -> dict[str, Any]:
    """The run's settings as a tracker records them: every section but those of the algorithms the
    run does not use (a PPO run has no ``dqn.*``; the ``ppo`` section holds what every algorithm
    shares, so every run has it)."""
    unused = {algo for algo in ALGOS if algo != config.algo and algo != "ppo"}
    return {key: value for key, value in config.to_dict().items() if key not in unused}


def flat_settings(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested settings mapping as dotted keys, as ``--set`` names them (``ppo.gamma``)."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, dict) and value:
            flat |= flat_settings(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


class MLflowOutput(KVWriter):
    """SB3's logger output to an MLflow run: every finite number SB3 records for TensorBoard, at its env step."""

    def __init__(self, client, run_id: str):
        self.client, self.run_id = client, run_id
        self.failure: Exception | None = None
        """what the store raised; logging then stops, and training goes on to its save"""

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        metrics = [
            Metric(key, float(value), stamp, int(step))
            for key, value in key_values.items()
            if _is_metric(value) and not _excluded(key_excluded.get(key))
        ]
        if metrics and self.failure is None:
            try:
                self.client.log_batch(self.run_id, metrics=metrics)
            except Exception as err:  # a full disk or a store gone mid-run: the model still gets saved
                self.failure = err

    def close(self) -> None:
        pass


def _is_metric(value: Any) -> bool:
    try:
        return not isinstance(value, str | bool) and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _excluded(formats: tuple[str, ...] | str | None) -> bool:
    """Excluded from TensorBoard (or from MLflow or W&B by name): SB3's way of keeping a key out of an output."""
    if formats is None:
        return False
    formats = (formats,) if isinstance(formats, str) else formats
    return bool({"tensorboard", "mlflow", "wandb"} & set(formats))


WANDB_DEFAULT_MODE = "offline"
"""W&B's mode unless ``WANDB_MODE`` says otherwise: nothing leaves the machine until ``wandb sync``"""
WANDB_STATUS = {"FINISHED": 0, "KILLED": 130, "FAILED": 1}
"""the exit code W&B records for each end of a run (130: stopped by Ctrl-C)"""


def wandb_mode() -> str:
    """The mode a W&B run starts in: ``WANDB_MODE`` where set, else :data:`WANDB_DEFAULT_MODE`."""
    return os.environ.get("WANDB_MODE", WANDB_DEFAULT_MODE)


def wandb_folder(tracking: Tracking) -> Path:
    """The folder W&B's ``wandb/`` run folders go in: ``--track-uri``, else ``WANDB_DIR`` as W&B
    itself reads it, else the working directory."""
    return Path(tracking.uri or os.environ.get("WANDB_DIR") or ".")


def _check_wandb_folder(tracking: Tracking) -> None:
    """A folder (made if new) that this process can write, never a file."""
    folder = wandb_folder(tracking)
    option = "--track-uri" if tracking.uri else "WANDB_DIR" if str(folder) != "." else "--track wandb (its folder, the working directory)"
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{option} {folder}: is a file; name the folder W&B's runs go in, e.g. --track-uri runs")
    check_path_form(folder.resolve() / "wandb", option)


def _wandb():
    """The wandb module; for an offline run, with W&B's crash reports to its servers off (unless the
    user set ``WANDB_ERROR_REPORTING``): an offline run sends nothing."""
    if wandb_mode() == "offline":
        os.environ.setdefault("WANDB_ERROR_REPORTING", "false")
    try:
        import wandb
    except ImportError:
        raise UsageError(f"--track wandb needs the wandb package: {TRACK_EXTRA} (or pip install wandb)") from None
    return wandb


class WandbRun:
    """One W&B run of a training run, offline unless ``WANDB_MODE`` says otherwise: the settings as
    its config, :attr:`metrics` the SB3 logger output that logs its scalars, :meth:`finish` logs the
    model folder as a ``model`` artifact and ends the run."""

    def __init__(self, tracking: Tracking, config: RunConfig, folder: Path):
        wandb = _wandb()
        self.where = wandb_folder(tracking)
        self.where.mkdir(parents=True, exist_ok=True)
        quiet = wandb.Settings(silent=True, console="off", x_disable_stats=True, save_code=False)
        try:
            self.run = wandb.init(
                project=tracking.experiment or config.name,
                name=folder.name,
                dir=str(self.where.resolve()),
                config=tracked_settings(config),
                mode=wandb_mode(),
                settings=quiet,
            )
        except Exception as err:  # W&B's own errors, the disk's: nothing was trained yet
            raise TrackingFailed(f"W&B run in {self.where}: {_first_line(err)}; nothing was trained") from None
        self.metrics = WandbOutput(self.run)

    def finish(self, folder: Path | None, status: str) -> None:
        """Log ``folder`` (the committed model folder, without its hidden files; ``None`` when nothing
        was saved) and end the run (a non-zero exit code for an interrupted or failed run). A run that
        failed meanwhile raises :class:`TrackingFailed`; the model folder is saved by then."""
        wandb = _wandb()
        try:
            if self.metrics.failure is not None:
                raise self.metrics.failure
            if folder is not None:
                model = wandb.Artifact(artifact_name(folder.name), type="model", metadata={"folder": str(folder.resolve())})
                for entry in sorted(folder.iterdir()):
                    if not entry.name.startswith("."):
                        (model.add_dir if entry.is_dir() else model.add_file)(str(entry), name=entry.name)
                self.run.log_artifact(model)
            self.run.finish(exit_code=WANDB_STATUS.get(status, 1) if self.metrics.failure is None else 1)
        except Exception as err:
            with suppress(Exception):
                self.run.finish(exit_code=1)
            saved = f"; the model is saved in {folder} all the same" if folder is not None else ""
            raise TrackingFailed(f"W&B run {self.run.id} in {self.where}: {_first_line(err)}{saved}") from None


def artifact_name(name: str) -> str:
    """A model folder's name as a W&B artifact name (letters, digits, ``-``, ``_`` and ``.``)."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", name) or "model"


class WandbOutput(KVWriter):
    """SB3's logger output to a W&B run: every finite number SB3 records for TensorBoard, at its env step."""

    def __init__(self, run: Any):
        self.run = run
        self.failure: Exception | None = None
        """what W&B raised; logging then stops, and training goes on to its save"""

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, tuple[str, ...]], step: int = 0) -> None:
        metrics = {key: float(value) for key, value in key_values.items() if _is_metric(value) and not _excluded(key_excluded.get(key))}
        if metrics and self.failure is None:
            try:
                self.run.log(metrics, step=int(step))
            except Exception as err:
                self.failure = err

    def close(self) -> None:
        pass
