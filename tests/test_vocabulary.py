"""One option vocabulary: ``export --model`` and ``plot --model``; ``--device``, ``--seed`` and
``--threads`` wherever they mean something; every setting named alike as a flag, a YAML key, a
Python field and SB3's argument, its older flags kept as aliases; ``--graphs`` on every command;
an unknown option as one ``error:`` line with the closest option."""

import inspect

import pytest
import torch
import typer.main
import yaml
from stable_baselines3 import DQN, PPO
from typer.testing import CliRunner

import graphtransfer.errors
from graphtransfer.cli import app
from graphtransfer.config import RunConfig, cli_keys, declaration, option_aliases
from graphtransfer.graphs import barabasi_albert, write_edge_list
from graphtransfer.nn.devices import resolve_device

runner = CliRunner()
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without a CUDA GPU")


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.output
    return lines[0]


def test_export_and_plot_take_the_model_folder_as_model_only(tiny_model, tmp_path):
    model = str(tiny_model("mis"))
    exported = runner.invoke(app, ["export", model, "--sb3", str(tmp_path / "old.zip")])
    assert exported.exit_code == 2 and not (tmp_path / "old.zip").exists()
    plotted = runner.invoke(app, ["plot", "--out", str(tmp_path / "old.png")])
    assert one_error_line(plotted) == "error: plot: name the model folder with --model, e.g. graphtransfer plot --model runs/mis/small"
    new = runner.invoke(app, ["plot", "--model", model, "--out", str(tmp_path / "new.png")])
    assert new.exit_code == 0 and new.stderr == "" and (tmp_path / "new.png").is_file()


