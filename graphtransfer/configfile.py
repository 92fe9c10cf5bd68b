"""A run's settings from layers: defaults, the task's packaged YAML, the user's ``--config`` file,
the command line's options and ``--set key=value`` overrides, each later one winning.

Every layer is checked on its own, so an error names the file (or option) it came from and the
dotted key: unknown keys, wrong types and bad schedules are one line each. YAML is read with
``yaml.safe_load`` only; nothing here evaluates a string.
"""

from __future__ import annotations

import re
import types
import typing
from dataclasses import fields
from pathlib import Path
from typing import Any, Union

import yaml

from graphtransfer.config import SECTIONS, RunConfig, schedule_start, task_defaults
from graphtransfer.errors import UsageError

Layer = tuple[str, dict[str, Any]]
"""where the settings came from (a file name, ``--set ...``, ``the command line``), and the settings"""

_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_AT_LEAST_ONE = {
    "horizon",
    "ppo.total_timesteps",
    "ppo.n_envs",
    "ppo.n_steps",
    "ppo.batch_size",
    "ppo.n_epochs",
    "ppo.threads",
    "model.num_layers",
    "model.width",
    "model.head_width",
}
_AT_LEAST_ZERO = {"log.eval_every", "log.checkpoint_every"}
_CHOICES = {"ppo.vec_env": ("dummy", "subproc"), "ppo.device": ("auto", "cpu", "cuda")}
_SCHEDULES = {"ppo.learning_rate", "ppo.clip_range"}


def read_file(path: str | Path) -> Layer:
    """A ``--config`` file as a layer; a missing file or one that is not a YAML mapping is refused."""
    path = Path(path)
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
    return RunConfig.from_dict(full)


def check_layer(source: str, data: dict[str, Any]) -> dict[str, Any]:
    """The layer with its values checked and converted to the fields' types; a bad key or value
    raises a :class:`UsageError` naming ``source`` and the dotted key."""
    checked: dict[str, Any] = {}
    hints = typing.get_type_hints(RunConfig)
    for key, value in data.items():
        if key in SECTIONS:
            if not isinstance(value, dict):
                raise UsageError(f"{source}: {key}: expected a mapping of {key} settings, found {value!r}")
            checked[key] = _check_section(source, key, value)
        elif key in hints:
            checked[key] = _check_value(source, key, value, hints[key])
        else:
            raise UsageError(f"{source}: unknown key {key}; known keys are {', '.join(sorted(hints))}")
    return checked


def _check_section(source: str, section: str, values: dict[str, Any]) -> dict[str, Any]:
    kind = SECTIONS[section]
    hints = typing.get_type_hints(kind)
    known = [f.name for f in fields(kind)]
    checked = {}
    for key, value in values.items():
        if key not in hints:
            raise UsageError(f"{source}: unknown key {section}.{key}; {section} has {', '.join(known)}")
        checked[key] = _check_value(source, f"{section}.{key}", value, hints[key])
    return checked


def _check_value(source: str, key: str, value: Any, hint: Any) -> Any:
    """``value`` converted to ``hint``'s type and checked against the key's range or choices."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) else (hint,)
    converted = _convert(value, options)
    if converted is _BAD:
        names = " or ".join(_TYPE_NAMES.get(option, getattr(option, "__name__", str(option))) for option in options)
        raise UsageError(f"{source}: {key}: expected {names}, got {value!r}")
    if key in _SCHEDULES and isinstance(converted, str):
        try:
            start = schedule_start(converted)
        except ValueError:
            raise UsageError(
                f"{source}: {key}: {converted!r} is not a number or a schedule; write e.g. 3e-4, or lin_3e-4 for a linear decay to 0"
            ) from None
        if start <= 0:
            raise UsageError(f"{source}: {key}: {converted!r} must start above 0")
    problem = _out_of_range(key, converted)
    if problem:
        raise UsageError(f"{source}: {key}: {converted!r} {problem}")
    return converted


_BAD = object()
_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", type(None): "null", dict: "a mapping"}


def _convert(value: Any, options: tuple) -> Any:
    """The first of ``options`` that ``value`` is, or converts to without loss; else ``_BAD``.

    Numbers written as strings are taken as numbers ('3e-4': YAML 1.1 reads an exponent without
    a dot as a string), and whole numbers as integers (1e5 for an integer setting)."""
    for option in options:
        if option is type(None) and value is None:
            return None
        if option is bool and isinstance(value, bool):
            return value
        if isinstance(value, bool) or value is None:
            continue
        if option in (int, float):
            number = _number(value)
            if number is None:
                continue
            if option is float:
                return float(number)
            if float(number).is_integer():
                return int(number)
        if option is str and isinstance(value, str):
            return value
        if typing.get_origin(option) is dict and isinstance(value, dict) and all(isinstance(k, str) for k in value):
            return value
    return _BAD


def _number(value: Any) -> int | float | None:
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and _NUMBER.match(value.strip()):
        return float(value)
    return None


def _out_of_range(key: str, value: Any) -> str:
    if key in _AT_LEAST_ONE and value is not None and value < 1:
        return "must be at least 1"
    if key in _AT_LEAST_ZERO and value < 0:
        return "must be 0 (off) or more"
    if key in _CHOICES and value not in _CHOICES[key]:
        return f"is not one of {', '.join(_CHOICES[key])}"
    return ""


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
