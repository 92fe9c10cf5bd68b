"""The options made from the schema (graphtransfer.cli.options): every config-backed option of
train and tune, and every option of a parameter object (Decoding, Runtime, Search), shows its
field's help, choices, range and default, and is checked by the schema."""

import typing
from dataclasses import MISSING, fields

import pytest
import typer.main
import yaml
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.config import Decoding, Runtime, Search, cli_keys, declaration, field_of

runner = CliRunner()
COMMANDS = typer.main.get_command(app).commands


def _choices(hint) -> list[str]:
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, type(int | None)) else (hint,)
    return [value for option in options if typing.get_origin(option) is typing.Literal for value in typing.get_args(option) if value]


@pytest.mark.parametrize("command", ["train", "tune"])
def test_every_config_backed_option_shows_the_schemas_help_choices_and_default(command):
    """A hand-written option under a setting's name, whose help or choices drift from the schema's, fails here."""
    keys = cli_keys()
    objects = {field.name for kind in PARAMETER_OBJECTS.get(command, ()) for field in fields(kind)}  # checked below
    backed = [param for param in COMMANDS[command].params if param.name in keys and param.name not in objects]
    assert len(backed) >= (20 if command == "train" else 9)
    for param in backed:
        declared, hint = declaration(keys[param.name])
        shown = param.help.replace("\\[", "[")
        if param.name in ("max_nodes_per_batch", "mixed_precision"):  # predict's, eval's and transfer's runtime options too
            continue
        assert shown == declared.metadata["help"], f"{command} --{param.name}: help differs from the schema's"
        choices = _choices(hint)
        if choices and declared.metadata.get("metavar"):  # a name for the choices (--conv LAYER): the help lists them
            assert param.metavar == declared.metadata["metavar"] and all(choice in shown for choice in choices), param.name
        elif choices:
            assert param.metavar == "[" + "|".join(choices) + "]", f"{command} --{param.name}: choices differ from the schema's"
        low, high = declared.metadata["low"], declared.metadata["high"]
        if low is not None and high is not None:
            shown_range = [float(end) for end in param.metavar.rpartition(" ")[2].replace(",", "").split("..")]
            assert shown_range == [low, high], f"{command} --{param.name}: range differs from the schema's"
        if declared.default is not MISSING:
            expected = declared.default if hint is bool or declared.default is None else str(declared.default)
            assert param.default == expected, f"{command} --{param.name}: default differs from the schema's"


OWN_MEANING = {("eval", "deterministic"), ("predict", "ray_address"), ("eval", "ray_address"), ("transfer", "seed")}
"""options named as a Decoding or Runtime field that mean something else there (eval reports both ways; the Ray
cluster of a folder's workers; transfer's seed of its evaluations and fine-tuning), declared by hand"""


PARAMETER_OBJECTS = {"predict": (Decoding, Runtime), "eval": (Decoding, Runtime), "transfer": (Decoding, Runtime), "tune": (Search,)}
"""the parameter objects whose fields each command takes as options"""


@pytest.mark.parametrize("command", list(PARAMETER_OBJECTS))
def test_every_parameter_object_option_shows_its_fields_help_choices_range_and_default(command):
    """As above for the parameter objects: a hand-written --threads, --rollouts or --n-jobs whose help drifts fails here."""
    kinds = PARAMETER_OBJECTS[command]
    declared = {(f.metadata["cli"] or f.name): (kind, f.name) for kind in kinds for f in fields(kind)}
    backed = [param for param in COMMANDS[command].params if param.name in declared and (command, param.name) not in OWN_MEANING]
    required = {"threads", "max_nodes_per_batch", "mixed_precision", "max_passes"} if Runtime in kinds else set(declared)
    assert required <= {param.name for param in backed}
    for param in backed:
        field, hint = field_of(*declared[param.name])
        assert param.help.replace("\\[", "[") == field.metadata["help"], f"{command} --{param.name}: help differs from the schema's"
        if _choices(hint):
            assert param.metavar.rstrip("]").endswith("|".join(_choices(hint))), f"{command} --{param.name}: choices differ"
        low, high, open_low = field.metadata["low"], field.metadata["high"], field.metadata["open_low"]
        if low is not None and high is None:
            assert param.metavar.endswith(f" >{'' if open_low else '='}{low:g}"), f"{command} --{param.name}: range differs"
        expected = field.default if field.default is None or isinstance(field.default, bool) else str(field.default)
        assert param.default == expected, f"{command} --{param.name}: default differs from the schema's"


