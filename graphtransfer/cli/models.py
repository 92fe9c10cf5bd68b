"""``graphtransfer transfer``, ``export``, ``plot`` and ``tasks``: parse, call the library, print."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from graphtransfer.cli.common import (
    SOLVE_RUNTIME,
    ConvOption,
    EnvOption,
    friendly_errors,
    name_conv,
    seconds_option,
    start_work,
    stop_exit_code,
    stopped_by,
    use_threads,
)
from graphtransfer.cli.options import takes_params
from graphtransfer.config import Decoding, Runtime, check_setting
from graphtransfer.errors import UsageError
from graphtransfer.process import prefer_small_pages


def _model_folder(command: str, option: Path | None) -> Path:
    """The model folder of ``command``'s ``--model``, which it requires."""
    if option is None:
        raise UsageError(f"{command}: name the model folder with --model, e.g. graphtransfer {command} --model runs/mis/small")
    return option


@friendly_errors
@takes_params(Decoding, "decoder", "max_passes")
@takes_params(Runtime, "runtime", *SOLVE_RUNTIME)
def transfer(
    src: Annotated[
        str, typer.Option(help="Trained model folder, the graph set name it was trained on, or a built-in model's name (mis, mvc).")
    ],
    dst: Annotated[str, typer.Option("--graphs", "--dst", help="Sample set name, graph file or folder to transfer to.")],
    decoder: Decoding,
    runtime: Runtime,
    task: Annotated[
        str | None,
        typer.Option(
            help="Task of the source model (checked); with a graph set name as --src, reads runs/TASK/SRC (TASK: mis if not given)."
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Model folder to write (default: runs/TASK/GRAPHS).")] = None,
    force: Annotated[bool, typer.Option(help="Replace the model already in --out.")] = False,
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
            help="Adapt to the destination: after the zero-shot report, train for this many seconds on small balls sampled "
            "from the destination graphs, evaluate again, and keep the adapted model only if it scores at least as well "
            "(the output says which). See docs/guide/commands.md",
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
    conv: ConvOption = None,
) -> None:
    """Load a trained policy into a model for other graphs, report, evaluate zero-shot, save.

    Example: graphtransfer transfer --src small --graphs large --finetune-steps 16 --max-nodes-per-batch 250000
    Example: graphtransfer transfer --src small --graphs er-n5000-d64-s1.txt --adapt 60
    Example: graphtransfer transfer --src small --graphs large --device cuda --finetune-steps 16
    """
    adapt_seconds = None if adapt is None else seconds_option("--adapt", adapt, 60)
    if finetune_steps == 0 and adapt_seconds is None:  # it only solves: see graphtransfer.process.prefer_small_pages
        prefer_small_pages()
    from graphtransfer.nn.devices import resolve_device
    from graphtransfer.solve.applicable import check_runtime_applies
    from graphtransfer.transferring.transfer import resolve_model
    from graphtransfer.transferring.transfer import transfer as run_transfer

    check_runtime_applies(runtime, resolve_device(runtime.device))
    name_conv(conv, resolve_model(src, task or "mis"), env)
    if finetune_steps < 0:
        raise UsageError(f"--finetune-steps {finetune_steps} must be 0 (no fine-tuning) or more")
    if seed is not None:
        check_setting("ppo.seed (--seed)", "ppo.seed", seed)
    start_work(runtime.threads)
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
        force=force,
    )
    typer.echo(f"source {result.source}: {result.report.summary()}")
    typer.echo(f"zero-shot on the destination graphs ({result.config.name}, {result.config.head} head):")
    _echo_rows(result.rows)
    if result.interrupted:
        _report_stopped(result)
    tuned, tuned_rows = result.finetune, result.finetuned_rows
    if tuned and tuned_rows:
        phases = f"rollout {tuned.rollout_seconds:.1f} s, update {tuned.update_seconds:.1f} s"
        typer.echo(f"fine-tuned {tuned.steps} steps in {tuned.seconds:.1f} s ({phases}), then:")
        _echo_rows(tuned_rows)
    done, adapted_rows = result.adapted, result.adapted_rows
    if done and adapted_rows:
        budget = f"budget {done.budget:g} s"
        typer.echo(f"adapted {done.steps} steps in {done.seconds:.1f} s ({budget}) on {len(done.subgraphs)} subgraphs, then:")
        _echo_rows(adapted_rows)
        why = "" if result.kept == "adapted" else ": adapting scored lower on the destination"
        if not done.steps:
            why = ": the budget ended before the first update; raise --adapt"
        typer.echo(f"kept the {result.kept} model{why}")
    if result.experts:
        typer.echo(
            f"the source's {result.experts} expert(s), weight sets taking turns in the rollouts, are saved with it unchanged "
            "(only the model's own weights are fine-tuned or adapted)"
        )
    typer.echo(f"saved {result.folder}")


def _report_stopped(result) -> None:
    """Fine-tuning or adapting stopped by Ctrl-C or a signal: what was saved, one line, the signal's exit code."""
    if result.finetune is not None:
        done, budget = result.finetune.steps, result.finetune.budget
        kept = f"fine-tuning at step {done} of {budget}; saved the model fine-tuned so far (not evaluated after) in {result.folder}"
    else:
        steps = result.adapted.steps
        kept = f"adapting after {steps} steps; saved the zero-shot model in {result.folder} (adapted weights are kept only once evaluated)"
    typer.echo(f"{stopped_by()} during {kept}", err=True)
    raise typer.Exit(stop_exit_code())


def _echo_rows(rows) -> None:
    """An evaluation's table (:func:`graphtransfer.reporting.report.format_rows`), indented under its heading."""
    from graphtransfer.reporting.report import format_rows

    for line in format_rows(rows):
        typer.echo("  " + line)


@friendly_errors
def plot(
    model: Annotated[
        Path | None, typer.Option(help="Model folder written by 'graphtransfer train' (it holds progress.csv); required.")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="PNG to write (default: MODEL/progress.png).")] = None,
    force: Annotated[bool, typer.Option(help="Replace --out if it exists; never the run's own files.")] = False,
) -> None:
    """Draw a run's training curve (episode reward and held-out evaluation against env steps) and
    its rollout and update seconds per PPO iteration, from MODEL/progress.csv, to a PNG.

    Example: graphtransfer plot --model runs/mis/small --out curve.png
    """
    from graphtransfer.reporting.curves import plot_run

    typer.echo(f"wrote {plot_run(_model_folder('plot', model), out, force)}")


