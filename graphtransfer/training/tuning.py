"""Hyperparameter search with Optuna, as rl-zoo3's ``--optimize`` does: each trial trains a short
run with sampled PPO and model settings, is evaluated on held-out graphs every few thousand steps
(the evaluation ``eval`` runs) and pruned when it falls below the median of the trials before it.

The study lives in a SQLite file in the output folder, so a stopped search (Ctrl-C, a batch job's
time limit) resumes where it was with the same command. The best trial is written as a whole run
config, ``best.yaml``, that ``graphtransfer train --config`` takes. Needs ``graphtransfer[tune]``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from graphtransfer.config import RunConfig
from graphtransfer.envs.factory import run_env
from graphtransfer.envs.protocol import features_of
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, load_graphs, resolve
from graphtransfer.io import LOCK_NAME, check_output_folder, folder_lock
from graphtransfer.solve.evaluate import evaluate
from graphtransfer.training.callbacks import Periodic, eval_score, rng_kept
from graphtransfer.training.loop import train

STUDY_FILE, BEST_FILE, PLOT_FILE = "study.db", "best.yaml", "study.png"
INSTALL = "pip install 'graphtransfer[tune]'"

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
    """holds study.db, best.yaml and one run folder per trial in trials/"""
    finished: int
    """trials completed or pruned in the study, this search's and earlier ones'"""
    pruned: int
    best_value: float | None
    best_params: dict[str, Any]
    best_config: Path | None
    """best.yaml: the best trial's whole config, for ``graphtransfer train --config``"""


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


def tune(
    config: RunConfig,
    folder: str | Path,
    n_trials: int,
    timeout: float | None = None,
    log: Callable[[str], None] = print,
) -> TuneResult:
    """Search :data:`SEARCH_SPACE` around ``config`` (every other setting is kept) until the study
    in ``folder`` holds ``n_trials`` finished trials or ``timeout`` seconds pass.

    Each trial trains ``config.ppo.total_timesteps`` steps into ``folder/trials/trial-<N>`` and is
    scored on ``config.log.eval_graphs`` (default: the training graphs) every ``config.log.eval_every``
    steps (default: a fifth of the run) by the mean policy/baseline ratio (or the objective without
    a baseline); Optuna's median pruner stops trials below the median. best.yaml keeps ``config``'s
    log settings; the trials' own runs evaluate only for the search.

    Example::

        base = RunConfig(task="mis", graphs="small", log=LogConfig(eval_graphs="evalset/", eval_every=4000))
        result = tune(base, "runs/tune/mis", n_trials=20)
        train(resolve([read_file(result.best_config)]))  # graphtransfer.config.layers
    """
    optuna = import_optuna()
    folder = Path(folder)
    inputs = [resolve(spec) for spec in (config.graphs, config.log.eval_graphs) if spec]
    # a folder holding a study.db of any kind is the study to continue; open_study says what is wrong with a damaged one
    check_output_folder(folder, inputs, lambda found: (found / STUDY_FILE).exists(), "study")
    folder.mkdir(parents=True, exist_ok=True)
    held_out = config.log.eval_graphs
    if held_out is None:
        log(f"evaluating trials on the training graphs {config.graphs}; pass held-out graphs (--eval-graphs) for a fairer choice")
    graphs = load_graphs(held_out or config.graphs)
    budget = config.ppo.total_timesteps
    every = config.log.eval_every or max(1, budget // 5)
    if every > budget:
        raise UsageError(f"--eval-every {every} exceeds the {budget} steps of a trial; use --eval-every {budget // 5 or 1} or fewer")
    sense = features_of(run_env(config, graphs)).sense
    busy = (
        f"{folder}: another 'graphtransfer tune' is running this study (it holds {folder / LOCK_NAME}); "
        "wait for it to finish, or pass another --out"
    )
    with folder_lock(folder, timeout=0, busy=busy), _study_storage(folder) as storage:
        study = optuna.create_study(
            study_name="graphtransfer",
            storage=storage,
            load_if_exists=True,
            direction="maximize" if sense == "max" else "minimize",
            pruner=optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=every),
        )
        _fail_stale_trials(study, optuna, log)
        study.sampler = _sampler(optuna, config.ppo.seed, len(study.trials))
        remaining = n_trials - _count(study, optuna, "COMPLETE", "PRUNED")
        if remaining > 0:
            log(f"study {folder / STUDY_FILE}: {n_trials - remaining} trials done, running up to {remaining} more")
            quiet = replace(config, log=replace(config.log, eval_graphs=None, eval_every=0))  # the search evaluates, not each run
            objective = _objective(quiet, graphs, every, folder, optuna, log)
            study.optimize(objective, n_trials=remaining, timeout=timeout, catch=())
        return _result(study, optuna, config, folder)


