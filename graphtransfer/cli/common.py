"""What every command module shares: the project's errors become one line on stderr and an exit
code, never a traceback, and the project's warnings one ``warning:`` line each; the options and
checks that several commands take (the env, the device, threads, budgets in seconds). Only command
modules import this."""

from __future__ import annotations

import difflib
import functools
import importlib
import signal
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from graphtransfer.errors import GraphInputWarning, GraphTransferError, UsageError
from graphtransfer.process import free_cores, freeze_loaded_objects


def fail(message: str, code: int) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


CLICK_ERRORS = importlib.import_module(typer.BadParameter.__module__)
"""the exceptions of the Click that Typer parses with: its own copy (``typer._click``) from Typer 0.2x, Click itself before"""


def usage_error_line(err: Any) -> str:
    """Click's usage error (an unknown option, a missing or malformed one, an unknown command) as
    the one line every other bad input gets, naming the command and, for an unknown option, the
    closest option it has by its primary name: ``train: no such option --stepz; did you mean
    --total-timesteps (--steps)?``."""
    ctx, commands = getattr(err, "ctx", None), []
    while ctx is not None and ctx.parent is not None:
        commands.append(ctx.info_name or "")
        ctx = ctx.parent
    where = " ".join(reversed(commands))
    if not isinstance(err, CLICK_ERRORS.NoSuchOption):
        message = err.format_message()
        return f"{where + ': ' if where else ''}{message[:1].lower()}{message[1:]}"
    line = f"{where + ': ' if where else ''}no such option {err.option_name}"
    params = err.ctx.command.get_params(err.ctx) if err.ctx is not None else []
    primaries = {flag: opts[0] for param in params for opts in (param.opts, param.secondary_opts) for flag in opts}
    closest = difflib.get_close_matches(err.option_name, list(primaries), n=1)
    if not closest:
        return f"{line}; 'graphtransfer {where + ' ' if where else ''}--help' lists them"
    primary = primaries[closest[0]]
    return f"{line}; did you mean {primary if primary == closest[0] else f'{primary} ({closest[0]})'}?"


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
        except RuntimeError as err:
            if not gpu_out_of_memory(err):
                raise
            fail("the GPU ran out of memory; run on the CPU (--device cpu), or use a smaller graph or fewer parallel envs", 1)
        except OSError as err:  # the paths were checked up front; this is the disk or the system failing meanwhile
            where = f"{err.filename}: " if err.filename else ""
            fail(f"{where}{err.strerror or err}; check the disk's free space and the folder's permissions", 1)
        except KeyboardInterrupt as err:  # its text, where the library gives one, says what was kept
            fail(f"{stopped_by()}; {err}" if str(err) else stopped_by(), stop_exit_code())

    return wrapper


STOP_SIGNALS = ("SIGTERM", "SIGHUP")
"""what a batch system, a container runtime, ``timeout`` or a closing terminal sends to stop a command"""
_stop_signal: int | None = None


def stop_like_ctrl_c() -> None:
    """Make SIGTERM and SIGHUP do in this process what Ctrl-C (SIGINT) does at that moment, so every
    long command has one way to stop: training saves a checkpoint and prints the resume line, a
    search marks its trials failed, a solve ends with one line. The exit code is then 128 + the
    signal's number (143 for SIGTERM). A signal the process was started with ignored (``nohup``)
    stays ignored. For the command line's entry point; a Python user's process is left as it is."""
    for name in STOP_SIGNALS:
        signum = getattr(signal, name, None)
        if signum is not None and signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _like_ctrl_c)


def _like_ctrl_c(signum: int, frame) -> None:
    global _stop_signal
    _stop_signal = signum
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):  # the handler in effect now: a training run's stop request, or Python's KeyboardInterrupt
        handler(signal.SIGINT, frame)
    else:  # SIGINT ignored (a background job) or left to the system: stop as Python's own handler would
        raise KeyboardInterrupt