def test_help_shows_the_choices_and_ranges():
    shown = " ".join(runner.invoke(app, ["train", "--help"], env={"COLUMNS": "300"}).output.split())
    for text in (
        "--conv LAYER",
        "gin, gatv2, gine",
        "[ppo|a2c|dqn]",
        "[auto|cpu|cuda]",
        "[auto|batched|dummy|subproc|ray]",
        "<int> 1..4,096",
        "[default: 30000]",
    ):
        assert text in shown


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["train", "--n-envs", "0"], "error: ppo.n_envs (--n-envs): 0 must be at least 1"),
        (["train", "--layers", "99"], "error: model.num_layers (--num-layers): 99 must be at most 32"),
        (
            ["train", "--conv", "gat"],
            "error: model.conv (--conv): 'gat' is not one of sage, gcn, gin, gatv2, gine, transformer, "
            "nor a layer of yours as package.module:Class",
        ),
        (["train", "--steps", "lots"], "error: ppo.total_timesteps (--total-timesteps): expected an integer, got 'lots'"),
        (["train", "--target-kl", "nan"], "error: ppo.target_kl (--target-kl): expected a number, got 'nan'"),
        (["train", "--horizon", "2.5"], "error: horizon (--horizon): expected an integer, got '2.5'"),
        (["train", "--env-kwargs", "[1]"], "error: --env-kwargs '[1]' is not a JSON object; pass an object such as '{\"horizon\": 16}'"),
        (["tune", "--seed", "-1"], "error: ppo.seed (--seed): -1 must be 0 or more"),
        (["tune", "--eval-every", "-5"], "error: log.eval_every (--eval-every): -5 must be 0 or more"),
        (["tune", "--n-jobs", "two"], "error: Search.n_jobs (--n-jobs): expected an integer, got 'two'"),
        (["tune", "--sampler", "grid"], "error: Search.sampler (--sampler): 'grid' is not one of tpe, random, cmaes"),
        (["tune", "--timeout", "nan"], "error: Search.timeout (--timeout): expected a number, got 'nan'"),
        (["tune", "--n-trials", "-1"], "error: Search.n_trials (--n-trials): -1 must be 0 or more"),
    ],
)
def test_a_bad_option_is_one_line_from_the_schema_and_nothing_runs(args, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert result.stderr == message + "\n"
    assert not list(tmp_path.iterdir())


def test_typed_options_are_one_layer_and_those_left_out_keep_the_config_file(tmp_path):
    file = tmp_path / "c.yaml"
    file.write_text("ppo:\n  n_envs: 3\n  seed: 9\nlog:\n  stdout: true\n")
    typed = ["--steps", "1e5", "--conv", "gcn", "--no-verbose", "--env-kwargs", '{"horizon": 4}', "--seed", "7"]
    result = runner.invoke(app, ["train", "--config", str(file), *typed, "--print-config"])
    assert result.exit_code == 0, result.output
    config = yaml.safe_load(result.stdout)
    assert (config["ppo"]["total_timesteps"], config["model"]["conv"], config["env_kwargs"]) == (100_000, "gcn", {"horizon": 4})
    assert (config["log"]["stdout"], config["ppo"]["seed"], config["ppo"]["n_envs"]) == (False, 7, 3)