@pytest.mark.parametrize("command", [["export", "--sb3", "m.zip"], ["plot", "--out", "m.png"]])
def test_the_model_folder_named_twice_or_not_at_all_is_refused(command, tiny_model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = str(tiny_model("mis"))
    twice = runner.invoke(app, [*command, "--model", model, model])
    assert twice.exit_code == 2 and "unexpected extra argument" in twice.output
    missing = one_error_line(runner.invoke(app, command))
    assert missing == f"error: {command[0]}: name the model folder with --model, e.g. graphtransfer {command[0]} --model runs/mis/small"
    assert list(tmp_path.iterdir()) == []  # nothing written, nothing created


def predict(model, graph, out, *extra):
    return runner.invoke(app, ["predict", "--model", str(model), "--graph", str(graph), "--out", str(out), "--rollouts", "1", *extra])


def test_predict_and_eval_run_on_the_device_named(tiny_model, tmp_path):
    write_edge_list(barabasi_albert(300, 3, 1), tmp_path / "g.txt")
    model = tiny_model("mis")
    solutions = []
    for device in ([], ["--device", "cpu"], ["--device", "auto"]):  # auto: cpu on a machine without a GPU
        out = tmp_path / f"s{len(solutions)}.csv"
        result = predict(model, tmp_path / "g.txt", out, *device)
        assert result.exit_code == 0, result.output
        solutions.append(out.read_text())
    assert solutions[0] == solutions[1] == solutions[2]
    evaluated = runner.invoke(
        app, ["eval", "--model", str(model), "--graphs", str(tmp_path / "g.txt"), "--rollouts", "1", "--device", "cpu"]
    )
    assert evaluated.exit_code == 0, evaluated.output
    assert "g.txt" in evaluated.stdout


@no_cuda
def test_auto_is_the_cpu_without_a_gpu():
    assert resolve_device("auto") == "cpu" and resolve_device("cpu") == "cpu"


@no_cuda
def test_cuda_without_a_gpu_is_refused_before_anything_is_written(tiny_model, tmp_path):
    write_edge_list(barabasi_albert(50, 2, 1), tmp_path / "g.txt")
    expected = f"error: device cuda: torch {torch.__version__} sees no CUDA GPU on this machine; use --device cpu or auto"
    assert one_error_line(predict(tiny_model("mis"), tmp_path / "g.txt", tmp_path / "s.csv", "--device", "cuda")) == expected
    command = ["eval", "--model", str(tiny_model("mis")), "--graphs", str(tmp_path / "g.txt"), "--json", str(tmp_path / "e.json")]
    assert one_error_line(runner.invoke(app, [*command, "--device", "cuda"])) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.txt"]


@pytest.mark.parametrize("device", ["gpu", "CUDA", "1", ""])
def test_a_device_that_is_none_of_the_three_is_one_line(device, tiny_model, tmp_path):
    """predict, eval and transfer (below) check --device as train does, from the schema."""
    expected = f"error: Runtime.device (--device): {device!r} is not one of auto, cpu, cuda"
    assert one_error_line(predict(tiny_model("mis"), "small", tmp_path / "s.csv", "--device", device)) == expected
    assert not (tmp_path / "s.csv").exists()
    evaluated = runner.invoke(app, ["eval", "--model", str(tiny_model("mis")), "--graphs", "small", "--device", device])
    assert one_error_line(evaluated) == expected


def transfer(model, graph, out, *extra):
    command = ["transfer", "--src", str(model), "--dst", str(graph), "--out", str(out), "--threads", "1", "--seed", "3", *extra]
    return runner.invoke(app, command)


def test_transfer_evaluates_and_fine_tunes_on_the_device_named(tiny_model, tmp_path):
    """auto: cuda on a machine with a GPU (the zero-shot rows, the fine-tuning and the rows after it), else cpu."""
    write_edge_list(barabasi_albert(40, 2, 1), tmp_path / "g.txt")
    options = ["--device", "auto", "--finetune-steps", "4", "--max-passes", "2"]
    result = transfer(tiny_model("mis"), tmp_path / "g.txt", tmp_path / "m", *options)
    assert result.exit_code == 0, result.output
    assert "fine-tuned 4 steps" in result.stdout and result.stdout.count("g.txt") == 2
    assert next((tmp_path / "m").glob("model-*.safetensors")).stat().st_size > 0


def test_fine_tuning_takes_the_device_given_not_the_source_runs():
    from graphtransfer.config import RunConfig, Runtime
    from graphtransfer.graphs import load_graphs
    from graphtransfer.training.loop import finetune_config

    trained_on_cuda = RunConfig(runtime=Runtime(device="cuda"))
    tuned = finetune_config(trained_on_cuda, load_graphs("small"), 8, Runtime(device="cpu"))
    assert tuned.runtime.device == "cpu"


@no_cuda
def test_transfer_on_cuda_without_a_gpu_is_refused_before_anything_is_read_or_written(tiny_model, tmp_path):
    import graphtransfer

    write_edge_list(barabasi_albert(50, 2, 1), tmp_path / "g.txt")
    expected = f"error: device cuda: torch {torch.__version__} sees no CUDA GPU on this machine; use --device cpu or auto"
    for extra in ([], ["--finetune-steps", "8"], ["--adapt", "5"]):
        assert one_error_line(transfer(tiny_model("mis"), tmp_path / "g.txt", tmp_path / "m", "--device", "cuda", *extra)) == expected
    with pytest.raises(graphtransfer.errors.UsageError, match="sees no CUDA GPU"):
        graphtransfer.transfer(tiny_model("mis"), tmp_path / "no-such-graph.txt", folder=tmp_path / "m", device="cuda")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.txt"]


@pytest.mark.parametrize("device", ["gpu", "CUDA", ""])
def test_transfer_on_a_device_that_is_none_of_the_three_is_one_line(device, tiny_model, tmp_path):
    line = one_error_line(transfer(tiny_model("mis"), "small", tmp_path / "m", "--device", device))
    assert line == f"error: Runtime.device (--device): {device!r} is not one of auto, cpu, cuda"
    assert not (tmp_path / "m").exists()


# One name per setting: the command line, the YAML files and Python name a setting alike.

COMMANDS = typer.main.get_command(app).commands
SETTINGS = list(cli_keys().values())
"""every declared setting of a RunConfig, by dotted key (``ppo.total_timesteps``)"""
ALIASES = {
    "ppo.total_timesteps": ("--steps",),
    "ppo.n_epochs": ("--epochs",),
    "model.num_layers": ("--layers",),
    "log.stdout": ("--verbose",),
}
"""the flags these settings had before they were named as their keys: they still work, so they never disappear unnoticed"""
SB3_NAMES = {
    "ppo": {*inspect.signature(PPO.__init__).parameters, *inspect.signature(PPO.learn).parameters, "n_envs"},
    "dqn": set(inspect.signature(DQN.__init__).parameters),
}
"""what SB3 calls its settings: PPO's and DQN's constructor arguments, learn's total_timesteps, and n_envs (make_vec_env's and
rl-zoo3's)"""


def flag_of(dotted: str) -> str:
    return "--" + dotted.rpartition(".")[2].replace("_", "-")


def options_setting(command: str, dotted: str) -> list:
    """The options of ``command`` that set ``dotted``: train's and tune's settings, and the runtime options of the others."""
    section, _, name = dotted.rpartition(".")
    takes = cli_keys() if command in ("train", "tune") else {name: dotted} if section == "runtime" else {}
    return [param for param in COMMANDS[command].params if takes.get(param.name) == dotted]


@pytest.mark.parametrize("dotted", SETTINGS)
def test_every_setting_has_one_name_as_flag_yaml_key_python_field_and_sb3_argument(dotted):
    section, _, name = dotted.rpartition(".")
    config = RunConfig()
    holder = getattr(config, section) if section else config
    assert hasattr(holder, name), f"{dotted}: no such field in Python"
    assert name in (config.to_dict()[section] if section else config.to_dict()), f"{dotted}: no such YAML key"
    if section in SB3_NAMES:
        assert name in SB3_NAMES[section], f"{dotted}: SB3 names no such setting; name it as SB3 does"
    shown = [(command, param.opts[0]) for command in COMMANDS for param in options_setting(command, dotted)]
    assert all(flag == flag_of(dotted) for _, flag in shown), f"{dotted}: options named otherwise: {shown}"
    field = declaration(dotted)[0]
    assert not field.metadata["cli"], f"{dotted}: a setting's option is named as its key; an older name is an alias"
    assert option_aliases(*_kind_and_name(dotted)) == ALIASES.get(dotted, ())


def _kind_and_name(dotted: str):
    from graphtransfer.config import SECTIONS

    section, _, name = dotted.rpartition(".")
    return (SECTIONS[section] if section else RunConfig), name


def test_the_runtime_device_is_an_sb3_argument_too():
    assert {"device", "seed", "verbose"} <= SB3_NAMES["ppo"] and "device" in cli_keys() and "seed" in cli_keys()


@pytest.mark.parametrize(
    ("primary", "alias", "value"),
    [("--total-timesteps", "--steps", "1e5"), ("--n-epochs", "--epochs", "7"), ("--num-layers", "--layers", "5")],
)
def test_every_alias_parses_to_the_same_value_as_its_primary_flag(primary, alias, value):
    configs = []
    for flag in (primary, alias):
        result = runner.invoke(app, ["train", flag, value, "--print-config"])
        assert result.exit_code == 0, result.output
        configs.append(yaml.safe_load(result.stdout))
    assert configs[0] == configs[1] != RunConfig().to_dict()
    help_text = " ".join(runner.invoke(app, ["train", "--help"], env={"COLUMNS": "200"}).output.split())
    assert f"{primary},{alias}" in help_text  # --help shows the primary name with its alias


def test_the_verbose_alias_parses_as_stdout_both_ways():
    printed = {}
    for flags in (["--stdout"], ["--verbose"], ["--verbose", "--no-stdout"], ["--stdout", "--no-verbose"]):
        result = runner.invoke(app, ["train", *flags, "--print-config"])
        assert result.exit_code == 0, result.output
        printed[" ".join(flags)] = yaml.safe_load(result.stdout)["log"]["stdout"]
    assert printed == {"--stdout": True, "--verbose": True, "--verbose --no-stdout": False, "--stdout --no-verbose": False}


GRAPH_INPUT = {"train": "--graphs", "tune": "--graphs", "predict": "--graph", "eval": "--graphs", "transfer": "--dst", "export": "--graphs"}
"""each command's graph input: --graphs everywhere, the older names kept as aliases"""


@pytest.mark.parametrize("command", list(GRAPH_INPUT))
def test_every_command_takes_its_graphs_as_graphs_and_its_old_name_still_works(command):
    (param,) = [param for param in COMMANDS[command].params if "--graphs" in param.opts]
    assert param.opts[0] == "--graphs" and GRAPH_INPUT[command] in param.opts


def test_predict_by_graph_and_by_graphs_and_transfer_by_dst_and_by_graphs_write_the_same(tiny_model, tmp_path):
    write_edge_list(barabasi_albert(60, 2, 1), tmp_path / "g.txt")
    model = tiny_model("mis")
    outputs = []
    for flag in ("--graphs", "--graph"):
        command = ["predict", "--model", str(model), flag, str(tmp_path / "g.txt"), "--out", str(tmp_path / f"s{flag}.csv")]
        result = runner.invoke(app, [*command, "--rollouts", "1"])
        assert result.exit_code == 0, result.output
        outputs.append((tmp_path / f"s{flag}.csv").read_text())
    assert outputs[0] == outputs[1]
    for flag in ("--graphs", "--dst"):
        command = ["transfer", "--src", str(model), flag, str(tmp_path / "g.txt"), "--out", str(tmp_path / f"m{flag}"), "--max-passes", "2"]
        result = runner.invoke(app, [*command, "--threads", "1"])
        assert result.exit_code == 0, result.output
        assert "g.txt" in result.stdout


SHARED = {
    "--seed": ("train", "tune", "predict", "eval", "transfer"),
    "--threads": ("train", "tune", "predict", "eval", "transfer", "export"),
    "--device": ("train", "tune", "predict", "eval", "transfer"),
}
"""where each runtime option means something; everywhere it is the same option"""


@pytest.mark.parametrize("flag", list(SHARED))
def test_seed_threads_and_device_are_taken_wherever_they_mean_something(flag):
    for command in SHARED[flag]:
        (param,) = [param for param in COMMANDS[command].params if flag in param.opts]
        if flag == "--device":
            assert param.default == "cpu", f"{command} --device defaults to {param.default}"
            assert param.metavar == "[auto|cpu|cuda]"
    assert RunConfig().runtime.device == "cpu"  # Python's default is the command line's


def test_eval_takes_a_seed_for_its_rollouts(tiny_model, tmp_path, monkeypatch):
    from graphtransfer.solve import parallel

    seen = []

    def evaluate_with(model, graphs, decoding, *rest):
        seen.append(decoding.seed)
        raise graphtransfer.errors.GraphTransferError("stopped after reading the options")

    model = str(tiny_model("mis"))
    bad = runner.invoke(app, ["eval", "--model", model, "--graphs", "small", "--seed", "-1"])
    assert one_error_line(bad) == "error: Decoding.seed (--seed): -1 must be 0 or more"
    monkeypatch.setattr(parallel, "evaluate_with", evaluate_with)
    for seed in (["--seed", "7"], []):
        result = runner.invoke(app, ["eval", "--model", model, "--graphs", "small", *seed])
        assert result.exit_code == 1 and "stopped after reading the options" in result.stderr
    assert seen == [7, 0]


def test_tune_takes_threads_for_each_trial(tmp_path, monkeypatch):
    pytest.importorskip("optuna")
    from graphtransfer.training import tuning

    seen = []

    def tune(config, folder, search, log):
        seen.append((config.runtime.threads, config.runtime.device))
        raise graphtransfer.errors.GraphTransferError("stopped after reading the options")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tuning, "tune", tune)
    result = runner.invoke(app, ["tune", "--graphs", "small", "--threads", "1", "--device", "cpu", "--n-trials", "1"])
    assert result.exit_code == 1 and "stopped after reading the options" in result.stderr
    assert seen == [(1, "cpu")]
    assert one_error_line(runner.invoke(app, ["tune", "--threads", "0"])) == "error: runtime.threads (--threads): 0 must be at least 1"


