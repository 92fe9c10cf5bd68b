"""The project's own exceptions and warnings: the CLI turns each exception into a one-line message and an exit code."""


class GraphTransferError(Exception):
    """Base class. The message names the bad value, what was expected and the fix."""


class UsageError(GraphTransferError):
    """Bad input from the user (missing file, unknown task, malformed graph): exit code 2."""


class GraphInputError(UsageError):
    """A graph file or graph spec that cannot be read."""


class CheckpointError(UsageError):
    """A model folder that is missing, damaged, or cannot be loaded into this model."""


class GraphTooLargeError(UsageError):
    """A graph above the size an exact (exponential-time) solver accepts."""


class GraphFileError(GraphInputError):
    """A graph file that cannot be read. ``path``, ``line`` (1-based, or None where no line is to
    blame, e.g. a binary archive) and ``cause`` are kept apart for callers that report them."""

    def __init__(self, path: object, cause: str, line: int | None = None):
        self.path, self.cause, self.line = str(path), cause, line
        where = self.path if line is None else f"{self.path}, line {line}"
        super().__init__(f"{where}: {cause}")

    def __reduce__(self):  # rebuilt from its parts where it crosses a process (a Ray worker's, a pool's), not from the message
        return type(self), (self.path, self.cause, self.line)


class ClusterLost(GraphTransferError):
    """The Ray cluster (or an actor on it) stopped answering while it held work. ``finished`` maps
    the positions of the jobs done before that to their results, for the caller to keep."""

    def __init__(self, message: str, finished: dict[int, object] | None = None):
        super().__init__(message)
        self.finished = finished or {}


class GraphInputWarning(UserWarning):
    """A graph file was read, but something in it was dropped or repaired (self-loops, repeats)."""
