"""The ``graphtransfer`` command line: parse, call one library function, print.

Bad user input exits 2 with one line on stderr; a runtime failure exits 1 with its cause. Torch,
PyG and SB3 are imported inside the commands that run a model, so ``--help``, ``tasks`` and
``graphs`` start light.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from graphtransfer.cli.common import fail as _fail
from graphtransfer.cli.common import friendly_errors
from graphtransfer.cli.options import takes_params, takes_settings
from graphtransfer.config import (
    AUTO_ROLLOUTS,
    MAX_DRAW_NODES,
    SEED_LIMIT,
    Decoding,
    RunConfig,
    Runtime,
    Search,
    check_setting,
)
from graphtransfer.errors import ClusterLost, GraphTransferError, UsageError
from graphtransfer.process import free_cores, prefer_small_pages, tune_process

if TYPE_CHECKING:
    from graphtransfer.training.loop import TrainResult

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Train a GNN policy on small graphs with PPO (or A2C, DQN), transfer it to large graphs, predict there.",
)


class GraphCommands(TyperGroup):
    """``graphtransfer graphs``, whose commands (:mod:`graphtransfer.cli.graphs`) are made the first
    time one is asked for: their options name the graph formats and generators, whose modules
    import numpy, which the other commands' ``--help`` then does without."""

    def list_commands(self, ctx: object) -> list[str]:
        return list(_graph_commands())

    def get_command(self, ctx: object, cmd_name: str) -> Any:
        return _graph_commands().get(cmd_name)


@functools.cache
def _graph_commands() -> Mapping[str, Any]:
    from graphtransfer.cli.graphs import app as graphs_app

    return typer.main.get_group(graphs_app).commands


app.add_typer(
    typer.Typer(cls=GraphCommands, no_args_is_help=True, pretty_exceptions_enable=False, help="Inspect, convert and generate graph files."),
    name="graphs",
)


@app.callback()
def _tune_this_process() -> None:
    """Before any command: the process tuning of :func:`graphtransfer.process.tune_process`
    (the solving commands then ask for small pages before torch loads)."""
    tune_process()


_WORKERS_HELP = "With a folder of graphs: local worker processes, one torch thread each (default: 1; with --ray-address, one per CPU)."
_RAY_HELP = (
    "With a folder of graphs: run on this Ray cluster ('auto', 'local' starts one here, or host:port); "
    "needs pip install 'graphtransfer\\[ray]'."
)

ONE_THREAD_BELOW = 10_000
"""predict runs graphs of fewer nodes on one torch thread unless --threads says otherwise"""
SourceOption = Annotated[
    str | None, typer.Option(help="path: the node to route from, by the graph's own id (as the file names it); with --target.")
]
TargetOption = Annotated[str | None, typer.Option(help="path: the node to route to, by the graph's own id; with --source.")]
SolvingDeviceOption = Annotated[
    str,
    typer.Option(
        metavar="cpu|cuda|auto",
        help="Where the policy's passes run: cpu (default), cuda (an error where torch sees no GPU) or auto (cuda where "
        "torch sees a GPU, else cpu); the decoding around them runs on the CPU.",
    ),
]


EnvOption = Annotated[
    str | None,
    typer.Option(
        help="The user env the model was trained on ('package.module:Class' or a gymnasium id). A model folder never "
        "imports code it names: pass the env yourself, and only one you trust."
    ),
]


TRAIN_SETTINGS = (
    *("task", "graphs", "env", "env_kwargs", "algo", "horizon"),
    *("steps", "n_envs", "n_steps", "batch_size", "epochs", "target_kl", "seed"),
    *("threads", "device", "vec_env", "ray_address", "max_nodes_per_batch", "mixed_precision"),
    *("conv", "layers", "width"),
    *("eval_graphs", "eval_every", "checkpoint_every", "verbose", "tensorboard"),
)
"""train's options that set a config key, by option name; each is made from its schema field"""


DeprecatedModelArgument = Annotated[Path | None, typer.Argument(hidden=True, show_default=False, metavar="MODEL")]
"""the model folder as export and plot took it before --model (deprecated: warns; only the usage line shows it)"""


def _model_folder(command: str, option: Path | None, positional: Path | None) -> Path:
    """The model folder of ``command``: ``--model``, or the deprecated positional form with a warning."""
    if option is not None and positional is not None:
        raise UsageError(f"{command}: --model {option} and a positional folder {positional}; name the model folder once, with --model")
    if positional is not None:
        typer.echo(
            f"warning: 'graphtransfer {command} {positional}' is deprecated; write 'graphtransfer {command} --model {positional}'",
            err=True,
        )
        return positional
    if option is None:
        raise UsageError(f"{command}: name the model folder with --model, e.g. graphtransfer {command} --model runs/mis/small")
    return option