def stopped_by() -> str:
    """How the command was stopped, for its last line: ``interrupted`` (Ctrl-C) or ``stopped by SIGTERM``."""
    return "interrupted" if _stop_signal is None else f"stopped by {signal.Signals(_stop_signal).name}"


def stop_exit_code() -> int:
    """The exit code of a stopped command, as a shell reports a process the signal killed: 130 for Ctrl-C, 143 for SIGTERM."""
    return 128 + (_stop_signal or signal.SIGINT)


def gpu_out_of_memory(err: BaseException) -> bool:
    """Whether ``err`` is torch's CUDA out-of-memory error (torch is never imported for the question)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(err, torch.cuda.OutOfMemoryError)


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


WORKERS_HELP = "With a folder of graphs: local worker processes, one torch thread each (default: 1; with --ray-address, one per CPU)."


RAY_HELP = (
    "With a folder of graphs: run on this Ray cluster ('auto', 'local' starts one here, or host:port); "
    "needs pip install 'graphtransfer\\[ray]'."
)


ONE_THREAD_BELOW = 10_000
"""predict runs graphs of fewer nodes on one torch thread unless --threads says otherwise"""


SourceOption = Annotated[
    str | None, typer.Option(help="path: the node to route from, by the graph's own id (as the file names it); with --target.")
]


TargetOption = Annotated[str | None, typer.Option(help="path: the node to route to, by the graph's own id; with --source.")]


EnvOption = Annotated[
    str | None,
    typer.Option(
        help="The user env the model was trained on ('package.module:Class' or a gymnasium id). A model folder never "
        "imports code it names: pass the env yourself, and only one you trust."
    ),
]


ConvOption = Annotated[
    str | None,
    typer.Option(
        metavar="MODULE:CLASS",
        help="The user's own layer the model was trained with (--conv at train). A model folder never imports code it "
        "names: pass the layer yourself, and only one you trust.",
    ),
]


def name_conv(conv: str | None, model: str | Path | None = None, env: str | None = None) -> None:
    """Import the user's layer named by ``--conv`` (:func:`graphtransfer.nn.user_conv.use_conv`), and
    refuse it where ``model`` (a folder, or a built-in model's name; ``None``: the model to train)
    was not trained with it, so that it is never ignored; nothing without one."""
    if conv is None:
        return
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.nn.user_conv import use_conv

    named = use_conv(conv)
    if model is None:
        return
    used = read_checkpoint(model, env).config.model.conv
    if used != named:
        raise UsageError(f"--conv {conv}: this model's layer is {used}, not a layer of yours; leave --conv out")


SOLVE_RUNTIME = ("threads", "device", "max_nodes_per_batch", "mixed_precision")
"""the runtime options of predict, eval and transfer, made from :class:`graphtransfer.config.Runtime`"""


def use_threads(threads: int | None, nodes: int | None = None) -> None:
    """``threads`` torch threads; by default one on a graph of fewer than ``ONE_THREAD_BELOW`` nodes,
    else one per core this process may use (its CPU affinity) that no other running task holds."""
    import torch

    if threads is None:
        threads = 1 if nodes is not None and nodes < ONE_THREAD_BELOW else free_cores()
    torch.set_num_threads(threads)


def start_work(threads: int | None, nodes: int | None = None) -> None:
    """What a solving command does once its options are checked and its model and graphs are at
    hand: its torch threads (:func:`use_threads`), and the objects loaded so far left out of the
    garbage collector's passes (:func:`graphtransfer.process.freeze_loaded_objects`)."""
    use_threads(threads, nodes)
    freeze_loaded_objects()


WEEK_SECONDS = 7 * 24 * 3600
"""the longest --adapt or --polish: a longer one is taken for a typing mistake"""


def seconds_option(option: str, text: str, example: int) -> float:
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


def check_positive(**values: int) -> None:
    for name, value in values.items():
        if value < 1:
            raise UsageError(f"--{name.replace('_', '-')} {value} must be at least 1")