def test_export_takes_threads(tiny_model, tmp_path):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        result = runner.invoke(app, ["export", "--model", str(tiny_model("mis")), "--sb3", str(tmp_path / "m.zip"), "--threads", "1"])
        assert result.exit_code == 0, result.output
        assert torch.get_num_threads() == 1 and (tmp_path / "m.zip").is_file()
        bad = runner.invoke(app, ["export", "--model", str(tiny_model("mis")), "--sb3", str(tmp_path / "n.zip"), "--threads", "0"])
        assert one_error_line(bad) == "error: Runtime.threads (--threads): 0 must be at least 1"
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["train", "--stepz", "5"], "error: train: no such option --stepz; did you mean --total-timesteps (--steps)?"),
        (["train", "--n-epoch", "5"], "error: train: no such option --n-epoch; did you mean --n-epochs?"),
        (["tune", "--trials", "5"], "error: tune: no such option --trials; did you mean --n-trials?"),
        (["predict", "--grph", "g.txt"], "error: predict: no such option --grph; did you mean --graphs (--graph)?"),
        (["eval", "--sed", "3"], "error: eval: no such option --sed; did you mean --seed?"),
        (["transfer", "--dest", "large"], "error: transfer: no such option --dest; did you mean --graphs (--dst)?"),
        (["export", "--onx", "m.onnx"], "error: export: no such option --onx; did you mean --onnx?"),
        (["train", "--no-verbos"], "error: train: no such option --no-verbos; did you mean --no-stdout (--no-verbose)?"),
        (["graphs", "info", "--formt", "x"], "error: graphs info: no such option --formt; did you mean --format?"),
        (["predict", "--zzzz"], "error: predict: no such option --zzzz; 'graphtransfer predict --help' lists them"),
        (["--bogus"], "error: no such option --bogus; 'graphtransfer --help' lists them"),
        (["trian"], "error: no such command 'trian'. Did you mean 'train', 'transfer'?"),
        (["predict", "--model", "mis"], "error: predict: missing option '--graphs' / '--graph'."),
    ],
)
def test_an_unknown_or_missing_option_is_one_error_line_with_the_closest_match(args, line, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, args)
    assert one_error_line(result) == line and result.stdout == ""
    assert list(tmp_path.iterdir()) == []