def _sampler(optuna, seed: int, trials_before: int):
    """TPE seeded by the run's seed and the trials the study already holds: a resumed search
    draws new settings instead of repeating those its first trials drew, and the same commands
    still give the same study."""
    return optuna.samplers.TPESampler(seed=(seed + trials_before) % 2**32, n_startup_trials=5)


@contextlib.contextmanager
def _study_storage(folder: Path) -> Iterator[str]:
    """The storage URL of ``folder``'s study file; a file SQLite or Optuna cannot read as a study
    (damaged, cut short, another kind of file, a folder) becomes one error naming it."""
    from optuna.exceptions import StorageInternalError
    from sqlalchemy.exc import SQLAlchemyError  # Optuna's storage layer

    path = folder / STUDY_FILE
    start_over = "move it away (or pass another --out) to start a new study"
    if path.is_dir():
        raise UsageError(f"{path}: is a folder, not a study file; {start_over}")
    try:
        yield f"sqlite:///{path.resolve()}"
    except (SQLAlchemyError, StorageInternalError) as err:
        cause = err.__cause__ if isinstance(err, StorageInternalError) and err.__cause__ else err
        detail = getattr(cause, "orig", None) or cause
        raise UsageError(
            f"{path}: is not a readable Optuna study ({detail}); the file is damaged or of another kind: {start_over}"
        ) from None


def _objective(config: RunConfig, graphs: list[Graph], every: int, folder: Path, optuna, log: Callable[[str], None]):
    """The function Optuna calls per trial: sample, train with evaluations reported, score."""

    def objective(trial) -> float:
        values = sample(trial)
        trial_config = with_values(config, values)
        reporter = ReportToTrial(trial, trial_config, graphs, every)
        result = train(trial_config, folder / "trials" / f"trial-{trial.number}", log=lambda _: None, callback=reporter)
        if result.interrupted:
            raise KeyboardInterrupt  # Ctrl-C: the trial is marked failed; the study resumes with the next
        if reporter.pruned:
            log(f"trial {trial.number}: pruned at step {reporter.steps} (score {reporter.score:.4g}); {_describe(values)}")
            raise optuna.TrialPruned()
        reporter.at_end()  # the score at the budget, if the last evaluation came earlier
        log(f"trial {trial.number}: score {reporter.score:.4g} ({reporter.by}); {_describe(values)}")
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
            rows = evaluate(self.model.policy, self.config, self.graphs, rollouts=1)  # one rollout, as the run's evaluations
        self.score, self.by = eval_score(rows)
        self.steps = self.model.num_timesteps
        self.trial.report(self.score, self.steps)
        self.pruned = self.trial.should_prune()

    def _on_step(self) -> bool:
        return not self.pruned


def _fail_stale_trials(study, optuna, log: Callable[[str], None]) -> None:
    """A trial left RUNNING by a search that was killed would never finish: mark it failed."""
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
        log(f"trial {trial.number}: left running by a stopped search; marked failed")


def _count(study, optuna, *states: str) -> int:
    wanted = tuple(getattr(optuna.trial.TrialState, state) for state in states)
    return len(study.get_trials(deepcopy=False, states=wanted))


def _describe(values: dict[str, Any]) -> str:
    """``learning_rate=0.000312, n_steps=64, ...``: a trial's settings on one line."""
    return ", ".join(
        f"{key.partition('.')[2]}={value:.3g}" if isinstance(value, float) else f"{key.partition('.')[2]}={value}"
        for key, value in values.items()
    )


def _result(study, optuna, config: RunConfig, folder: Path) -> TuneResult:
    """The study's state; writes best.yaml when a trial has completed."""
    finished, pruned = _count(study, optuna, "COMPLETE", "PRUNED"), _count(study, optuna, "PRUNED")
    if _count(study, optuna, "COMPLETE") == 0:
        return TuneResult(folder, finished, pruned, None, {}, None)
    best = study.best_trial
    best_config = with_values(config, best.params)
    path = folder / BEST_FILE
    header = f"# best of {finished} trials (trial {best.number}, score {best.value:.6g}); 'graphtransfer train --config {path}'\n"
    path.write_text(header + best_config.to_yaml())
    return TuneResult(folder, finished, pruned, best.value, dict(best.params), path)


def plot_study(folder: str | Path, out: str | Path | None = None) -> Path:
    """Draw the study in ``folder``: each trial's score (pruned ones at their last report) and the
    best so far, against the trial number; and each trial's reported scores against env steps."""
    optuna = import_optuna()
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    folder = Path(folder)
    if not (folder / STUDY_FILE).exists():
        raise UsageError(f"{folder}: holds no {STUDY_FILE}; run 'graphtransfer tune --out {folder}' first")
    with _study_storage(folder) as storage:
        try:
            study = optuna.load_study(study_name="graphtransfer", storage=storage)
        except KeyError:  # an SQLite file of other tables, or an empty one
            raise UsageError(
                f"{folder / STUDY_FILE}: holds no graphtransfer study; run 'graphtransfer tune --out {folder}' first"
            ) from None
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
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return path
