"""What every command module shares: the project's errors become one line on stderr and an exit
code, never a traceback. Only command modules import this."""

from __future__ import annotations

import functools

import typer

from graphtransfer.errors import GraphTransferError, UsageError


def fail(message: str, code: int) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def friendly_errors(command):
    """Turn the project's errors into one line and an exit code, never a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except UsageError as err:
            fail(str(err), 2)
        except GraphTransferError as err:
            fail(str(err), 1)
        except MemoryError:
            fail("ran out of memory; use smaller graphs or fewer parallel envs", 1)
        except KeyboardInterrupt:
            fail("interrupted", 130)

    return wrapper
