"""Every option's help says what the option does and its default in at most three lines of a
200-column terminal; the reasons and measurements live in the docs pages the help links to."""

import re

import pytest
import typer
from typer.testing import CliRunner

from graphtransfer.cli import app

MAX_HELP_CHARS = 330
"""about three lines of the help column at 200 columns, leaving room for ``[default: ...]``"""
MAX_LINES = 3


def leaf_commands(command=None, path=()):
    """(path, click command) of every leaf command, ``graphs``' subcommands included."""
    command = command or typer.main.get_command(app)
    if hasattr(command, "list_commands"):
        ctx = typer.Context(command)
        for name in command.list_commands(ctx):
            yield from leaf_commands(command.get_command(ctx, name), (*path, name))
    else:
        yield path, command


COMMANDS = list(leaf_commands())


def test_every_command_is_found():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"train", "transfer", "predict", "eval", "tune", "export", "plot", "graphs convert"} <= names


@pytest.mark.parametrize("path, command", COMMANDS, ids=[" ".join(path) for path, _ in COMMANDS])
def test_every_option_help_is_short(path, command):
    long = {param.name: len(param.help) for param in command.params if len(getattr(param, "help", None) or "") > MAX_HELP_CHARS}
    assert not long, f"graphtransfer {' '.join(path)}: option help over {MAX_HELP_CHARS} characters: {long}"


@pytest.mark.parametrize("path, command", COMMANDS, ids=[" ".join(path) for path, _ in COMMANDS])
def test_every_option_fits_three_lines_at_200_columns(path, command):
    """The help's own lines; Typer puts ``[default: ...]`` on a line of its own once the help wraps."""
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}, prog_name="graphtransfer")
    assert result.exit_code == 0, result.output
    options = result.output.split("─ Options ─", 1)[1]
    rows: dict[str, int] = {}
    current = None
    for line in options.splitlines():
        starts = re.match(r"│ [ *]{0,4}(--[\w-]+)", line)
        if starts:
            current = starts.group(1)
            rows[current] = 1
        elif current and re.match(r"│\s{10,}\S", line) and not re.match(r"│\s+\[default: [^]]*\]\s*│", line):
            rows[current] += 1
        elif not line.startswith("│"):
            current = None
    assert rows, result.output
    long = {option: lines for option, lines in rows.items() if lines > MAX_LINES}
    assert not long, f"graphtransfer {' '.join(path)}: options over {MAX_LINES} lines at 200 columns: {long}"


@pytest.mark.parametrize("path, command", COMMANDS, ids=[" ".join(path) for path, _ in COMMANDS])
def test_every_command_help_has_an_example(path, command):
    assert "graphtransfer " + " ".join(path) in (command.help or ""), f"graphtransfer {' '.join(path)}: no example in its help"
