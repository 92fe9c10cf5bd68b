"""Decoding settings that cannot change how a model decodes are refused, never ignored.

Whether one applies is asked of what the model's task declares (its kernel rule, exact rules,
renumbering: :func:`graphtransfer.tasks.factory.task_of`), so a user env that declares them gets the options
that a built-in task gets, and loses none it did not declare.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import fields

from graphtransfer.config import Decoding, RunConfig, Runtime
from graphtransfer.errors import UsageError
from graphtransfer.tasks.factory import graph_kernel, renumberable, task_of


def given_fields(decoding: Decoding) -> list[str]:
    """The fields of ``decoding`` not at their defaults: what a caller of the Python API set."""
    default = Decoding()
    return [field.name for field in fields(Decoding) if getattr(decoding, field.name) != getattr(default, field.name)]


def check_decoding_applies(config: RunConfig, decoding: Decoding, given: Collection[str] | None = None) -> None:
    """Refuse each setting of ``decoding`` named in ``given`` (field names; default: those not at
    their defaults) that a model of ``config`` would ignore, in one line naming the option and why:
    the exact rules (``reductions``) where the task has neither a kernel rule nor exact rules,
    ``kernel_every`` where it has no kernel rule or the rules are off, ``node_order`` where the task
    is never renumbered."""
    given = given_fields(decoding) if given is None else given
    name = config.name
    kernel = graph_kernel(config)
    if "reductions" in given and kernel is None and not _exact_rules(config):
        flag = "--reductions" if decoding.reductions else "--no-reductions"
        raise UsageError(f"{flag}: a model of {name} has no exact rules (no kernel, no exact actions) to turn on or off; leave it out")
    if "kernel_every" in given and kernel is None:
        raise UsageError(f"--kernel-every: a model of {name} has no kernel rule to shrink the undecided graph with; leave it out")
    if "kernel_every" in given and not decoding.reductions:
        raise UsageError("--kernel-every shrinks the graph by the exact rules, which --no-reductions turns off; leave it out")
    if "node_order" in given and not renumberable(config):
        raise UsageError(f"--node-order: a model of {name} solves every graph in the order its file numbers the nodes; leave it out")


def _exact_rules(config: RunConfig) -> bool:
    """Whether a user env declares exact actions (:class:`~graphtransfer.envs.protocol.Rules`); a
    built-in task's exact rules come with its kernel rule."""
    task = task_of(config)
    return (task.rules is not None and task.rules.exact_actions is not None) or callable(getattr(task.env, "exact_actions", None))


def check_runtime_applies(runtime: Runtime, device: str) -> None:
    """Refuse ``mixed_precision`` where the policy runs on ``device`` ``cpu``: it autocasts on CUDA only."""
    if runtime.mixed_precision and device == "cpu":
        raise UsageError("--mixed-precision autocasts the message passing on CUDA, and the policy runs on the CPU here; leave it out")
