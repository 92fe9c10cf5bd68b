"""Command-line options made from the settings' declarations (:mod:`graphtransfer.config.schema`):
each option's name, type, choices, range, help and default come from its field, so ``--help``,
the checks and the YAML files cannot drift apart.

Two decorators give a command its options. :func:`takes_settings` hands it the run settings typed
on the command line as one layer, dotted key -> value (options left out are not in it, so a
``--config`` file's values stay); :func:`takes_params` hands it one parameter object
(:class:`~graphtransfer.config.Decoding`, :class:`~graphtransfer.config.Runtime`) built from its
options. Either way a bad value is the schema's one-line error naming the key and the option
(``ppo.n_envs (--n-envs): 0 must be at least 1``), as ``--set`` and YAML files get.
"""

from __future__ import annotations

import functools
import inspect
import json
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from typing import Annotated, Any, Literal, Union

import typer

from graphtransfer.config import SECTIONS, RunConfig, check_field, check_setting, cli_keys, field_of, option_aliases
from graphtransfer.errors import UsageError

_TYPE_NAMES = {int: "<int>", float: "<float>", str: "<str>", dict: "<json>"}
KEYWORD = inspect.Parameter.KEYWORD_ONLY


@dataclass(frozen=True)
class FieldOption:
    """One declared field as the command-line option ``--{name}``."""

    kind: type
    """the dataclass that declares it: a section of RunConfig, Decoding or Runtime"""
    field: str
    """the field's name (``n_envs``; ``method`` for ``--decoding``)"""
    name: str
    """the option's name as a Python parameter (``n_envs``, ``decoding``)"""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def where(self) -> str:
        """How an error names it: ``Decoding.seed (--seed)``, as the parameter object's own check does."""
        return f"{self.kind.__name__}.{self.field} ({self.flag})"

    @property
    def hint(self) -> Any:
        return field_of(self.kind, self.field)[1]

    @property
    def help(self) -> str:
        """The help declared in the schema, as ``--help`` shows it."""
        return field_of(self.kind, self.field)[0].metadata["help"]

    @property
    def choices(self) -> tuple[str, ...]:
        """The values a ``Literal`` setting takes, in their declared order (none for other types)."""
        literals = [option for option in _options(self.hint) if typing.get_origin(option) is Literal]
        return tuple(choice for option in literals for choice in typing.get_args(option) if choice)

    def parameter(self) -> inspect.Parameter:
        """The Typer parameter, with the schema's default and the field's aliases: a flag pair for a
        bool, else the option's text, which the schema's checker converts (so its error is one
        line, never a usage panel)."""
        declared = field_of(self.kind, self.field)[0]
        aliases = option_aliases(self.kind, self.field)
        if bool in _options(self.hint):
            pairs = [f"{flag}/--no-{flag[2:]}" for flag in (self.flag, *aliases)]
            option = typer.Option(*pairs, help=_escaped(self.help))
            return inspect.Parameter(self.name, KEYWORD, default=declared.default, annotation=Annotated[bool | None, option])
        default: str | None
        if declared.default_factory is not MISSING:
            default = json.dumps(declared.default_factory())
        else:
            default = None if declared.default is None else str(declared.default)
        option = typer.Option(self.flag, *aliases, help=_escaped(self.help), metavar=self.metavar())
        return inspect.Parameter(self.name, KEYWORD, default=default, annotation=Annotated[str | None, option])

    def metavar(self) -> str:
        """``[sage|gcn|gin]`` for choices, else the type with its range: ``<int> 1..4,096``, ``<float> >=0``;
        a number or a choice: ``<int> 1..4,096|auto``; the field's own where it declares one (``--conv LAYER``)."""
        if field_of(self.kind, self.field)[0].metadata.get("metavar"):
            return field_of(self.kind, self.field)[0].metadata["metavar"]
        kinds = [option for option in _options(self.hint) if option is not type(None) and typing.get_origin(option) is not Literal]
        if not kinds:
            return "[" + "|".join(self.choices) + "]"
        metadata = field_of(self.kind, self.field)[0].metadata
        low, high = metadata.get("low"), metadata.get("high")
        shown = " or ".join(_TYPE_NAMES.get(typing.get_origin(kind) or kind, "<str>") for kind in kinds)
        if low is not None and high is not None:
            shown += f" {_number(low)}..{_number(high)}"
        elif low is not None:
            shown += f" >{'' if metadata.get('open_low') else '='}{_number(low)}"
        return "|".join((shown, *self.choices))

    def text(self, value: bool | str) -> Any:
        """The option's value as typed, a JSON object read for a mapping setting."""
        if isinstance(value, str) and dict in (typing.get_origin(kind) for kind in _options(self.hint)):
            return _json_object(value, self.flag)
        return value


