"""Writing files so that nothing is lost: the one atomic writer, the one folder lock, and the
checks that keep an output from overwriting an input.

A write goes to a temporary file beside its target, is flushed to disk, given the mode an
ordinary ``open()`` would give (``0666`` less the umask, so a teammate can read a shared model)
and renamed over the target: a killed process leaves the old file or the new one, never half.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from graphtransfer.errors import UsageError

LOCK_NAME = ".graphtransfer.lock"
"""the lock file a model folder's writers take; readers never need it"""
LOCK_TIMEOUT_SECONDS = 120.0


def write_atomically(path: str | Path, write: Callable[[Path], None]) -> None:
    """Run ``write`` on a temporary path beside ``path``, flush it to disk, rename it over ``path``.

    The rename alone is atomic against a killed process; the flush makes it so across a power
    cut too, where the filesystem honours fsync.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, _default_mode())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def atomic_write(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`write_atomically`)."""
    write_atomically(path, lambda tmp: tmp.write_bytes(data))


def sync_folder(folder: Path) -> None:
    """Persist the renames inside ``folder`` themselves (POSIX; Windows cannot open a folder for this)."""
    if os.name == "posix":
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextmanager
def folder_lock(folder: Path, timeout: float = LOCK_TIMEOUT_SECONDS, busy: str | None = None) -> Iterator[None]:
    """Hold the exclusive write lock of ``folder``: a second writer waits up to ``timeout``
    seconds, then is refused with a message that says why (``busy``, where a model folder's
    message does not fit)."""
    from filelock import FileLock, Timeout  # here, not at the top: --help and graphs commands never lock

    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(folder / LOCK_NAME, timeout=timeout, mode=_default_mode())
    try:
        lock.acquire()
    except Timeout:
        raise UsageError(
            busy
            or f"{folder}: another process has been writing this model folder for {timeout:.0f} s (it holds {folder / LOCK_NAME}); "
            "wait for it to finish, or write to another folder"
        ) from None
    try:
        yield
    finally:
        lock.release()


def check_output_file(out: Path, inputs: list[Path], force: bool, option: str = "--out") -> None:
    """Refuse an output file that would destroy something: one of ``inputs`` (graph files, or a
    file inside a folder of graphs), a model folder's own files, a folder, or (without ``force``)
    any existing file. A solution CSV beside a model's files is fine."""
    if out.name == "":
        raise UsageError(f"{option} names no file; name a file to write, e.g. {option} solution.csv")
    if out.is_dir():
        raise UsageError(f"{option} {out}: is a folder; name a file inside it, e.g. {option} {out / 'solution.csv'}")
    resolved = out.resolve()
    for source in inputs:
        if source.exists() and (source.resolve() == resolved or (source.is_dir() and source.resolve() in resolved.parents)):
            raise UsageError(f"{option} {out}: would overwrite the input {source}; write the output somewhere else")
    if _is_model_file(resolved):
        raise UsageError(f"{option} {out}: is a file of the model folder {out.parent}; name another file, e.g. {out.parent}/solution.csv")
    if out.exists() and not force:
        raise UsageError(f"{option} {out}: exists already; pass --force to replace it, or choose another name")


def _is_model_file(path: Path) -> bool:
    """Whether ``path`` is one of the files a model folder's saves own (its config, tensors, lock)."""
    owned = path.name in ("config.json", "config.yaml", LOCK_NAME) or path.suffix == ".safetensors"
    return owned and (path.parent / "config.json").is_file()


def _default_mode() -> int:
    """What ``open()`` gives a new file: ``0o666`` less the process's umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask
