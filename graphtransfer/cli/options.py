"""Command-line options made from the settings' declarations (:mod:`graphtransfer.config.schema`):
each option's name, type, choices, range, help and default come from its field, so ``--help``,
the checks and the YAML files cannot drift apart.

A command names the settings it takes with :func:`takes_settings`; it then receives those typed
on the command line as one dict, dotted key -> value, each checked by the schema's own checker
(``--n-envs 0`` is ``error: --n-envs: 0 must be at least 1``, as ``--set ppo.n_envs=0`` would be).
Options left out are not in the dict, so a ``--config`` file's values stay.
"""

from __future__ import annotations

import functools
import inspect
import json
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass
from typing import Annotated, Any, Literal, Union

import typer

from graphtransfer.config import check_setting, cli_keys, declaration
from graphtransfer.errors import UsageError

_TYPE_NAMES = {int: "<int>", float: "<float>", str: "<str>", dict: "<json>"}
KEYWORD = inspect.Parameter.KEYWORD_ONLY


@dataclass(frozen=True)
class SettingOption:
    """One setting as a command-line option: ``--{flag}`` sets the dotted ``key``."""

    name: str
    """the option's parameter name, as :func:`graphtransfer.config.cli_keys` spells it (``n_envs``)"""
    key: str
    """the dotted key it sets (``ppo.n_envs``)"""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def choices(self) -> tuple[str, ...]:
        """The values a ``Literal`` setting takes, in their declared order (none for other types)."""
        return tuple(choice for option in _options(self.hint) if typing.get_origin(option) is Literal for choice in typing.get_args(option))

    @property
    def hint(self) -> Any:
        return declaration(self.key)[1]

    @property
    def help(self) -> str:
        """The help declared in the schema, as ``--help`` shows it."""
        return declaration(self.key)[0].metadata["help"]

    def parameter(self) -> inspect.Parameter:
        """The Typer parameter, with the schema's default: a flag pair for a bool, else the option's
        text, which :meth:`parse` checks (so its error is the schema's, in one line)."""
        field = declaration(self.key)[0]
        if bool in _options(self.hint):
            option = typer.Option(f"{self.flag}/--no-{self.flag[2:]}", help=_escaped(self.help))
            return inspect.Parameter(self.name, KEYWORD, default=field.default, annotation=Annotated[bool, option])
        if field.default_factory is not MISSING:
            default = json.dumps(field.default_factory())
        else:
            default = None if field.default is None else str(field.default)
        option = typer.Option(self.flag, help=_escaped(self.help), metavar=self.metavar())
        return inspect.Parameter(self.name, KEYWORD, default=default, annotation=Annotated[str | None, option])

    def metavar(self) -> str:
        """``[sage|gcn|gin]`` for choices, else the type with its range: ``<int> 1..4,096``, ``<float> >=0``."""
        if self.choices:
            return "[" + "|".join(choice for choice in self.choices if choice) + "]"
        kinds = [option for option in _options(self.hint) if option is not type(None)]
        name = " or ".join(_TYPE_NAMES.get(typing.get_origin(kind) or kind, "<str>") for kind in kinds)
        low, high = (declaration(self.key)[0].metadata.get(end) for end in ("low", "high"))
        if low is not None and high is not None:
            return f"{name} {_number(low)}..{_number(high)}"
        if low is not None:
            return f"{name} >={_number(low)}"
        return name

    def parse(self, value: bool | str) -> Any:
        """The option's value as the schema declares it: checked, converted, one line naming the flag if bad."""
        if isinstance(value, str) and dict in (typing.get_origin(kind) for kind in _options(self.hint)):
            value = _json_object(value, self.flag)
        return check_setting(self.flag, self.key, value)


def setting_options(*names: str) -> list[SettingOption]:
    """The options of the settings named (by option name: ``steps``, ``n_envs``, ``conv``)."""
    keys = cli_keys()
    unknown = [name for name in names if name not in keys]
    if unknown:
        raise ValueError(f"no setting has the option name {', '.join(unknown)}; known: {', '.join(sorted(keys))}")
    return [SettingOption(name, keys[name]) for name in names]


def takes_settings(*names: str) -> Callable[[Callable], Callable]:
    """Give a command an option for each setting named, made from the schema, in place of its
    ``settings`` parameter; the command (which takes ``ctx: typer.Context``) is called with
    ``settings``: the options typed on the command line, dotted key -> checked value."""
    options = setting_options(*names)

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command, eval_str=True)
        own = [parameter for parameter in signature.parameters.values() if parameter.name != "settings"]

        @functools.wraps(command)
        def with_settings(ctx: typer.Context, **values: Any) -> Any:
            given = {option: values.pop(option.name) for option in options}
            settings = {option.key: option.parse(value) for option, value in given.items() if typed(ctx, option.name)}
            return command(ctx, settings=settings, **values)

        required = [parameter for parameter in own if parameter.default is parameter.empty]  # ctx
        rest = [parameter.replace(kind=KEYWORD) for parameter in own if parameter.default is not parameter.empty]
        parameters = [*required, *(option.parameter() for option in options), *rest]  # --help lists the settings first
        with_settings.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        with_settings.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
        return with_settings

    return decorate


def typed(ctx: typer.Context, name: str) -> bool:
    """Whether the option was given (on the command line, or by its environment variable), not left at its default."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def _options(hint: Any) -> tuple:
    return typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) else (hint,)


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def _escaped(text: str) -> str:
    """Help text as Typer's rich output shows it whole: ``[`` would open markup."""
    return text.replace("[", "\\[")


def _json_object(text: str, flag: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"{flag} {text!r} is not JSON ({err.msg}); pass an object such as '{{\"horizon\": 16}}'") from None
    if not isinstance(value, dict):
        raise UsageError(f"{flag} {text!r} is not a JSON object; pass an object such as '{{\"horizon\": 16}}'")
    return value