@app.command()
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
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    resume: Annotated[
        Path | None,
        typer.Option(help="Continue the run interrupted (Ctrl-C) in this model folder to its budget, with its config.json's settings."),
    ] = None,
    track: Annotated[
        str | None,
        typer.Option(
            metavar="mlflow|wandb",
            help="Also record the run in MLflow or Weights & Biases: its settings, SB3's scalars at every update, the model folder "
            "as an artifact (pip install 'graphtransfer\\[track]'). Offline by default: MLflow in a local database, ./mlflow.db; "
            "W&B as an offline run in ./wandb/ for 'wandb sync' (WANDB_MODE=online to upload as it runs). See --track-uri.",
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

      graphtransfer train --task mvc --algo dqn --steps 20000 --set dqn.buffer_size=20000

      graphtransfer train --config runs/mis/small/config.yaml --out runs/mis/again

      graphtransfer train --task mis --graphs small --max-nodes-per-batch 50000

      graphtransfer train --set ppo.learning_rate=lin_3e-4 --eval-graphs evalset/ --eval-every 5000 --checkpoint-every 10000

      graphtransfer train --env mysim:EpidemicSim --vec-env ray --ray-address auto --n-envs 32

      graphtransfer train --task mis --graphs small --track mlflow --track-uri runs/mlflow.db

      graphtransfer train --task mis --graphs small --track wandb
    """
    if resume is not None:
        from graphtransfer.training.loop import resume as resume_training

        _refuse_settings_beside_resume(ctx)
        runtime = {name: settings.get(f"runtime.{name}") for name in ("max_nodes_per_batch", "mixed_precision")}  # None: the run's
        result = resume_training(resume, progress=progress and sys.stderr.isatty(), log=typer.echo, env=settings.get("env"), **runtime)
        return _report_training(result, settings.get("env"))
    config = _train_config(config_file, settings, set_values or [])
    if print_config:
        typer.echo(config.to_yaml(), nl=False)
        return None
    from graphtransfer.training.loop import train as run_training  # torch and SB3 load here, not for --print-config
    from graphtransfer.training.tracking import tracking_summary

    tracking = _tracking(track, track_uri)
    result = run_training(config, out, progress=progress and sys.stderr.isatty(), log=typer.echo, tracking=tracking)
    _report_training(result, config.env)
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

    layers = [read_file(config_file)] if config_file else []
    return resolve([*layers, option_layer(settings), parse_sets(set_values)])


def _typed(ctx: typer.Context, name: str) -> bool:
    """Whether the option ``name`` was given on the command line (not a default or an environment variable)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def _refuse_settings_beside_resume(ctx: typer.Context) -> None:
    """A resumed run keeps its own settings; an option given beside --resume would be silently ignored.
    The runtime options (progress bar, node budget, mixed precision) change how it runs, not what it learns: they stay."""
    flags = {param.name: param.opts[0] for param in ctx.command.params}
    runtime = ("resume", "progress", "max_nodes_per_batch", "mixed_precision", "env")
    typed = [name for name in ctx.params if name not in runtime and _typed(ctx, name)]
    if typed:
        options = ", ".join(flags[name] for name in typed)
        raise UsageError(f"--resume takes every setting from the folder's config.json; drop {options}")


def _report_training(result: TrainResult, env: str | None) -> None:
    if result.interrupted:
        named = f" --env {env}" if env else ""
        typer.echo(
            f"interrupted at step {result.steps} of {result.budget}; saved {result.folder}; "
            f"resume with: graphtransfer train --resume {result.folder}{named}",
            err=True,
        )
        raise typer.Exit(130)
    phases = ", ".join(f"{name} {seconds:.1f}" for name, seconds in result.update_phases.items())
    typer.echo(
        f"trained {result.steps} steps in {result.seconds:.1f} s: rollout {result.rollout_seconds:.1f} s, "
        f"update {result.update_seconds:.1f} s" + (f" ({phases})" if phases else "") + f", {result.steps_per_second:.0f} env steps/s"
    )
    typer.echo(f"saved {result.folder}")


TUNE_SETTINGS = ("task", "graphs", "env", "env_kwargs", "steps", "n_envs", "seed", "eval_graphs", "eval_every")
"""tune's options that set a config key of every trial, by option name; each is made from its schema field"""
TUNE_SEARCH = ("n_trials", "timeout", "storage", "study_name", "n_jobs", "ray_address", "sampler", "pruner")
"""tune's options of how the search runs, made from :class:`graphtransfer.config.Search`"""


@app.command()
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

      graphtransfer tune --task mis --graphs small --eval-graphs evalset/ --steps 20000 --n-trials 30 --timeout 3600

      graphtransfer tune --graphs small --steps 20000 --n-trials 40 --n-jobs 2 --sampler random --pruner none

      graphtransfer tune --graphs small --storage postgresql://me@db-host/studies --study-name mis-small --n-trials 200

      graphtransfer tune --graphs small --storage postgresql://me@db-host/studies --ray-address auto --n-jobs 16

      graphtransfer train --config runs/tune/mis/small/best.yaml --steps 100000

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
    if plot:
        typer.echo(f"wrote {plot_study(folder, search=search)}")


SOLVE_RUNTIME = ("threads", "max_nodes_per_batch", "mixed_precision")
"""the runtime options of predict, eval and transfer, made from :class:`graphtransfer.config.Runtime`"""


@app.command()
@friendly_errors
@takes_params(Decoding, "decoder", "max_passes")
@takes_params(Runtime, "runtime", *SOLVE_RUNTIME, "device")
def transfer(
    src: Annotated[str, typer.Option(help="Trained model folder, or the graph set name it was trained on.")],
    dst: Annotated[str, typer.Option(help="Sample set name, graph file or folder to transfer to.")],
    decoder: Decoding,
    runtime: Runtime,
    task: Annotated[
        str | None,
        typer.Option(
            help="Task of the source model (checked); with a graph set name as --src, reads runs/TASK/SRC (TASK: mis if not given)."
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Model folder to write (default: runs/TASK/DST).")] = None,
    finetune_steps: Annotated[
        int,
        typer.Option(
            help="Fine-tune on the destination graphs for this many env steps after the zero-shot report "
            "(backward passes of at most --max-nodes-per-batch nodes, default 600000)."
        ),
    ] = 0,
    adapt: Annotated[
        str | None,
        typer.Option(
            metavar="SECONDS",
            help="Adapt to the destination: after the zero-shot report, train for this many wall-clock seconds on "
            "breadth-first balls of up to 1,000 nodes sampled from the destination graphs (seeded), with the task's reward, "
            "evaluate again, and save the adapted model only if it scores at least as well as zero-shot (else the "
            "zero-shot one; the output says which). The evaluations are not counted in SECONDS.",
        ),
    ] = None,
    env: EnvOption = None,
    seed: Annotated[
        int | None,
        typer.Option(
            help="Seed, 0 to 2^32 - 1, of the evaluations' rollouts (default 0, as predict) and of --finetune-steps and "
            "--adapt (default: the source model's ppo.seed); the saved config records a given seed."
        ),
    ] = None,
) -> None:
    """Load a trained policy into a model for other graphs, report, evaluate zero-shot, save.

    Example: graphtransfer transfer --src small --dst large --finetune-steps 16 --max-nodes-per-batch 250000
    Example: graphtransfer transfer --src small --dst er-n5000-d64-s1.txt --adapt 60
    Example: graphtransfer transfer --src small --dst large --device cuda --finetune-steps 16
    """
    adapt_seconds = None if adapt is None else _seconds_option("--adapt", adapt, 60)
    if finetune_steps == 0 and adapt_seconds is None:  # it only solves: see graphtransfer.process.prefer_small_pages
        prefer_small_pages()
    from graphtransfer.reporting.report import format_rows
    from graphtransfer.transferring.transfer import transfer as run_transfer

    if finetune_steps < 0:
        raise UsageError(f"--finetune-steps {finetune_steps} must be 0 (no fine-tuning) or more")
    if seed is not None:
        check_setting("ppo.seed (--seed)", "ppo.seed", seed)
    _use_threads(runtime.threads)
    result = run_transfer(
        src,
        dst,
        task=task,
        folder=out,
        max_passes=decoder.max_passes,
        finetune_steps=finetune_steps,
        log=typer.echo,
        max_nodes_per_batch=runtime.max_nodes_per_batch,
        mixed_precision=runtime.mixed_precision,
        env=env,
        adapt_seconds=adapt_seconds,
        seed=seed,
        device=runtime.device,
    )
    typer.echo(f"source {result.source}: {result.report.summary()}")
    typer.echo(f"zero-shot on the destination graphs ({result.config.name}, {result.config.head} head):")
    for line in format_rows(result.rows):
        typer.echo("  " + line)
    tuned, tuned_rows = result.finetune, result.finetuned_rows
    if tuned and tuned_rows:
        phases = f"rollout {tuned.rollout_seconds:.1f} s, update {tuned.update_seconds:.1f} s"
        typer.echo(f"fine-tuned {tuned.steps} steps in {tuned.seconds:.1f} s ({phases}), then:")
        for line in format_rows(tuned_rows):
            typer.echo("  " + line)
    done, adapted_rows = result.adapted, result.adapted_rows
    if done and adapted_rows:
        budget = f"budget {done.budget:g} s"
        typer.echo(f"adapted {done.steps} steps in {done.seconds:.1f} s ({budget}) on {len(done.subgraphs)} subgraphs, then:")
        for line in format_rows(adapted_rows):
            typer.echo("  " + line)
        why = "" if result.kept == "adapted" else ": adapting scored lower on the destination"
        if not done.steps:
            why = ": the budget ended before the first update; raise --adapt"
        typer.echo(f"kept the {result.kept} model{why}")
    typer.echo(f"saved {result.folder}")


PREDICT_DECODING = ("decoding", "commit_fraction", "deterministic", "seed", "rollouts", "max_passes", "node_order")
"""predict's decoding options, made from :class:`graphtransfer.config.Decoding`"""


@app.command()
@friendly_errors
@takes_params(Decoding, "decoder", *PREDICT_DECODING)
@takes_params(Runtime, "runtime", *SOLVE_RUNTIME)
def predict(
    model: Annotated[Path, typer.Option(help="Model folder written by train or transfer.")],
    graph: Annotated[str, typer.Option(help="Graph file in any supported format (see 'graphtransfer graphs info'), or a sample name.")],
    out: Annotated[Path, typer.Option(help="CSV to write: one 'node,decision' row per node, or one row per step for graph-level tasks.")],
    decoder: Decoding,
    runtime: Runtime,
    env: EnvOption = None,
    force: Annotated[bool, typer.Option(help="Replace --out (or the CSVs in it) if it exists; never a graph or a model file.")] = False,
    draw: Annotated[
        Path | None, typer.Option(help=f"Draw the graph coloured by the decisions to this PNG (up to {MAX_DRAW_NODES:,} nodes).")
    ] = None,
    workers: Annotated[int | None, typer.Option(help=_WORKERS_HELP)] = None,
    ray_address: Annotated[str | None, typer.Option(help=_RAY_HELP)] = None,
    partitions: Annotated[
        int | None,
        typer.Option(
            help="mis, one graph: split it into this many parts, each solved on a worker of the Ray cluster of --ray-address "
            "(local starts one here), the parts exchanging only their boundaries; local-max decoding, one rollout. "
            "No worker holds the whole graph; this process reads it to split it.",
        ),
    ] = None,
    source: SourceOption = None,
    target: TargetOption = None,
    polish: Annotated[
        str | None,
        typer.Option(
            metavar="SECONDS",
            help="mis and mvc, one graph: after the policy, improve its solution with the iterated local search for this "
            "many seconds (the whole budget is used) and write that; the policy's own objective is printed beside it.",
        ),
    ] = None,
    device: SolvingDeviceOption = "cpu",
) -> None:
    """Run a saved policy on a graph and write its solution; on a folder of graphs, one CSV per graph into --out.

    Example: graphtransfer predict --model runs/mis/large --graph large --out solution.csv [--max-nodes-per-batch 50000]
    Example: graphtransfer predict --model runs/mis/small --graph graphs/ --out solutions/ --workers 2
    Example: graphtransfer predict --model runs/path/small --graph roads.txt --out route.csv --source 17 --target 4032
    Example: graphtransfer predict --model runs/mis/small --graph er.txt --out solution.csv --polish 10
    Example: graphtransfer predict --model runs/mis/small --graph big.txt --out solution.csv --ray-address auto --partitions 4
    Example: graphtransfer predict --model runs/mis/small --graph large --out solution.csv --device cuda --mixed-precision
    """
    prefer_small_pages()  # before torch loads
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.graphs import load_graph, resolve
    from graphtransfer.io import FIGURE_SUFFIXES, check_output_file
    from graphtransfer.nn.devices import resolve_device
    from graphtransfer.reporting.draw import check_drawable, draw_solution
    from graphtransfer.solve.inference import objective_text
    from graphtransfer.solve.predict import predict_with

    _check_positive(workers=1 if workers is None else workers)
    on = resolve_device(device)
    runtime = replace(runtime, ray_address=ray_address, device=on)
    seconds = None if polish is None else _seconds_option("--polish", polish, 10)
    if partitions is not None:
        if on != "cpu":
            raise UsageError(f"--partitions solves on the Ray workers' CPUs; drop --device {device}")
        single_process_options = {
            "--workers": workers is not None,
            "--polish": seconds is not None,
            "--draw": draw is not None,
            "--decoding": decoder.method not in (None, "local-max"),
            "--commit-fraction": decoder.commit_fraction is not None,
            "--max-passes": decoder.max_passes is not None,
            "--rollouts": decoder.rollouts not in (AUTO_ROLLOUTS, 1),
            "--max-nodes-per-batch": runtime.max_nodes_per_batch is not None,
            "--node-order": decoder.node_order != "auto",
            "--source/--target": source is not None or target is not None,
        }
        address = _check_partitioned(graph, ray_address, single_process_options)
        return _predict_partitioned(model, graph, out, partitions, address, decoder.seed, env, force)
    if resolve(graph).is_dir():
        if source is not None or target is not None:
            raise UsageError("--source and --target name nodes of one graph; --graph names a folder")
        if seconds is not None:
            raise UsageError("--polish searches one graph's solution; name a single graph file with --graph, not a folder")
        _use_threads(runtime.threads)
        return _predict_folder(model, graph, out, draw, workers, env, force, decoder, runtime)
    if workers is not None or ray_address is not None:
        raise UsageError("--workers and --ray-address spread a folder of graphs over workers; --graph names a single graph")
    if seconds is not None:
        if draw is not None:
            raise UsageError("--draw draws the policy's own solution; drop --polish or --draw")
        if source is not None or target is not None:
            raise UsageError("--polish searches an MIS or MVC solution; --source and --target route the path task")
        return _predict_polished(model, graph, out, seconds, env, force, decoder, runtime)
    config = read_checkpoint(model, env).config  # a bad model folder is reported before the graph is read, as the library does
    loaded = load_graph(graph)
    if draw is not None:
        check_drawable(loaded)  # before the policy runs, not after
        check_output_file(draw, [resolve(graph)], force, "--draw", FIGURE_SUFFIXES)
    check_output_file(out, [resolve(graph)], force)  # predict gets the graph already read, so the input file is guarded here
    _use_threads(runtime.threads, loaded.num_nodes)
    loaded, solution = predict_with(model, loaded, out, decoder, runtime, env, force, source, target)
    typer.echo(f"graph {loaded.name}: {loaded.num_nodes} nodes, {loaded.num_edges} edges; node ids {loaded.describe_ids()}")
    _report_weights(config, loaded)
    if solution.renumbered:
        typer.echo("solved with the nodes renumbered for locality (--node-order auto); the CSV is in the graph's own order")
    typer.echo(
        f"objective {objective_text(solution.objective)} in {solution.passes} passes, {_rollouts_run(solution, decoder.seed)}, "
        f"{solution.seconds:.2f} s, peak memory {solution.peak_rss_mib:.0f} MiB (process RSS)"
    )
    _report_finished(solution)
    if not solution.feasible:
        _fail(
            f"the solution is not feasible after {solution.passes} passes: an unfinished route (path) stopped at the pass limit, "
            "raise --max-passes; otherwise a constraint is violated, a bug, please report it",
            1,
        )
    typer.echo(f"valid solution: yes; wrote {out}")
    if draw is not None:
        draw_solution(loaded, solution, read_checkpoint(model, env).config, draw)
        typer.echo(f"wrote {draw}")


def _check_partitioned(graph: str, ray_address: str | None, single_process_options: dict[str, bool]) -> str:
    """``--partitions``: one graph, a Ray cluster, and none of the options (named, each ``True``
    where given) that only a single-process solve has; the cluster's address."""
    from graphtransfer.graphs import resolve

    if ray_address is None:
        raise UsageError("--partitions solves one graph on a Ray cluster: give --ray-address too (local starts one in this process)")
    if resolve(graph).is_dir():
        raise UsageError("--partitions splits one graph; --graph names a folder (--ray-address alone spreads a folder's graphs)")
    clashing = [name for name, given in single_process_options.items() if given]
    if clashing:
        raise UsageError(f"--partitions runs the local-max decoding alone, until every node is decided; drop {clashing[0]}")
    return ray_address


def _predict_partitioned(model: Path, graph: str, out: Path, parts: int, ray_address: str, seed: int, env, force: bool) -> None:
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.envs.mis import is_independent_set
    from graphtransfer.graphs import load_graph, resolve
    from graphtransfer.graphs.partition import halo_share
    from graphtransfer.io import check_output_file
    from graphtransfer.solve.partitioned_mis import predict_partitioned

    read_checkpoint(model, env)  # a bad model folder is reported before the graph is read
    loaded = load_graph(graph)
    check_output_file(out, [resolve(graph)], force)
    found = predict_partitioned(model, loaded, out, parts, ray_address, seed, env)
    typer.echo(f"graph {loaded.name}: {loaded.num_nodes} nodes, {loaded.num_edges} edges; node ids {loaded.describe_ids()}")
    typer.echo(f"{parts} parts on Ray, their halos {halo_share(found.parts):.2f} of the nodes")
    if not is_independent_set(loaded, found.solution):
        _fail("the partitioned set is not independent, a bug, please report it", 1)
    typer.echo(f"objective {int(found.solution.sum())} in {found.passes} passes; valid solution: yes; wrote {out}")


def _report_weights(config, graph, prefix: str = "") -> None:
    """Say which weights a built-in task that reads weights used: the file's own or hashed ones."""
    from graphtransfer.envs import TASKS
    from graphtransfer.graphs import weights_source

    if config.env is None:
        for kind in TASKS[config.task].reads_weights:
            typer.echo(prefix + weights_source(graph, kind))


def _predict_polished(
    model: Path, graph: str, out: Path, seconds: float, env: str | None, force: bool, decoding: Decoding, runtime: Runtime
) -> None:
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.graphs import load_graph, resolve
    from graphtransfer.io import check_output_file
    from graphtransfer.solve.inference import objective_text
    from graphtransfer.solve.polishing import check_polish_task, predict_polished

    check_polish_task(read_checkpoint(model, env).config)  # before the graph is read
    loaded = load_graph(graph)
    check_output_file(out, [resolve(graph)], force)  # the graph goes down already read: guard its file here
    _use_threads(runtime.threads, loaded.num_nodes)
    loaded, solution, polished = predict_polished(model, loaded, out, seconds, decoding, runtime, env, force)
    typer.echo(f"graph {loaded.name}: {loaded.num_nodes} nodes, {loaded.num_edges} edges; node ids {loaded.describe_ids()}")
    rollouts = _rollouts_run(solution, decoding.seed)
    typer.echo(f"policy: objective {objective_text(solution.objective)} in {solution.passes} passes, {rollouts}, {solution.seconds:.2f} s")
    searched = f"after {polished.seconds:.1f} s of local search ({polished.iterations:,} perturbations)"
    typer.echo(f"{searched}: objective {objective_text(polished.objective)}")
    typer.echo(f"valid solution: yes; wrote {out}")


def _rollouts_run(solution, seed: int) -> str:
    """How many rollouts the solution is the best of, and the one that gave it (to repeat it alone)."""
    if solution.rollouts == 1:
        return "1 rollout"
    last = (seed + solution.rollouts - 1) % SEED_LIMIT
    return f"best of {solution.rollouts} rollouts (seeds {seed}-{last}; best: seed {solution.seed}, {solution.decoding})"


def _report_finished(solution) -> None:
    """What the finishing rule added, apart from the policy's own decisions, and a warning when
    decoding stopped at its pass limit."""
    finished = solution.finished
    if finished is None:
        return
    typer.echo(
        f"policy decided {finished.by_policy:,} in the set; the finishing rule added {finished.by_rule:,} of "
        f"{finished.undecided:,} undecided nodes and {finished.for_maximality:,} for maximality"
    )
    warning = finished.pass_limit_warning(solution.passes)
    if warning:
        typer.echo(f"warning: {warning}", err=True)


def _predict_folder(
    model: Path,
    graphs: str,
    out: Path,
    draw: Path | None,
    workers: int | None,
    env: str | None,
    force: bool,
    decoding: Decoding,
    runtime: Runtime,
) -> None:
    from graphtransfer.solve.inference import objective_text
    from graphtransfer.solve.parallel import predict_many_with

    if draw is not None:
        raise UsageError("--draw draws one graph; name a single graph file with --graph, not a folder")
    results = predict_many_with(model, graphs, out, decoding, runtime, workers, env, force)
    for graph, solution, path in results:
        valid = "yes" if solution.feasible else "NO"
        typer.echo(
            f"{graph.name}: {graph.num_nodes} nodes, objective {objective_text(solution.objective)} in {solution.passes} passes, "
            f"{_rollouts_run(solution, decoding.seed)}, {solution.seconds:.2f} s, valid {valid}; wrote {path}"
        )
        _report_finished(solution)
    if not all(solution.feasible for _, solution, _ in results):
        _fail("a solution is not feasible (constraint violated); this is a bug, please report it", 1)


EVAL_DECODING = ("decoding", "commit_fraction", "rollouts", "max_passes", "node_order")
"""eval's decoding options, made from :class:`graphtransfer.config.Decoding` (its --deterministic is its own)"""


@app.command(name="eval")
@friendly_errors
@takes_params(Decoding, "decoder", *EVAL_DECODING)
@takes_params(Runtime, "runtime", *SOLVE_RUNTIME)
def evaluate(
    model: Annotated[Path, typer.Option(help="Model folder written by train or transfer.")],
    graphs: Annotated[str, typer.Option(help="Sample set name, graph file or folder of graphs to evaluate on.")],
    decoder: Decoding,
    runtime: Runtime,
    deterministic: Annotated[
        bool,
        typer.Option(
            help="Where actions are drawn (--decoding drawn), report both ways: the task's default first (path: deterministic, "
            "the most likely moves; other tasks: sampled), then the other; --no-deterministic: the default alone."
        ),
    ] = True,
    polish: Annotated[bool, typer.Option(help="Also report the best decoding and every baseline after the same local search.")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results as JSON to this file.")] = None,
    plot: Annotated[Path | None, typer.Option(help="Draw policy/baseline against graph size to this PNG.")] = None,
    env: EnvOption = None,
    workers: Annotated[int | None, typer.Option(help=_WORKERS_HELP)] = None,
    ray_address: Annotated[str | None, typer.Option(help=_RAY_HELP)] = None,
    force: Annotated[bool, typer.Option(help="Replace --json and --plot if they exist; never a graph or a model file.")] = False,
    chils: Annotated[
        bool,
        typer.Option(
            help="mis: also report CHILS, a state-of-the-art MIS heuristic, searching for as many seconds as the local search "
            "(pip install 'graphtransfer\\[chils]')."
        ),
    ] = False,
    source: SourceOption = None,
    target: TargetOption = None,
    device: SolvingDeviceOption = "cpu",
) -> None:
    """Evaluate a saved policy against the task's baselines on a set of graphs.

    Example: graphtransfer eval --model runs/mis/small --graphs large --rollouts 4 --json eval.json --plot eval.png
    Example: graphtransfer eval --model runs/mis/small --graphs evalset/ --workers 2 --max-nodes-per-batch 50000
    Example: graphtransfer eval --model runs/path/small --graphs roads.txt --source 17 --target 4032
    """
    prefer_small_pages()  # before torch loads
    from graphtransfer.nn.devices import resolve_device
    from graphtransfer.reporting.report import format_rows, plot_ratios, write_json
    from graphtransfer.solve.evaluate import EvalExtras
    from graphtransfer.solve.parallel import evaluate_with

    _check_positive(workers=1 if workers is None else workers)
    runtime = replace(runtime, ray_address=ray_address, device=resolve_device(device))
    extras = EvalExtras(deterministic, polish, chils, source, target)
    _check_eval_outputs(graphs, json_out, plot, force)
    _use_threads(runtime.threads)  # after the options are checked: bad input changes nothing in the process
    try:
        config, rows = evaluate_with(model, graphs, decoder, runtime, workers, env, extras)
    except ClusterLost as lost:
        _keep_finished_rows(lost, json_out)
    for line in format_rows(rows):
        typer.echo(line)
    for row in rows:
        _report_weights(config, row.graph, f"{row.graph.name}: ")
    for row in rows:
        for label, solution in row.decodings.items():
            warning = solution.finished.pass_limit_warning(solution.passes) if solution.finished else None
            if warning:
                typer.echo(f"warning: {row.graph.name}, {label}: {warning}", err=True)
    typer.echo(f"peak memory {max(r.peak_rss_mib for r in rows):.0f} MiB (process RSS)")
    if json_out:
        write_json(rows, json_out)
        typer.echo(f"wrote {json_out}")
    if plot:
        plot_ratios(rows, plot, f"{config.name}: model {model}")
        typer.echo(f"wrote {plot}")


def _keep_finished_rows(lost: ClusterLost, json_out: Path | None) -> None:
    """A cluster that died mid-evaluation: show the rows it finished, write them to ``json_out``,
    and fail with one line that says what is kept."""
    from graphtransfer.reporting.report import format_rows, write_json
    from graphtransfer.solve.evaluate import EvalRow

    rows = [row for _, row in sorted(lost.finished.items()) if isinstance(row, EvalRow)]
    if not rows:
        raise GraphTransferError(f"{lost}; no graph was finished, run the evaluation again") from None
    for line in format_rows(rows):
        typer.echo(line)
    names = ", ".join(row.graph.name for row in rows[:3]) + (", ..." if len(rows) > 3 else "")
    kept = f"wrote their rows to {json_out}" if json_out else "their rows are above (pass --json FILE to keep them)"
    if json_out:
        write_json(rows, json_out)
    raise GraphTransferError(f"{lost}; the graphs finished before ({names}): {kept}; run the evaluation again for the rest") from None


def _check_eval_outputs(graphs: str, json_out: Path | None, plot: Path | None, force: bool) -> None:
    """eval's outputs, checked before the evaluation runs (:func:`graphtransfer.io.check_output_file`)."""
    from graphtransfer.graphs import resolve
    from graphtransfer.io import FIGURE_SUFFIXES, check_output_file

    if json_out is not None:
        check_output_file(json_out, [resolve(graphs)], force, "--json")
    if plot is not None:
        check_output_file(plot, [resolve(graphs)], force, "--plot", FIGURE_SUFFIXES)


@app.command()
@friendly_errors
def plot(
    model: Annotated[
        Path | None, typer.Option(help="Model folder written by 'graphtransfer train' (it holds progress.csv); required.")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="PNG to write (default: MODEL/progress.png).")] = None,
    force: Annotated[bool, typer.Option(help="Replace --out if it exists; never the run's own files.")] = False,
    positional: DeprecatedModelArgument = None,
) -> None:
    """Draw a run's training curve (episode reward and held-out evaluation against env steps) and
    its rollout and update seconds per PPO iteration, from MODEL/progress.csv, to a PNG.

    Example: graphtransfer plot --model runs/mis/small --out curve.png

    'graphtransfer plot RUN' (the folder without --model) still works, with a deprecation warning.
    """
    from graphtransfer.reporting.curves import plot_run

    typer.echo(f"wrote {plot_run(_model_folder('plot', model, positional), out, force)}")


@app.command()
@friendly_errors
def export(
    model: Annotated[Path | None, typer.Option(help="Model folder written by train or transfer; required.")] = None,
    sb3: Annotated[
        Path | None,
        typer.Option(help="SB3 zip to write, for PPO.load (MaskablePPO.load: node choice; the command names the class). Trusted-only."),
    ] = None,
    onnx: Annotated[
        Path | None,
        typer.Option(
            help="ONNX file to write: one pass of the policy (node features, edges and, for edge heads, edge features in; "
            "per-node or per-edge outputs out) for graphs of any size, runnable without Python by ONNX Runtime; node heads "
            "without edge features (mis, mvc, maxcut) and edge heads with them (matching). "
            "Checked against the policy on two graphs before it is kept. Needs the onnx extra (pip install 'graphtransfer\\[onnx]')."
        ),
    ] = None,
    graphs: Annotated[
        str | None, typer.Option(help="Graphs whose env the zip's spaces are sized for (default: those the model was trained on).")
    ] = None,
    env: EnvOption = None,
    force: Annotated[bool, typer.Option(help="Replace --sb3 or --onnx if it exists; never a graph or a model file.")] = False,
    positional: DeprecatedModelArgument = None,
) -> None:
    """Write a model as a Stable-Baselines3 zip (--sb3) or an ONNX file (--onnx), or both. Load an SB3 zip only
    yourself: SB3 zips hold pickles, which can run code; an ONNX file holds none.

    Example: graphtransfer export --model runs/mis/small --onnx mis.onnx

    'graphtransfer export MODEL ...' (the folder without --model) still works, with a deprecation warning.
    """
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.export import export_onnx, export_sb3

    model = _model_folder("export", model, positional)
    if sb3 is None and onnx is None:
        raise UsageError("export: name what to write: --sb3 FILE.zip, --onnx FILE.onnx, or both")
    if sb3 is not None and onnx is not None and sb3.resolve() == onnx.resolve():
        raise UsageError(f"export: --sb3 and --onnx both name {sb3}; give each its own file")
    if sb3 is not None:
        algorithm = export_sb3(model, sb3, graphs, env, force)
        typer.echo(f"wrote {sb3}: load it with {algorithm}.load({str(sb3)!r}, env=...) and the run's env on the same graphs")
    if onnx is not None:
        written = export_onnx(model, onnx, env, force)
        inputs = f"x (nodes, {written.num_node_features}) float32 and edge_index (2, edges) int64"
        if written.num_edge_features:
            inputs = inputs.replace(" and ", ", ") + f" and edge_attr (edges, {written.num_edge_features}) float32"
        typer.echo(
            f"wrote {onnx}: inputs {inputs}, output "
            f"{written.per}_outputs ({written.per}s, {written.outputs_per_node}) ({written.head} head); run by ONNX Runtime on graphs of "
            f"{' and '.join(f'{n:,}' for n in written.checked_nodes)} nodes: largest difference from the policy "
            f"{written.max_difference:.1e}"
        )
    stopped = read_checkpoint(model, env).interrupted_at()
    if stopped:
        named = f" --env {env}" if env else ""
        typer.echo(
            f"warning: {model} holds a training run interrupted at step {stopped[0]} of {stopped[1]}; the export holds the policy as "
            f"it was then (graphtransfer train --resume {model}{named} finishes the run)",
            err=True,
        )


@app.command()
def tasks() -> None:
    """List the built-in tasks with their head, objective and baselines.

    Example: graphtransfer tasks
    """
    from graphtransfer.baselines import BASELINES
    from graphtransfer.envs import GYM_IDS, TASKS

    width = max(map(len, TASKS)) + 1
    for name, env_class in TASKS.items():
        sense = "maximise" if env_class.sense == "max" else "minimise"
        typer.echo(f"{name:<{width}} {env_class.head:<12} {sense} {env_class.objective_name}")
        typer.echo(f"{'':<{width}} gymnasium id {GYM_IDS[name]}; baselines: {', '.join(BASELINES.get(name, {})) or 'none yet'}")


def _use_threads(threads: int | None, nodes: int | None = None) -> None:
    """``threads`` torch threads; by default one on a graph of fewer than ``ONE_THREAD_BELOW`` nodes,
    else one per core this process may use (its CPU affinity) that no other running task holds."""
    import torch

    if threads is None:
        threads = 1 if nodes is not None and nodes < ONE_THREAD_BELOW else free_cores()
    torch.set_num_threads(threads)


WEEK_SECONDS = 7 * 24 * 3600
"""the longest --adapt or --polish: a longer one is taken for a typing mistake"""


def _seconds_option(option: str, text: str, example: int) -> float:
    """A budget option (``--adapt``, ``--polish``): a positive, finite number of seconds, at most a week."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= WEEK_SECONDS:  # NaN fails too
        raise UsageError(
            f"{option} {text!r} must be a number of seconds above 0 and at most {WEEK_SECONDS} (a week), e.g. {option} {example}"
        )
    return value


def _check_positive(**values: int) -> None:
    for name, value in values.items():
        if value < 1:
            raise UsageError(f"--{name.replace('_', '-')} {value} must be at least 1")


HELP_COLUMNS_IN_A_PIPE = "120"
"""--help's width when the output is no terminal (a pipe, a file) and COLUMNS is not set: rich's 80
would wrap the examples mid-command"""


def main() -> None:
    warnings.filterwarnings("ignore", module="stable_baselines3")
    if not sys.stdout.isatty():
        os.environ.setdefault("COLUMNS", HELP_COLUMNS_IN_A_PIPE)
    app()
