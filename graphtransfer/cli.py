"""The ``graphtransfer`` command line: parse, call one library function, print.

Bad user input exits 2 with one line on stderr; a runtime failure exits 1 with its cause.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Annotated

import typer

from graphtransfer.cli_common import fail as _fail
from graphtransfer.cli_common import friendly_errors
from graphtransfer.cli_graphs import app as graphs_app
from graphtransfer.config import ModelConfig, PPOConfig, RunConfig
from graphtransfer.errors import UsageError
from graphtransfer.evaluate import DEFAULT_MAX_PASSES, format_rows

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
    task: Annotated[str, typer.Option(help="Task to learn (mis).")] = "mis",
    graphs: Annotated[str, typer.Option(help="Sample set name, graph file, or folder of graph files to train on.")] = "small",
    out: Annotated[Path | None, typer.Option(help="Model folder to write [default: runs/TASK/GRAPHS].")] = None,
    steps: Annotated[int, typer.Option(help="Total env steps of PPO.")] = _DEFAULT_PPO.total_timesteps,
    n_envs: Annotated[int, typer.Option(help="Parallel envs.")] = _DEFAULT_PPO.n_envs,
    horizon: Annotated[int, typer.Option(help="Env steps before an episode is cut off.")] = RunConfig.horizon,
    conv: Annotated[str, typer.Option(help="Message-passing layer: sage, gcn or gin.")] = _DEFAULT_MODEL.conv,
    layers: Annotated[int, typer.Option(help="Message-passing layers.")] = _DEFAULT_MODEL.num_layers,
    width: Annotated[int, typer.Option(help="Hidden channels.")] = _DEFAULT_MODEL.width,
    seed: Annotated[int, typer.Option(help="Random seed.")] = _DEFAULT_PPO.seed,
    threads: Annotated[int, typer.Option(help="Torch CPU threads.")] = _DEFAULT_PPO.threads,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Train a PPO policy on small graphs and save it.

    Example: graphtransfer train --task mis --graphs small
    """
    from graphtransfer.train import train as run_training

    model = ModelConfig(conv=conv, num_layers=layers, width=width)
    ppo = PPOConfig(total_timesteps=steps, n_envs=n_envs, seed=seed, threads=threads)
    _check_positive(steps=steps, n_envs=n_envs, horizon=horizon, layers=layers, width=width, threads=threads)
    if conv not in ("sage", "gcn", "gin"):
        raise UsageError(f"--conv {conv!r} is not known; choose sage, gcn or gin")
    result = run_training(
        RunConfig(task=task, graphs=graphs, horizon=horizon, model=model, ppo=ppo),
        out,
        progress=progress and sys.stderr.isatty(),
        log=typer.echo,
    )
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
    task: Annotated[str, typer.Option(help="Task of the source model when --src is a graph set name.")] = "mis",
    out: Annotated[Path | None, typer.Option(help="Model folder to write [default: runs/TASK/DST].")] = None,
    max_passes: Annotated[int, typer.Option(help="Policy passes per graph before stopping.")] = DEFAULT_MAX_PASSES,
) -> None:
    """Load a trained policy into a model for other graphs, report, evaluate zero-shot, save.

    Example: graphtransfer transfer --src small --dst large
    """
    from graphtransfer.transfer import transfer as run_transfer

    _check_positive(max_passes=max_passes)
    result = run_transfer(src, dst, task=task, folder=out, max_passes=max_passes)
    typer.echo(f"source {result.source}: {result.report.summary()}")
    typer.echo("zero-shot on the destination graphs:")
    for line in format_rows(result.rows):
        typer.echo("  " + line)
    typer.echo(f"saved {result.folder}")


@app.command()
@friendly_errors
def predict(
    model: Annotated[Path, typer.Option(help="Model folder written by train or transfer.")],
    graph: Annotated[str, typer.Option(help="Graph file (edge list, .npz or generator .json) or sample name.")],
    out: Annotated[Path, typer.Option(help="CSV to write, one 'node,decision' row per node.")],
    max_passes: Annotated[int, typer.Option(help="Policy passes before stopping.")] = DEFAULT_MAX_PASSES,
    deterministic: Annotated[
        bool, typer.Option(help="Take each node's most likely action instead of sampling (seeded) from the policy.")
    ] = False,
    seed: Annotated[int, typer.Option(help="Seed for the sampled actions.")] = 0,
) -> None:
    """Run a saved policy on a graph and write its per-node decisions.

    Example: graphtransfer predict --model runs/mis/large --graph large --out solution.csv
    """
    from graphtransfer.predict import predict as run_predict

    _check_positive(max_passes=max_passes)
    loaded, solution = run_predict(model, graph, out, max_passes=max_passes, deterministic=deterministic, seed=seed)
    typer.echo(f"graph {loaded.name}: {loaded.num_nodes} nodes, {loaded.num_edges} edges")
    typer.echo(
        f"objective {solution.objective:.0f} in {solution.passes} passes, {solution.seconds:.2f} s, "
        f"peak memory {solution.peak_rss_mib:.0f} MiB (process RSS)"
    )
    if not solution.feasible:
        _fail("the solution is not feasible (constraint violated); this is a bug, please report it", 1)
    typer.echo(f"valid solution: yes; wrote {out}")


def _check_positive(**values: int) -> None:
    for name, value in values.items():
        if value < 1:
            raise UsageError(f"--{name.replace('_', '-')} {value} must be at least 1")


def main() -> None:
    warnings.filterwarnings("ignore", module="stable_baselines3")
    app()
