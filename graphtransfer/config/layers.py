"""A run's settings from layers: defaults, the task's packaged YAML, the user's ``--config`` file,
the command line's options and ``--set key=value`` overrides, each later one winning.

Every layer is checked on its own against the declarations in :mod:`graphtransfer.config.schema`,
so an error names the file (or option) it came from and the dotted key: unknown keys, wrong
types, ranges and bad schedules are one line each. YAML is read with ``yaml.safe_load`` only;
nothing here evaluates a string, and a file's ``env`` is used only where the command line names one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from graphtransfer.config.schema import RunConfig, check_layer, task_defaults
from graphtransfer.errors import UsageError
from graphtransfer.io import not_a_regular_file

Layer = tuple[str, dict[str, Any]]
"""where the settings came from (a file name, ``--set ...``, ``the command line``), and the settings"""


def read_file(path: str | Path, env: str | None = None) -> Layer:
    """A ``--config`` file as a layer; a missing file or one that is not a YAML mapping is refused.

    A config file is data and never decides what code runs: one that names a user env (whose
    module would be imported, its top-level code run) is refused unless ``env``, what the user
    named on the command line, names one too (then that one is used, as a later layer wins)."""
    path = Path(path)
    special = not_a_regular_file(path)
    if special:
        raise UsageError(f"--config {path}: {special}")
    if not path.is_file():
        raise UsageError(f"--config {path}: no such file; pass a YAML file such as a run folder's config.yaml")
    try:
        data = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        where = getattr(err, "problem_mark", None)
        line = f", line {where.line + 1}" if where is not None else ""
        raise UsageError(f"{path}{line}: not valid YAML ({getattr(err, 'problem', None) or err})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a mapping of settings (task: mis, ppo: {{...}}), found a {type(data).__name__}")
    named = data.get("env")
    if named is not None and env is None:
        raise UsageError(
            f"--config {path}: names the env {named!r}, whose code would be imported and run; a config file never decides "
            f"what code runs: pass --env {named} on the command line if you trust it"
        )
    return str(path), check_layer(str(path), data)


def parse_sets(items: list[str]) -> Layer:
    """``--set ppo.gamma=0.995 --set model.width=128`` as one layer; each value is read as YAML."""
    data: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {item!r}: expected KEY=VALUE with a dotted key, e.g. --set ppo.gamma=0.995")
        try:
            value = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError as err:
            raise UsageError(f"--set {item!r}: the value is not valid YAML ({getattr(err, 'problem', None) or err})") from None
        _merge(data, check_layer(f"--set {item}", _nest(key.strip(), value)))
    return "--set", data


def option_layer(values: dict[str, Any]) -> Layer:
    """Command-line options, given as ``{dotted key: value}``, as one layer."""
    data: dict[str, Any] = {}
    for key, value in values.items():
        _merge(data, _nest(key, value))
    return "the command line", check_layer("the command line", data)


def resolve(layers: list[Layer]) -> RunConfig:
    """The config the layers make, on top of the defaults and the task's packaged YAML.

    The task (and whether a user env replaces it) is read from the layers first, since it picks
    which packaged file lies underneath them.
    """
    merged: dict[str, Any] = {}
    for _, data in layers:
        _merge(merged, data)
    task, env = merged.get("task", RunConfig.task), merged.get("env")
    base = {} if env is not None else task_defaults(task)
    if base:
        base = check_layer(f"graphtransfer/hyperparams/{task}.yml", base)
    full: dict[str, Any] = {}
    for data in (base, merged):
        _merge(full, data)
    return RunConfig.from_dict(full, "the settings")


def _nest(dotted: str, value: Any) -> dict[str, Any]:
    """``"ppo.gamma", 0.9`` -> ``{"ppo": {"gamma": 0.9}}``."""
    for part in reversed(dotted.split(".")):
        value = {part: value}
    return value


def _merge(into: dict[str, Any], data: dict[str, Any]) -> None:
    """Merge ``data`` into ``into`` in place; nested mappings merge key by key."""
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value
