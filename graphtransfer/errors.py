"""The project's own exceptions: the CLI turns each into a one-line message and an exit code."""


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
