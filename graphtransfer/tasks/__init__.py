"""The tasks: what each can do (:class:`Task`), and the built-in ones, one line each.

A task is what its env class declares (:class:`graphtransfer.envs.protocol.TaskMembers`): a kernel,
a finishing rule, a search for ``--polish``, baselines, a device or partitioned solve. A user's env
class that declares the same members gets the same machinery; nothing outside this folder names a
task. Each built-in task is one folder beside this file (its env, rules, baselines, searches), and
one line of :data:`TASKS`, which also registers it with gymnasium as ``graphtransfer/<Name>-v0``:
``gymnasium.make("graphtransfer/MIS-v0", graphs=load_graphs("small"))``, or a sample set name, graph
file or folder (``graphs="small"``, the default).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import gymnasium as gym

from graphtransfer.envs.protocol import PartRules, Rules
from graphtransfer.envs.transforms import KernelRule
from graphtransfer.errors import UsageError
from graphtransfer.tasks.epidemic.env import EpidemicEnv
from graphtransfer.tasks.matching.env import MatchingEnv, is_matching
from graphtransfer.tasks.maxcut.env import MaxCutEnv, cut_size
from graphtransfer.tasks.mis.env import MISEnv, is_independent_set
from graphtransfer.tasks.mis.rules import INDEPENDENT_SET as independent_set
from graphtransfer.tasks.mvc.env import MVCEnv, WeightedMVCEnv, is_vertex_cover
from graphtransfer.tasks.mvc.rules import WEIGHTED_COVER as weighted_cover
from graphtransfer.tasks.path.env import PathEnv, is_route

_NOT_DECLARED = object()
_FROM_RULES = ("kernel", "finish", "improve", "search", "rival", "baselines", "renumberable")
"""the Task members a declared :class:`~graphtransfer.envs.protocol.Rules` may fill in"""


@dataclass(frozen=True)
class Task:
    """What one task can do, read once from its env class's declared members
    (:class:`~graphtransfer.envs.protocol.TaskMembers` says what each enables); the defaults are
    what an env that declares nothing gets."""

    name: str
    env: Any
    """the env class (or the factory a gymnasium id names)"""
    gym_id: str | None = None
    kernel: KernelRule | None = None
    renumberable: bool = False
    reads_weights: tuple[str, ...] = ()
    finish: Callable | None = None
    improve: Callable | None = None
    search: Callable | None = None
    teacher: Callable | None = None
    rival: Callable | None = None
    baselines: Mapping[str, Callable] = field(default_factory=dict)
    exact: Mapping[str, Callable] = field(default_factory=dict)
    optional_baselines: Mapping[str, Callable] = field(default_factory=dict)
    device_passes: Callable | None = None
    partitioned_solve: PartRules | None = None
    takes_query: bool = False
    decision_labels: Mapping[int, str] = field(default_factory=dict)
    decision_colours: tuple[str, ...] | None = None
    action_names: tuple[str, ...] | None = None
    standing: str | None = None
    """one line on how the policy stands against the task's strongest baseline (its anchor), and
    what the policy is for where it cannot compete; ``graphtransfer tasks`` prints it"""
    rules: Rules | None = None
    """the :class:`~graphtransfer.envs.protocol.Rules` the env class declares; its members fill in
    those the class does not declare itself"""
    objective: Callable | None = None
    """the env class's static ``objective(graph, solution) -> float``: what ``--polish`` reports of
    the solution its ``search`` found"""
    sense: str = "max"
    """whether the objective is maximised (``max``) or minimised (``min``)"""

    @classmethod
    def of(cls, env: Any, name: str | None = None, gym_id: str | None = None) -> Task:
        """The task ``env`` (an env class) declares, the one place its class members are read;
        a function member that is not callable is a :class:`UsageError` that names it."""
        label = getattr(env, "__name__", str(env))
        declared: dict[str, Any] = {}
        for member in fields(cls)[3:]:
            value = getattr(env, member.name, _NOT_DECLARED)
            if member.name == "device_passes":  # the declaring class's own: a subclass may change what the passes copy
                value = value if isinstance(env, type) and "device_passes" in vars(env) else _NOT_DECLARED
            if value is _NOT_DECLARED or value is None:
                continue
            if member.type == "Callable | None" and not callable(value):
                raise UsageError(f"{label}.{member.name} is {value!r}, not a function; declare it as staticmethod(fn), or leave it out")
            if member.type == "PartRules | None" and not isinstance(value, PartRules):
                raise UsageError(f"{label}.{member.name} is {value!r}; declare a graphtransfer.envs.protocol.PartRules, or leave it out")
            declared[member.name] = value
        rules = declared.get("rules")
        if isinstance(rules, Rules):
            from_rules = {member: getattr(rules, member) for member in _FROM_RULES if getattr(rules, member)}
            declared = {**from_rules, **declared}
        return cls(name or label, env, gym_id, **declared)

    def refuse(self, option: str, member: str) -> UsageError:
        """The one-line refusal of ``option`` for this task, which does not declare ``member``."""
        having = ", ".join(name for name, task in TASKS.items() if getattr(task, member))
        return UsageError(f"{option}: the task must declare {member} (built-in: {having}); {self.name} does not, drop {option}")


TASKS: dict[str, Task] = {
    "mis": Task.of(MISEnv, "mis", "graphtransfer/MIS-v0"),
    "mvc": Task.of(MVCEnv, "mvc", "graphtransfer/MVC-v0"),
    "mvc-weighted": Task.of(WeightedMVCEnv, "mvc-weighted", "graphtransfer/WeightedMVC-v0"),
    "maxcut": Task.of(MaxCutEnv, "maxcut", "graphtransfer/MaxCut-v0"),
    "epidemic": Task.of(EpidemicEnv, "epidemic", "graphtransfer/Epidemic-v0"),
    "matching": Task.of(MatchingEnv, "matching", "graphtransfer/Matching-v0"),
    "path": Task.of(PathEnv, "path", "graphtransfer/Path-v0"),
}
"""the built-in tasks by name"""

for _task in TASKS.values():
    if _task.gym_id is not None and _task.gym_id not in gym.registry:
        # without graphs=, an env samples the small sample set rather than failing on a missing argument
        gym.register(_task.gym_id, entry_point=f"{_task.env.__module__}:{_task.env.__name__}", kwargs={"graphs": "small"})

__all__ = [
    "TASKS",
    "EpidemicEnv",
    "MISEnv",
    "MVCEnv",
    "MatchingEnv",
    "MaxCutEnv",
    "PathEnv",
    "Task",
    "WeightedMVCEnv",
    "cut_size",
    "independent_set",
    "is_independent_set",
    "is_matching",
    "is_route",
    "is_vertex_cover",
    "weighted_cover",
]
