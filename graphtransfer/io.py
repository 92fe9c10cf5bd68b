"""Writing files so that nothing is lost: the one atomic writer, the one folder lock, and the
checks that keep an output from overwriting an input.

A write goes to a temporary file beside its target, is flushed to disk, given the mode an
ordinary ``open()`` would give (``0666`` less the umask, so a teammate can read a shared model)
and renamed over the target: a killed process leaves the old file or the new one, never half.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from graphtransfer.errors import UsageError

LOCK_NAME = ".graphtransfer.lock"
"""the lock file a model folder's writers take; readers never need it"""
LOCK_TIMEOUT_SECONDS = 120.0


def write_atomically(path: str | Path, write: Callable[[Path], object]) -> None:
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


def save_figure(figure, path: str | Path, **options) -> None:
    """Save a matplotlib ``figure`` atomically, in the format its extension names."""
    path = Path(path)
    write_atomically(path, lambda tmp: figure.savefig(tmp, format=path.suffix.lstrip(".").lower() or None, **options))


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


class SharedFolderLock:
    """``folder``'s lock shared by cooperating processes (several ``tune`` processes on one study),
    refusing with ``busy`` a process that holds it exclusively (:func:`folder_lock`: another
    writer, or a release that did not share it), and refused by one that asks for it so.

    ``alone`` says whether no other process held the lock when this one took it, and ``since``
    when that was (``time.time()``): what other processes of the folder left behind before then,
    they left for good. POSIX ``flock``, the call ``filelock`` makes for :func:`folder_lock`;
    where there is none (Windows), the lock is exclusive.

    Example::

        with SharedFolderLock(folder, busy="another search holds it") as lock:
            if lock.alone:
                ...  # nothing from before lock.since is still at work
    """

    def __init__(self, folder: Path, busy: str):
        self.folder, self.busy = Path(folder), busy
        self.alone, self.since = False, 0.0
        self._fd: int | None = None
        self._exclusive: AbstractContextManager | None = None

    def __enter__(self) -> SharedFolderLock:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.since = time.time()
        try:
            import fcntl
        except ImportError:  # no shared locks: one process at a time
            self._exclusive = folder_lock(self.folder, timeout=0, busy=self.busy)
            self._exclusive.__enter__()
            self.alone = True
            return self
        self._fd = os.open(self.folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, _default_mode())
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.alone = True
        except BlockingIOError:
            pass
        self._share(fcntl)
        return self

    def _share(self, fcntl) -> None:
        """Take (or turn the exclusive lock into) the shared one. flock converts by releasing
        first, so another process's brief exclusive try may come between: wait a moment for it."""
        deadline = time.monotonic() + 2.0
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    self.__exit__(None, None, None)
                    raise UsageError(self.busy) from None
                time.sleep(0.02)

    def __exit__(self, *exc_info) -> None:
        if self._exclusive is not None:
            self._exclusive.__exit__(*exc_info)
            self._exclusive = None
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None


FIGURE_SUFFIXES = (".png", ".svg", ".pdf")
"""what a figure output may be named: matplotlib picks the format from the extension"""
STAGING_PREFIX = ".unfinished-"
"""the hidden folder inside a run folder where a training run keeps its logs until its save commits"""
MODEL_FOLDER_FILES = ("config.json", "config.yaml", "progress.csv", LOCK_NAME)
"""the files a model folder's saves and logs own, besides its ``.safetensors`` tensors"""
_NAME_MAX = 255


