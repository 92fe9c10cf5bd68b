"""``graphtransfer train`` and ``graphtransfer tune``: parse, call the library, print."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from graphtransfer.cli.common import friendly_errors, name_conv, stop_exit_code, stopped_by
from graphtransfer.cli.options import takes_params, takes_settings
from graphtransfer.config import CONVS, RunConfig, Search
from graphtransfer.errors import UsageError
from graphtransfer.process import freeze_loaded_objects

if TYPE_CHECKING:
    from graphtransfer.training.loop import TrainResult


TRAIN_SETTINGS = (
    *("task", "graphs", "env", "env_kwargs", "algo", "horizon"),
    *("total_timesteps", "n_envs", "n_steps", "batch_size", "n_epochs", "target_kl", "seed"),
    *("threads", "device", "vec_env", "ray_address", "max_nodes_per_batch", "mixed_precision"),
    *("conv", "num_layers", "width"),
    *("eval_graphs", "eval_every", "checkpoint_every", "stdout", "tensorboard"),
)
"""train's options that set a config key, by option name; each is made from its schema field"""


@friendly_errors
@takes_settings(*TRAIN_SETTINGS)
def train(
    ctx: typer.Context,
    settings: dict[str, Any],
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="YAML file of settings (a run folder's config.yaml repeats that run); options and --set override it.",
        ),
    ] = None,
    set_values: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override one setting by its dotted key, e.g. --set ppo.gamma=0.995 --set model.width=128."),
    ] = None,
    print_config: Annotated[bool, typer.Option(help="Print the resolved settings as YAML and exit without training.")] = False,
    out: Annotated[Path | None, typer.Option(help="Model folder to write (default: runs/TASK/GRAPHS).")] = None,
    force: Annotated[bool, typer.Option(help="Replace the model already in --out (a run to continue takes --resume).")] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    resume: Annotated[
        Path | None,
        typer.Option(help="Continue the run interrupted (Ctrl-C) in this model folder to its budget, with its config.json's settings."),
    ] = None,
    track: Annotated[
        str | None,
        typer.Option(
            metavar="mlflow|wandb",
            help="Also record the run in MLflow or Weights & Biases: its settings, SB3's scalars, the model folder "
            "(pip install 'graphtransfer\\[track]'). Offline by default: MLflow in ./mlflow.db, W&B in ./wandb/ for "
            "'wandb sync' (WANDB_MODE=online uploads). See --track-uri",
        ),
    ] = None,
    track_uri: Annotated[
        str | None,
        typer.Option(
            metavar="URI",
            help="With --track mlflow: the store, a local database (a path, or sqlite:///path) with the artifacts in mlartifacts/ "
            "beside it, or any MLflow tracking URI (default: ./mlflow.db). With --track wandb: the folder its wandb/ runs go in "
            "(default: .). The experiment (W&B: project) is the run's task (or env) name.",
        ),
    ] = None,
) -> None:
    """Train a policy on small graphs with PPO (or --algo a2c / dqn) and save it. Ctrl-C saves a checkpoint to resume from.

    Settings come from the defaults, the task's graphtransfer/hyperparams/TASK.yml, --config FILE,
    the options typed here, then --set, each later one winning. The run folder gets the model,
    config.yaml (what 'train --config' needs to repeat the run) and progress.csv (for 'graphtransfer plot').

    Examples:

      graphtransfer train --task mis --graphs small

      graphtransfer train --task mvc --algo dqn --total-timesteps 20000 --set dqn.buffer_size=20000

      graphtransfer train --config runs/mis/small/config.yaml --out runs/mis/again

      graphtransfer train --task mis --graphs small --max-nodes-per-batch 50000

      graphtransfer train --set ppo.learning_rate=lin_3e-4 --eval-graphs evalset/ --eval-every 5000 --checkpoint-every 10000

      graphtransfer train --env mysim:EpidemicSim --vec-env ray --ray-address auto --n-envs 32

      graphtransfer train --task matching --graphs small --conv gine

      graphtransfer train --task mis --graphs small --conv mylayers:EdgeGate

      graphtransfer train --task mis --graphs small --track mlflow --track-uri runs/mlflow.db

      graphtransfer train --task mis --graphs small --track wandb
    """
    if resume is not None:
        from graphtransfer.training.loop import resume as resume_training

        _refuse_settings_beside_resume(ctx)
        _name_users_conv(settings)
        freeze_loaded_objects()
        runtime = {name: settings.get(f"runtime.{name}") for name in ("max_nodes_per_batch", "mixed_precision")}  # None: the run's
        result = resume_training(resume, progress=progress and sys.stderr.isatty(), log=typer.echo, env=settings.get("env"), **runtime)
        return _report_training(result, settings.get("env"), settings.get("model.conv"))
    config = _train_config(config_file, settings, set_values or [])
    if print_config:
        typer.echo(config.to_yaml(), nl=False)
        return None
    from graphtransfer.training.loop import train as run_training  # torch and SB3 load here, not for --print-config
    from graphtransfer.training.tracking import tracking_summary

    tracking = _tracking(track, track_uri)
    _name_users_conv(settings)
    freeze_loaded_objects()
    result = run_training(config, out, progress=progress and sys.stderr.isatty(), log=typer.echo, tracking=tracking, force=force)
    _report_training(result, config.env, config.model.conv)
    if tracking is not None:
        typer.echo(tracking_summary(tracking, config))