def takes_settings(*names: str) -> Callable[[Callable], Callable]:
    """Give a command an option for each run setting named (by its option name, as
    :func:`graphtransfer.config.cli_keys` lists them), in place of its ``settings`` parameter: the
    options typed on the command line, dotted key -> checked value."""
    keys = cli_keys()
    unknown = [name for name in names if name not in keys]
    if unknown:
        raise ValueError(f"no setting has the option name {', '.join(unknown)}")
    options = {_option(keys[name], name): keys[name] for name in names}

    def settings(ctx: typer.Context, values: dict[str, Any]) -> dict[str, Any]:
        layer = {}
        for option, key in options.items():
            if _given(ctx, option.name):
                layer[key] = check_setting(f"{key} ({option.flag})", key, option.text(values[option.name]))
        return layer

    return _adding(list(options), "settings", settings)


def takes_params(kind: type, param: str, *names: str) -> Callable[[Callable], Callable]:
    """Give a command an option for each field of the parameter object ``kind`` named (by option
    name: ``decoding`` for ``Decoding.method``), in place of its parameter ``param``: ``kind`` built
    from the options typed, checked by its own constructor; fields not named keep their defaults."""
    by_name = {(f.metadata["cli"] or f.name): f.name for f in fields(kind)}
    options = [FieldOption(kind, by_name[name], name) for name in names]

    def build(ctx: typer.Context, values: dict[str, Any]) -> Any:
        typed = [option for option in options if _given(ctx, option.name)]
        _TYPED[kind] = [option.field for option in typed]
        return kind(**{option.field: check_field(option.where, kind, option.field, values[option.name]) for option in typed})

    return _adding(options, param, build)


_TYPED: dict[type, list[str]] = {}
"""per parameter object class, the fields whose options the command running now was given"""


def typed_fields(kind: type) -> list[str]:
    """The fields of the parameter object ``kind`` (made by :func:`takes_params` for the command
    running now) whose options were given, not left at their defaults: those the command must use."""
    return list(_TYPED.get(kind, []))


def _adding(options: list[FieldOption], param: str, make: Callable[[typer.Context, dict[str, Any]], Any]) -> Callable[[Callable], Callable]:
    """The decorator that puts ``options`` in ``param``'s place in a command's signature and, on a
    call, passes ``make(ctx, their values)`` as ``param``."""

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command, eval_str=True)
        own = [parameter for parameter in signature.parameters.values() if parameter.name != param]
        contexts = [parameter.name for parameter in own if parameter.annotation is typer.Context]
        if not contexts:  # the command does not take the context: Typer passes it to this wrapper alone
            own.insert(0, inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context))

        @functools.wraps(command)
        def with_options(**values: Any) -> Any:
            mine = {option.name: values.pop(option.name) for option in options}
            ctx = values[contexts[0]] if contexts else values.pop("ctx")
            return command(**values, **{param: make(ctx, mine)})

        required = [parameter for parameter in own if parameter.default is parameter.empty]
        rest = [parameter.replace(kind=KEYWORD) for parameter in own if parameter.default is not parameter.empty]
        parameters = [*required, *(option.parameter() for option in options), *rest]
        with_options.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        with_options.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
        return with_options

    return decorate


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether the option was given (on the command line, or by its environment variable), not left at its default."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def _option(dotted: str, name: str) -> FieldOption:
    section, _, field = dotted.rpartition(".")
    return FieldOption(SECTIONS[section] if section else RunConfig, field, name)


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