def not_a_regular_file(path: Path) -> str | None:
    """What ``path`` is where it exists but is neither a regular file nor a folder (a FIFO, a
    device, a socket, or a link to one), as a reason ending a refusal; else ``None``. Every reader
    of a user's file asks this first: reading a pipe or ``/dev/zero`` would wait or never end, and
    "no such file" would name the wrong cause."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # missing, or a dangling link: the caller's own message says so
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kinds = {stat.S_ISFIFO: "a FIFO (named pipe)", stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device"}
    kind = next((name for test, name in kinds.items() if test(mode)), "a socket" if stat.S_ISSOCK(mode) else "a special file")
    if os.path.islink(path):
        kind = f"a link to {os.path.realpath(path)}, {kind}"
    return f"is {kind}, not a regular file (reading it could wait or never end); copy what it holds into a file and name that"


def check_output_file(
    out: Path, inputs: list[Path], force: bool, option: str = "--out", suffixes: tuple[str, ...] = (), example: str = "solution.csv"
) -> None:
    """The output rule for a file a command writes, checked before any work starts: refuse a path
    that cannot be written (:func:`check_path_form`), a name without one of ``suffixes`` (when
    given), one of ``inputs`` (graph files, or a file inside a folder of graphs), a model folder's
    own files, a folder, or (without ``force``) any existing file. A solution CSV beside a model's
    files is fine. A refusal suggests a name like ``example`` (a command that writes .onnx suggests one)."""
    out = Path(out)
    if out.name == "":
        raise UsageError(f"{option} names no file; name a file to write, e.g. {option} solution.csv")
    check_path_form(out, option)
    if out.is_dir():
        inside = out / (f"figure{suffixes[0]}" if suffixes else example)
        raise UsageError(f"{option} {out}: is a folder; name a file inside it, e.g. {option} {inside}")
    if suffixes and out.suffix.lower() not in suffixes:
        raise UsageError(
            f"{option} {out}: the extension names the file's format, and this output is written as {', '.join(suffixes)}; "
            f"name e.g. {option} {out.with_suffix(suffixes[0])}"
        )
    resolved = out.resolve()
    for source in inputs:
        if source.exists() and (source.resolve() == resolved or (source.is_dir() and source.resolve() in resolved.parents)):
            raise UsageError(f"{option} {out}: would overwrite the input {source}; write the output somewhere else")
    if _is_model_file(resolved):
        raise UsageError(f"{option} {out}: is a file of the model folder {out.parent}; name another file, e.g. {out.parent / example}")
    if out.exists() and not force:
        raise UsageError(f"{option} {out}: exists already; pass --force to replace it, or choose another name")


def check_output_folder(
    folder: Path,
    inputs: list[Path],
    is_ours: Callable[[Path], bool],
    what: str,
    option: str = "--out",
    force: bool | None = None,
    alternative: str = "",
) -> None:
    """The output rule for a folder a command fills (a model folder, a study), checked before any
    work starts: refuse a path that cannot be written (:func:`check_path_form`), a file, one of
    ``inputs`` or a folder inside one, a symbolic link to a folder that is not empty (name the
    folder itself), and a folder that holds anything but what ``is_ours`` recognises (an earlier
    ``what`` of ours) or an unfinished run's leftovers.

    An earlier ``what`` of ours is replaced only with ``force`` (``force=False`` refuses it, naming
    ``alternative``, e.g. how to continue it, beside --force); ``force=None`` is for a command that
    continues what is there (a study)."""
    folder = Path(folder)
    check_path_form(folder, option)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{option} {folder}: is a file; name a folder for the {what}, e.g. {option} {folder.with_suffix('')}-run")
    resolved = folder.resolve()
    for source in inputs:
        if source.exists() and (source.resolve() == resolved or source.resolve() in resolved.parents):
            raise UsageError(f"{option} {folder}: is the input {source} or inside it; write the {what} somewhere else")
    if not folder.is_dir():
        return
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {folder}: is not writable; choose a folder you can write to")
    entries = sorted(entry.name for entry in folder.iterdir())
    if folder.is_symlink() and entries:
        raise UsageError(
            f"{option} {folder}: is a symbolic link to {resolved}, which is not empty; name that folder itself "
            f"({option} {resolved}) if you mean to write there"
        )
    foreign = [name for name in entries if name != LOCK_NAME and not name.startswith(STAGING_PREFIX)]
    if foreign and not is_ours(folder):
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise UsageError(
            f"{option} {folder}: holds files that are not a graphtransfer {what} ({shown}); it is written only into an "
            f"empty or new folder or over an earlier {what}; choose another folder"
        )
    if foreign and force is False:
        raise UsageError(
            f"{option} {folder}: holds a {what} already; pass --force to replace it{alternative}, or choose another folder"
        )


def check_path_form(path: Path, option: str) -> None:
    """Refuse, before any work starts, a path that no write could succeed on: an empty name, a name
    longer than the filesystem allows, a symbolic link loop or a dangling link on the way, a file
    where a folder is needed (``notes.txt/out.csv``), or a folder this process cannot write to."""
    path = Path(path)
    if str(path) in ("", ".") or path.name == "":
        raise UsageError(f"{option} names no file or folder; name one, e.g. {option} out")
    base = Path(path.anchor or ".")
    for part in path.parts[1 if path.anchor else 0 :]:
        if len(os.fsencode(part)) > _name_max(base):
            raise UsageError(
                f"{option}: the name {part[:24]}... is {len(os.fsencode(part))} bytes long, more than the {_name_max(base)} "
                f"this filesystem allows; choose a shorter name"
            )
        step = base / part
        try:
            status = os.stat(step)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise UsageError(f"{option} {path}: {step} is a symbolic link loop; remove the link or choose another path") from None
            if err.errno != errno.ENOENT:
                raise UsageError(f"{option} {path}: {step} cannot be reached ({err.strerror}); choose another path") from None
            if os.path.lexists(step):
                raise UsageError(
                    f"{option} {path}: {step} is a symbolic link to {os.readlink(step)}, which does not exist; "
                    "remove the link or choose another path"
                ) from None
            break  # from here on, the command creates what is missing
        if step != path and not stat.S_ISDIR(status.st_mode):
            raise UsageError(f"{option} {path}: {step} is a file, not a folder, so nothing can be written inside it; choose another path")
        if step == path:
            break
        base = step
    if not os.access(base, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: the folder {base} is not writable; choose a folder you can write to")


def _name_max(folder: Path) -> int:
    """The longest file name, in bytes, that the filesystem holding ``folder`` allows."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # no pathconf (Windows) or no answer
        return _NAME_MAX


def _is_model_file(path: Path) -> bool:
    """Whether ``path`` is one of the files a model folder's saves and logs own (its config,
    tensors, lock, progress log, temporary files of a save)."""
    name = path.name
    owned = name in MODEL_FOLDER_FILES or path.suffix == ".safetensors" or (name.startswith(".") and name.endswith(".tmp"))
    return owned and (path.parent / "config.json").is_file()


def _default_mode() -> int:
    """What ``open()`` gives a new file: ``0o666`` less the process's umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask
