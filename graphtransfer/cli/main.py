"""The ``graphtransfer`` command line: parse, call one library function, print. The commands live
in :mod:`graphtransfer.cli.training` (train, tune), :mod:`graphtransfer.cli.solving` (predict,
eval) and :mod:`graphtransfer.cli.models` (transfer, export, plot, tasks); this module makes
the app and registers them in the order ``--help`` lists them.

Bad user input exits 2 with one line on stderr; a runtime failure exits 1 with its cause. Torch,
PyG and SB3 are imported inside the commands that run a model, so ``--help``, ``tasks`` and
``graphs`` start light.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import typer
from typer.core import TyperGroup

from graphtransfer.cli.common import CLICK_ERRORS, stop_like_ctrl_c, usage_error_line
from graphtransfer.cli.models import export, plot, tasks, transfer
from graphtransfer.cli.solving import evaluate, predict
from graphtransfer.cli.training import train, tune
from graphtransfer.process import freeze_loaded_objects, tune_process


class Commands(TyperGroup):
    """The app's commands, whose usage errors (an unknown option, a missing or malformed one, an
    unknown command) are one ``error:`` line and exit 2, as every other bad input, not Click's
    usage panel: parsed here for the app's own options, and in :meth:`invoke` for every command's
    (``graphs``' too, which it invokes)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        with _one_line(ctx):
            return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        with _one_line(ctx):
            return super().invoke(ctx)


NO_ARGS_IS_HELP = getattr(CLICK_ERRORS, "NoArgsIsHelpError", ())
"""what Click (8.2 on) raises for a bare command that shows its help"""


@contextmanager
def _one_line(ctx: typer.Context) -> Iterator[None]:
    try:
        yield
    except NO_ARGS_IS_HELP:  # the bare command: its help, as asked for
        raise
    except CLICK_ERRORS.UsageError as err:
        if ctx.resilient_parsing:  # shell completion asks, nobody reads the answer
            raise
        typer.echo(f"error: {usage_error_line(err)}", err=True)
        raise typer.Exit(2) from None


app = typer.Typer(
    cls=Commands,
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


for command in (train, tune, transfer, predict):
    app.command()(command)
app.command(name="eval")(evaluate)
for command in (plot, export, tasks):
    app.command()(command)


HELP_COLUMNS_IN_A_PIPE = "120"
"""--help's width when the output is no terminal (a pipe, a file) and COLUMNS is not set: rich's 80
would wrap the examples mid-command"""


def main() -> None:
    warnings.filterwarnings("ignore", module="stable_baselines3")
    if not sys.stdout.isatty():
        os.environ.setdefault("COLUMNS", HELP_COLUMNS_IN_A_PIPE)
    stop_like_ctrl_c()
    try:
        app()
    finally:  # the exit's collection would visit every object; the commands close their files and envs themselves
        freeze_loaded_objects()