def _tracking(track: str | None, uri: str | None):
    """``--track`` and ``--track-uri`` as a :class:`graphtransfer.training.tracking.Tracking`, or ``None``."""
    from graphtransfer.training.tracking import Tracking

    if track is None:
        if uri is not None:
            raise UsageError("--track-uri names where --track records the run: add --track mlflow or --track wandb")
        return None
    return Tracking(track, uri)


def _train_config(config_file: Path | None, settings: dict[str, Any], set_values: list[str]) -> RunConfig:
    """The run's settings from the layers, in order; every layer is checked where it comes from."""
    from graphtransfer.config.layers import option_layer, parse_sets, read_file, resolve

    typed = [option_layer(settings), parse_sets(set_values)]
    env = next((data["env"] for _, data in reversed(typed) if data.get("env") is not None), None)  # what the user named here
    layers = [read_file(config_file, env)] if config_file else []
    return resolve([*layers, *typed])


def _typed(ctx: typer.Context, name: str) -> bool:
    """Whether the option ``name`` was given on the command line (not a default or an environment variable)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def _name_users_conv(settings: dict[str, Any]) -> None:
    """Import the user's layer where ``--conv`` on this command line names one (``module:Class``); a
    config file's or a resumed folder's never is (the build then stops, saying to pass ``--conv``)."""
    if settings.get("model.conv") not in (None, *CONVS):
        name_conv(settings["model.conv"])


def _refuse_settings_beside_resume(ctx: typer.Context) -> None:
    """A resumed run keeps its own settings; an option given beside --resume would be silently ignored.
    The runtime options (progress bar, node budget, mixed precision) change how it runs, not what it learns: they stay."""
    flags = {param.name: param.opts[0] for param in ctx.command.params}
    runtime = ("resume", "progress", "max_nodes_per_batch", "mixed_precision", "env", "conv")
    typed = [name for name in ctx.params if name not in runtime and _typed(ctx, name)]
    if typed:
        options = ", ".join(flags[name] for name in typed)
        raise UsageError(f"--resume takes every setting from the folder's config.json; drop {options}")


def _report_training(result: TrainResult, env: str | None, conv: str | None = None) -> None:
    if result.interrupted:
        named = f" --env {env}" if env else ""
        named += f" --conv {conv}" if conv not in (None, *CONVS) else ""
        typer.echo(
            f"{stopped_by()} at step {result.steps} of {result.budget}; saved {result.folder}; "
            f"resume with: graphtransfer train --resume {result.folder}{named}",
            err=True,
        )
        raise typer.Exit(stop_exit_code())
    phases = ", ".join(f"{name} {seconds:.1f}" for name, seconds in result.update_phases.items())
    typer.echo(
        f"trained {result.steps} steps in {result.seconds:.1f} s: rollout {result.rollout_seconds:.1f} s, "
        f"update {result.update_seconds:.1f} s" + (f" ({phases})" if phases else "") + f", {result.steps_per_second:.0f} env steps/s"
    )
    typer.echo(f"saved {result.folder}")


TUNE_SETTINGS = (
    *("task", "graphs", "env", "env_kwargs", "total_timesteps", "n_envs", "seed"),
    *("threads", "device", "eval_graphs", "eval_every"),
)
"""tune's options that set a config key of every trial, by option name; each is made from its schema field"""