@friendly_errors
@takes_params(Runtime, "runtime", "threads")
def export(
    runtime: Runtime,
    model: Annotated[
        Path | None, typer.Option(help="Model folder written by train or transfer, or a built-in model's name (mis, mvc); required.")
    ] = None,
    sb3: Annotated[
        Path | None,
        typer.Option(help="SB3 zip to write, for PPO.load (MaskablePPO.load: node choice; the command names the class). Trusted-only."),
    ] = None,
    onnx: Annotated[
        Path | None,
        typer.Option(
            help="ONNX file to write: one pass of the policy for graphs of any size, for ONNX Runtime without Python; checked "
            "against the policy on two graphs before it is kept. Needs pip install 'graphtransfer\\[onnx]'. See docs/deploy.md"
        ),
    ] = None,
    graphs: Annotated[
        str | None, typer.Option(help="Graphs whose env the zip's spaces are sized for (default: those the model was trained on).")
    ] = None,
    env: EnvOption = None,
    force: Annotated[bool, typer.Option(help="Replace --sb3 or --onnx if it exists; never a graph or a model file.")] = False,
    conv: ConvOption = None,
) -> None:
    """Write a model as a Stable-Baselines3 zip (--sb3) or an ONNX file (--onnx), or both. Load an SB3 zip only
    yourself: SB3 zips hold pickles, which can run code; an ONNX file holds none.

    Example: graphtransfer export --model runs/mis/small --onnx mis.onnx
    """
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.export import export_onnx, export_sb3

    model = _model_folder("export", model)
    name_conv(conv, model, env)
    if sb3 is None and onnx is None:
        raise UsageError("export: name what to write: --sb3 FILE.zip, --onnx FILE.onnx, or both")
    if sb3 is not None and onnx is not None and sb3.resolve() == onnx.resolve():
        raise UsageError(f"export: --sb3 and --onnx both name {sb3}; give each its own file")
    use_threads(runtime.threads)
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
    checkpoint = read_checkpoint(model, env)
    if checkpoint.experts:
        typer.echo(
            f"note: {model} has {len(checkpoint.experts)} expert(s), weight sets that take turns in predict's rollouts; the export "
            "holds the model's own weights only (what predict --rollouts 1 runs)",
            err=True,
        )
    stopped = checkpoint.interrupted_at()
    if stopped:
        named = f" --env {env}" if env else ""
        typer.echo(
            f"warning: {model} holds a training run interrupted at step {stopped[0]} of {stopped[1]}; the export holds the policy as "
            f"it was then (graphtransfer train --resume {model}{named} finishes the run)",
            err=True,
        )


def tasks() -> None:
    """List the built-in tasks: head, objective, baselines, how the policy stands against the anchor, built-in model.

    Example: graphtransfer tasks
    """
    from graphtransfer.tasks import TASKS
    from graphtransfer.zoo import zoo_names

    width = max(map(len, TASKS)) + 1
    for name, task in TASKS.items():
        env_class = task.env
        sense = "maximise" if env_class.sense == "max" else "minimise"
        typer.echo(f"{name:<{width}} {env_class.head:<12} {sense} {env_class.objective_name}")
        typer.echo(f"{'':<{width}} gymnasium id {task.gym_id}; baselines: {', '.join(task.baselines) or 'none yet'}")
        if task.standing:
            typer.echo(f"{'':<{width}} against its anchor: {task.standing}")
        if name in zoo_names():
            typer.echo(f"{'':<{width}} built-in model: --model {name} (trained on sample_graphs/small; see its zoo.json)")
