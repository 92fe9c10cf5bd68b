"""What every command module shares: the project's errors become one line on stderr and an exit
code, never a traceback, and the project's warnings one ``warning:`` line each. Only command
modules import this."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import typer

from graphtransfer.errors import GraphInputWarning, GraphTransferError, UsageError


def fail(message: str, code: int) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def friendly_errors(command):
    """Turn the project's errors into one line and an exit code, never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            with warnings_to_stderr():
                return command(*args, **kwargs)
        except UsageError as err:
            fail(str(err), 2)
        except GraphTransferError as err:
            fail(str(err), 1)
        except MemoryError:
            fail("ran out of memory; use smaller graphs or fewer parallel envs", 1)
        except OSError as err:  # the paths were checked up front; this is the disk or the system failing meanwhile
            where = f"{err.filename}: " if err.filename else ""
            fail(f"{where}{err.strerror or err}; check the disk's free space and the folder's permissions", 1)
        except KeyboardInterrupt:
            fail("interrupted", 130)

    return wrapper


@contextmanager
def warnings_to_stderr() -> Iterator[None]:
    """Show the project's warnings (e.g. a graph file's dropped self-loops) as one ``warning:``
    line each on stderr, instead of Python's two-line form; other libraries' warnings as usual.

    Every warning is shown once, after the recording block has ended: shown inside it, another
    library's warning would be recorded again by the very list being shown (an endless loop)."""
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", GraphInputWarning)
            yield
    finally:
        _show(caught)


def _show(recorded: list[warnings.WarningMessage]) -> None:
    shown = set()
    for warning in recorded:
        if issubclass(warning.category, GraphInputWarning):
            if str(warning.message) not in shown:  # a graph named twice in a command warns once
                typer.echo(f"warning: {warning.message}", err=True)
                shown.add(str(warning.message))
        else:
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)