TUNE_SEARCH = ("n_trials", "timeout", "storage", "study_name", "n_jobs", "ray_address", "sampler", "pruner")
"""tune's options of how the search runs, made from :class:`graphtransfer.config.Search`"""


@friendly_errors
@takes_settings(*TUNE_SETTINGS)
@takes_params(Search, "search", *TUNE_SEARCH)
def tune(
    ctx: typer.Context,
    settings: dict[str, Any],
    search: Search,
    out: Annotated[
        Path | None,
        typer.Option(help="Folder of best.yaml, trials/ and (without --storage) the study, study.db (default: runs/tune/TASK/GRAPHS)."),
    ] = None,
    config_file: Annotated[Path | None, typer.Option("--config", help="YAML file of the settings the search starts from.")] = None,
    set_values: Annotated[list[str] | None, typer.Option("--set", help="Override one setting by its dotted key, as for train.")] = None,
    plot: Annotated[bool, typer.Option(help="Draw the study's history to OUT/study.png (with --n-trials 0: only draw).")] = False,
) -> None:
    """Search PPO and model settings with Optuna (pruning on held-out evaluations); write the best as a config.

    The study is kept in OUT/study.db (or --storage): run the same command again to resume a stopped search.
    Several tune processes, here (--n-jobs), on a Ray cluster (--ray-address) or on other machines (one --storage and
    --study-name), share a study.
    Needs pip install 'graphtransfer\\[tune]'.

    Examples:

      graphtransfer tune --task mis --graphs small --eval-graphs evalset/ --total-timesteps 20000 --n-trials 30 --timeout 3600

      graphtransfer tune --graphs small --total-timesteps 20000 --n-trials 40 --n-jobs 2 --sampler random --pruner none

      graphtransfer tune --graphs small --storage postgresql://me@db-host/studies --study-name mis-small --n-trials 200

      graphtransfer tune --graphs small --storage postgresql://me@db-host/studies --ray-address auto --n-jobs 16

      graphtransfer train --config runs/tune/mis/small/best.yaml --total-timesteps 100000

      graphtransfer tune --out runs/tune/mis/small --n-trials 0 --plot
    """
    from graphtransfer.training.tuning import import_optuna, plot_study
    from graphtransfer.training.tuning import tune as run_tune

    import_optuna()  # the missing extra is one line, before anything is trained
    config = _train_config(config_file, settings, set_values or [])
    folder = out or Path("runs") / "tune" / config.name / Path(config.graphs).stem
    if search.n_trials:
        result = run_tune(config, folder, search, log=typer.echo)
        typer.echo(f"study {result.storage}: {result.finished} trials finished, {result.pruned} pruned")
        if result.best_config is None:
            typer.echo("no trial completed yet; run the same command again to go on")
        else:
            typer.echo(f"best score {result.best_value:.6g}; wrote {result.best_config}: graphtransfer train --config {result.best_config}")
        if result.running:
            typer.echo(
                f"{result.running} trials of the study were still running in other processes; the best of those finished is "
                "written, and the process that ends last writes the study's best again"
            )
    if plot:
        typer.echo(f"wrote {plot_study(folder, search=search)}")
