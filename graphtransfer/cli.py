"""The ``graphtransfer`` command line: parse, call one library function, print.

Bad user input exits 2 with one line on stderr; a runtime failure exits 1 with its cause.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from graphtransfer.cli_common import fail as _fail
from graphtransfer.cli_common import friendly_errors
from graphtransfer.cli_graphs import app as graphs_app
from graphtransfer.config import ModelConfig, PPOConfig, RunConfig, ppo_for_task
from graphtransfer.errors import UsageError
from graphtransfer.evaluate import format_rows
from graphtransfer.inference import DEFAULT_COMMIT_FRACTION
from graphtransfer.nn import CONVS

if TYPE_CHECKING:
    from graphtransfer.train import TrainResult

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Train a GNN policy on small graphs with PPO, transfer it to large graphs, predict there.",
)
app.add_typer(graphs_app, name="graphs")

_DEFAULT_MODEL, _DEFAULT_PPO = ModelConfig(), PPOConfig()


@app.command()
@friendly_errors
def train(
    ctx: typer.Context,
    task: Annotated[str, typer.Option(help="Built-in task: mis, mvc, maxcut or epidemic (see 'graphtransfer tasks').")] = "mis",
    graphs: Annotated[str, typer.Option(help="Sample set name, graph file, or folder of graph files to train on.")] = "small",
    env: Annotated[str | None, typer.Option(help="Your own env instead of a task: 'package.module:Class' or a gymnasium id.")] = None,
    env_kwargs: Annotated[str, typer.Option(help="JSON object of extra env constructor arguments.")] = "{}",
    out: Annotated[Path | None, typer.Option(help="Model folder to write [default: runs/TASK/GRAPHS].")] = None,
    steps: Annotated[int, typer.Option(help="Total env steps of PPO.")] = _DEFAULT_PPO.total_timesteps,
    n_envs: Annotated[int, typer.Option(help="Parallel envs.")] = _DEFAULT_PPO.n_envs,
    n_steps: Annotated[
        int, typer.Option(help="Steps per env between PPO updates; more than fit in memory are refused with a count that fits.")
    ] = _DEFAULT_PPO.n_steps,
    batch_size: Annotated[int, typer.Option(help="Observations per PPO minibatch.")] = _DEFAULT_PPO.batch_size,
    epochs: Annotated[int, typer.Option(help="PPO passes over each rollout.")] = _DEFAULT_PPO.n_epochs,
    target_kl: Annotated[float | None, typer.Option(help="Stop an update's epochs early above this KL to the old policy.")] = None,
    horizon: Annotated[int | None, typer.Option(help="Env steps before an episode is cut off [default: the task's].")] = None,
    conv: Annotated[str, typer.Option(help="Message-passing layer: sage, gcn or gin.")] = _DEFAULT_MODEL.conv,
    layers: Annotated[int, typer.Option(help="Message-passing layers.")] = _DEFAULT_MODEL.num_layers,
    width: Annotated[int, typer.Option(help="Hidden channels.")] = _DEFAULT_MODEL.width,
    seed: Annotated[int, typer.Option(help="Random seed.")] = _DEFAULT_PPO.seed,
    threads: Annotated[int, typer.Option(help="Torch CPU threads.")] = _DEFAULT_PPO.threads,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    resume: Annotated[
        Path | None,
        typer.Option(help="Continue the run interrupted (Ctrl-C) in this model folder to its budget, with its config.json's settings."),
    ] = None,
) -> None:
    """Train a PPO policy on small graphs and save it. Ctrl-C saves a checkpoint to resume from.

    Example: graphtransfer train --task mis --graphs small
    """
    from graphtransfer.train import resume as resume_training
    from graphtransfer.train import train as run_training

    if resume is not None:
        _refuse_settings_beside_resume(ctx)
        return _report_training(resume_training(resume, progress=progress and sys.stderr.isatty(), log=typer.echo))
    _check_positive(steps=steps, n_envs=n_envs, n_steps=n_steps, batch_size=batch_size, epochs=epochs)
    _check_positive(horizon=horizon or 1, layers=layers, width=width, threads=threads)
    if conv not in CONVS:
        raise UsageError(f"--conv {conv!r} is not known; choose one of {', '.join(CONVS)}")
    config = RunConfig(
        task=task,
        graphs=graphs,
        horizon=horizon,
        env=env,
        env_kwargs=_json_object(env_kwargs, "--env-kwargs"),
        model=ModelConfig(conv=conv, num_layers=layers, width=width),
        ppo=ppo_for_task(
            task if env is None else "",
            total_timesteps=steps,
            n_envs=n_envs,
            n_steps=n_steps,
            batch_size=batch_size,
            n_epochs=epochs,
            target_kl=target_kl,
            seed=seed,
            threads=threads,
        ),
    )
    _report_training(run_training(config, out, progress=progress and sys.stderr.isatty(), log=typer.echo))


def _refuse_settings_beside_resume(ctx: typer.Context) -> None:
    """A resumed run keeps its own settings; an option given beside --resume would be silently ignored."""
    typed = [name for name in ctx.params if name not in ("resume", "progress") and ctx.get_parameter_source(name).name == "COMMANDLINE"]
    if typed:
        options = ", ".join("--" + name.replace("_", "-") for name in typed)
        raise UsageError(f"--resume takes every setting from the folder's config.json; drop {options}")


def _report_training(result: TrainResult) -> None:
    if result.interrupted:
        typer.echo(
            f"interrupted at step {result.steps} of {result.budget}; saved {result.folder}; "
            f"resume with: graphtransfer train --resume {result.folder}",
            err=True,
        )
        raise typer.Exit(130)
    typer.echo(
        f"trained {result.steps} steps in {result.seconds:.1f} s: rollout {result.rollout_seconds:.1f} s, "
        f"update {result.update_seconds:.1f} s, {result.steps_per_second:.0f} env steps/s"
    )
    typer.echo(f"saved {result.folder}")


@app.command()
@friendly_errors
def transfer(
    src: Annotated[str, typer.Option(help="Trained model folder, or the graph set name it was trained on.")],
    dst: Annotated[str, typer.Option(help="Sample set name, graph file or folder to transfer to.")],
    task: Annotated[
        str | None,
        typer.Option(
            help="Task of the source model (checked); with a graph set name as --src, reads runs/TASK/SRC (TASK: mis if not given)."
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Model folder to write [default: runs/TASK/DST].")] = None,
    max_passes: Annotated[int | None, typer.Option(help="Policy passes per graph before stopping [default: the task's].")] = None,
    threads: Annotated[
        int, typer.Option(help="Torch CPU threads; 1 is fastest on a shared 2-core machine, raise it on a dedicated one.")
    ] = _DEFAULT_PPO.threads,
    finetune_steps: Annotated[
        int, typer.Option(help="Fine-tune on the destination graphs for this many env steps after the zero-shot report.")
    ] = 0,
) -> None:
    """Load a trained policy into a model for other graphs, report, evaluate zero-shot, save.

    Example: graphtransfer transfer --src small --dst large
    """
    from graphtransfer.transfer import transfer as run_transfer

    _check_positive(max_passes=max_passes or 1, threads=threads)
    _use_threads(threads)
    if finetune_steps < 0:
        raise UsageError(f"--finetune-steps {finetune_steps} must be 0 (no fine-tuning) or more")
    result = run_transfer(src, dst, task=task, folder=out, max_passes=max_passes, finetune_steps=finetune_steps, log=typer.echo)
    typer.echo(f"source {result.source}: {result.report.summary()}")
    typer.echo(f"zero-shot on the destination graphs ({result.config.name}, {result.config.head} head):")
    for line in format_rows(result.rows):
        typer.echo("  " + line)
    if result.finetune:
        tuned = result.finetune
        phases = f"rollout {tuned.rollout_seconds:.1f} s, update {tuned.update_seconds:.1f} s"
        typer.echo(f"fine-tuned {tuned.steps} steps in {tuned.seconds:.1f} s ({phases}), then:")
        for line in format_rows(result.finetuned_rows):
            typer.echo("  " + line)
    typer.echo(f"saved {result.folder}")


@app.command()
@friendly_errors
def predict(
    model: Annotated[Path, typer.Option(help="Model folder written by train or transfer.")],
    graph: Annotated[str, typer.Option(help="Graph file in any supported format (see 'graphtransfer graphs info'), or a sample name.")],
    out: Annotated[Path, typer.Option(help="CSV to write: one 'node,decision' row per node, or one row per step for graph-level tasks.")],
    max_passes: Annotated[int | None, typer.Option(help="Policy passes before stopping [default: the task's].")] = None,
    deterministic: Annotated[bool, typer.Option(help="Take the most likely actions instead of sampling (seeded) from the policy.")] = False,
    seed: Annotated[int, typer.Option(help="Seed for the sampled actions.")] = 0,
    commit_fraction: Annotated[
        float, typer.Option(help="Node-choice tasks (mvc): share of the valid nodes committed per pass, best first.")
    ] = DEFAULT_COMMIT_FRACTION,
    threads: Annotated[
        int, typer.Option(help="Torch CPU threads; 1 is fastest on a shared 2-core machine, raise it on a dedicated one.")
    ] = _DEFAULT_PPO.threads,
) -> None:
    """Run a saved policy on a graph and write its solution.

    Example: graphtransfer predict --model runs/mis/large --graph large --out solution.csv
    """
    from graphtransfer.predict import predict as run_predict

    _check_positive(max_passes=max_passes or 1, threads=threads)
    _use_threads(threads)
    if not 0 < commit_fraction <= 1:
        raise UsageError(f"--commit-fraction {commit_fraction} must be in (0, 1]")
    loaded, solution = run_predict(
        model, graph, out, max_passes=max_passes, deterministic=deterministic, seed=seed, commit_fraction=commit_fraction
    )
    typer.echo(f"graph {loaded.name}: {loaded.num_nodes} nodes, {loaded.num_edges} edges")
    typer.echo(
        f"objective {solution.objective:.6g} in {solution.passes} passes, {solution.seconds:.2f} s, "
        f"peak memory {solution.peak_rss_mib:.0f} MiB (process RSS)"
    )
    if not solution.feasible:
        _fail("the solution is not feasible (constraint violated); this is a bug, please report it", 1)
    typer.echo(f"valid solution: yes; wrote {out}")


@app.command(name="eval")
@friendly_errors
def evaluate(
    model: Annotated[Path, typer.Option(help="Model folder written by train or transfer.")],
    graphs: Annotated[str, typer.Option(help="Sample set name, graph file or folder of graphs to evaluate on.")],
    samples: Annotated[int, typer.Option(help="Also report the best of this many sampled rollouts.")] = 1,
    deterministic: Annotated[bool, typer.Option(help="Also report the deterministic decoding.")] = True,
    polish: Annotated[bool, typer.Option(help="Also report the best decoding and every baseline after the same local search.")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the results as JSON to this file.")] = None,
    plot: Annotated[Path | None, typer.Option(help="Draw policy/baseline against graph size to this PNG.")] = None,
    max_passes: Annotated[int | None, typer.Option(help="Policy passes per graph before stopping [default: the task's].")] = None,
    commit_fraction: Annotated[
        float, typer.Option(help="Node-choice tasks: share of valid nodes committed per pass.")
    ] = DEFAULT_COMMIT_FRACTION,
    threads: Annotated[
        int, typer.Option(help="Torch CPU threads; 1 is fastest on a shared 2-core machine, raise it on a dedicated one.")
    ] = _DEFAULT_PPO.threads,
) -> None:
    """Evaluate a saved policy against the task's baselines on a set of graphs.

    Example: graphtransfer eval --model runs/mis/small --graphs large --samples 4 --json eval.json --plot eval.png
    """
    from graphtransfer.evaluate import evaluate_model
    from graphtransfer.report import plot_ratios, write_json

    _check_positive(samples=samples, max_passes=max_passes or 1, threads=threads)
    _use_threads(threads)
    options = {"samples": samples, "deterministic": deterministic, "polish": polish, "commit_fraction": commit_fraction}
    config, rows = evaluate_model(model, graphs, max_passes=max_passes, **options)
    for line in format_rows(rows):
        typer.echo(line)
    typer.echo(f"peak memory {max(r.peak_rss_mib for r in rows):.0f} MiB (process RSS)")
    if json_out:
        write_json(rows, json_out)
        typer.echo(f"wrote {json_out}")
    if plot:
        plot_ratios(rows, plot, f"{config.name}: model {model}")
        typer.echo(f"wrote {plot}")


@app.command()
def tasks() -> None:
    """List the built-in tasks with their head, objective and baselines.

    Example: graphtransfer tasks
    """
    from graphtransfer.baselines import BASELINES
    from graphtransfer.envs import GYM_IDS, TASKS

    for name, env_class in TASKS.items():
        sense = "maximise" if env_class.sense == "max" else "minimise"
        typer.echo(f"{name:<9} {env_class.head:<12} {sense} {env_class.objective_name}")
        typer.echo(f"{'':<9} gymnasium id {GYM_IDS[name]}; baselines: {', '.join(BASELINES.get(name, {})) or 'none yet'}")


def _use_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _json_object(text: str, option: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"{option} {text!r} is not JSON ({err.msg}); pass an object such as '{{\"horizon\": 16}}'") from None
    if not isinstance(value, dict):
        raise UsageError(f"{option} {text!r} is not a JSON object; pass an object such as '{{\"horizon\": 16}}'")
    return value


def _check_positive(**values: int) -> None:
    for name, value in values.items():
        if value < 1:
            raise UsageError(f"--{name.replace('_', '-')} {value} must be at least 1")


def main() -> None:
    warnings.filterwarnings("ignore", module="stable_baselines3")
    app()
