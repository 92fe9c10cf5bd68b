"""Run settings from YAML: packaged per-task files, --config, options, --set, and every bad input
as one line naming the key and where it came from. No training here (see test_train_logs.py)."""

import pytest
import yaml
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.config import PPOConfig, RunConfig, ppo_for_task, schedule, task_defaults
from graphtransfer.config.layers import check_layer, resolve
from graphtransfer.tasks import TASKS
from graphtransfer.training.model import sb3_kwargs

runner = CliRunner()


def resolved(*args: str) -> dict:
    result = runner.invoke(app, ["train", *args, "--print-config"])
    assert result.exit_code == 0, result.output
    return yaml.safe_load(result.stdout)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_task_ships_a_valid_hyperparams_file(task):
    data = task_defaults(task)
    assert isinstance(data, dict), f"graphtransfer/hyperparams/{task}.yml is missing or not a mapping"
    check_layer(f"{task}.yml", data)


def test_the_packaged_maxcut_file_is_what_ppo_for_task_and_the_cli_use():
    assert ppo_for_task("maxcut").gamma == 0.5 and ppo_for_task("maxcut").gae_lambda == 0.5
    assert ppo_for_task("mis") == PPOConfig()
    assert resolved("--task", "maxcut")["ppo"]["gamma"] == 0.5
    assert resolved("--task", "mis")["ppo"]["gamma"] == PPOConfig().gamma
    assert resolved("--env", "graphtransfer/MaxCut-v0")["ppo"]["gamma"] == PPOConfig().gamma  # a user env gets no task file


def test_layers_apply_in_order_file_then_typed_options_then_set(tmp_path):
    file = tmp_path / "run.yml"
    file.write_text("task: maxcut\nmodel: {width: 32, num_layers: 2}\nppo: {n_envs: 4, gamma: 0.9, learning_rate: lin_1e-3}\n")
    config = resolved("--config", str(file), "--n-envs", "2", "--set", "model.width=128", "--set", "ppo.target_kl=0.02")
    assert config["task"] == "maxcut"
    assert config["model"] == {**config["model"], "width": 128, "num_layers": 2}
    assert config["ppo"]["n_envs"] == 2  # typed option over the file
    assert config["ppo"]["gamma"] == 0.9  # the file over the task's packaged file
    assert config["ppo"]["n_steps"] == PPOConfig().n_steps  # an option's default does not override the file
    assert config["ppo"]["learning_rate"] == "lin_1e-3" and config["ppo"]["target_kl"] == 0.02


def test_set_values_are_yaml_scalars():
    config = resolved(
        "--set", "ppo.learning_rate=3e-4", "--set", "log.tensorboard=true", "--set", "horizon=null", "--set", "ppo.total_timesteps=1e5"
    )
    assert config["ppo"]["learning_rate"] == 3e-4 and isinstance(config["ppo"]["learning_rate"], float)
    assert config["log"]["tensorboard"] is True and config["horizon"] is None
    assert config["ppo"]["total_timesteps"] == 100_000


def test_the_printed_config_reads_back_to_the_same_config(tmp_path):
    text = runner.invoke(app, ["train", "--task", "mvc", "--set", "ppo.clip_range=lin_0.3", "--print-config"]).stdout
    (tmp_path / "c.yaml").write_text(text)
    again = runner.invoke(app, ["train", "--config", str(tmp_path / "c.yaml"), "--print-config"]).stdout
    assert again == text
    assert resolve([("c.yaml", check_layer("c.yaml", yaml.safe_load(text)))]) == RunConfig.from_dict(yaml.safe_load(text))


def test_a_linear_schedule_decays_to_zero_and_reaches_sb3():
    assert schedule("lin_1e-3")(1.0) == pytest.approx(1e-3) and schedule("lin_1e-3")(0.25) == pytest.approx(2.5e-4)
    kwargs = sb3_kwargs(PPOConfig(learning_rate="lin_1e-3", clip_range=0.1))
    assert kwargs["learning_rate"](0.5) == pytest.approx(5e-4) and kwargs["clip_range"] == 0.1


BAD_FILES = [
    ("ppo:\n  gama: 0.9\n", "unknown key ppo.gama; ppo has total_timesteps,"),
    ("modle:\n  width: 3\n", "unknown key modle; known keys are algo, dqn, env, env_kwargs,"),
    ("ppo:\n  gamma: high\n", "ppo.gamma: expected a number, got 'high'"),
    ("ppo:\n  n_envs: 2.5\n", "ppo.n_envs: expected an integer, got 2.5"),
    ("ppo:\n  n_envs: 0\n", "ppo.n_envs: 0 must be at least 1"),
    (
        "ppo:\n  learning_rate: linear_3e-4\n",
        "ppo.learning_rate: 'linear_3e-4' is not a number or a schedule; write e.g. 3e-4",
    ),
    ("ppo:\n  learning_rate: lin_0\n", "ppo.learning_rate: 'lin_0' must start above 0"),
    ("ppo:\n  vec_env: threads\n", "ppo.vec_env: 'threads' is not one of auto, batched, dummy, subproc, ray"),
    ("log:\n  tensorboard: maybe\n", "log.tensorboard: expected true or false, got 'maybe'"),
    ("model: 64\n", "model: expected a mapping of model settings, found 64"),
    ("- task: mis\n", "expected a mapping of settings (task: mis, ppo: {...}), found a list"),
    ("ppo:\n  gamma: [0.9\n", ", line 3: not valid YAML"),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES, ids=[m.split(":")[0][:30] for _, m in BAD_FILES])
def test_a_bad_config_file_is_one_line_naming_the_file_and_key(tmp_path, text, message):
    file = tmp_path / "bad.yml"
    file.write_text(text)
    result = runner.invoke(app, ["train", "--config", str(file), "--out", str(tmp_path / "m")])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {file}") and message in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("ppo.gamma", "error: --set 'ppo.gamma': expected KEY=VALUE with a dotted key, e.g. --set ppo.gamma=0.995\n"),
        ("ppo.gamma=abc", "error: --set ppo.gamma=abc: ppo.gamma: expected a number, got 'abc'\n"),
        (
            "model.widht=3",
            "error: --set model.widht=3: unknown key model.widht; model has conv, num_layers, width, aggr, head_width, project_input\n",
        ),
        ("ppo.clip_range=lin_", "error: --set ppo.clip_range=lin_: ppo.clip_range: 'lin_' is not a number or a schedule; write e.g. "),
        (
            "model.conv=gat",
            "error: --set model.conv=gat: model.conv: 'gat' is not one of sage, gcn, gin, gatv2, gine, transformer, "
            "nor a layer of yours as package.module:Class\n",
        ),
    ],
)
def test_a_bad_set_is_one_line_naming_the_key(item, message):
    result = runner.invoke(app, ["train", "--set", item])
    assert result.exit_code == 2
    assert result.stderr.startswith(message) and result.stderr.count("\n") == 1, result.stderr


def test_a_missing_config_file_is_named(tmp_path):
    result = runner.invoke(app, ["train", "--config", str(tmp_path / "nope.yml")])
    assert result.exit_code == 2
    assert result.stderr == f"error: --config {tmp_path / 'nope.yml'}: no such file; pass a YAML file such as a run folder's config.yaml\n"


def test_yaml_tags_that_would_run_code_are_refused(tmp_path):
    file = tmp_path / "evil.yml"
    file.write_text(f'ppo: !!python/object/apply:os.system ["touch {tmp_path / "pwned"}"]\n')
    result = runner.invoke(app, ["train", "--config", str(file)])
    assert result.exit_code == 2 and "not valid YAML" in result.stderr
    assert not (tmp_path / "pwned").exists()


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_one_line(tmp_path):
    result = runner.invoke(app, ["train", "--device", "cuda", "--out", str(tmp_path / "m")])
    assert result.exit_code == 2
    assert (
        result.stderr.startswith("error: device cuda: torch ")
        and "sees no CUDA GPU on this machine; use --device cpu or auto\n" in result.stderr
    )
    assert not (tmp_path / "m").exists()


def test_tensorboard_without_the_package_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "tensorboard", None)  # as if it were not installed
    result = runner.invoke(app, ["train", "--tensorboard", "--out", str(tmp_path / "m")])
    assert result.exit_code == 2
    assert result.stderr == "error: TensorBoard logging needs the tensorboard package: pip install 'graphtransfer[tensorboard]'\n"


def test_eval_every_needs_eval_graphs(tmp_path):
    result = runner.invoke(app, ["train", "--eval-every", "100", "--out", str(tmp_path / "m")])
    assert result.exit_code == 2
    assert result.stderr == "error: log.eval_every=100 needs held-out graphs to evaluate on: add --eval-graphs SET\n"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (lambda: RunConfig(ppo=PPOConfig(n_steps=0)), "RunConfig: ppo.n_steps: 0 must be at least 1"),
        (lambda: RunConfig(ppo=PPOConfig(learning_rate="fast")), "RunConfig: ppo.learning_rate: 'fast' is not a number"),
        (lambda: RunConfig(algo="sac"), "RunConfig: algo: 'sac' is not one of ppo, a2c, dqn"),
        (lambda: RunConfig(horizon=float("nan")), "RunConfig: horizon: expected an integer or null"),
    ],
)
def test_a_config_built_in_python_is_checked_before_training(tmp_path, config, message):
    """The Python API validates like YAML and --set do, before any graph is loaded or folder made."""
    from graphtransfer import train
    from graphtransfer.errors import UsageError

    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        train(config(), tmp_path / "run")
    assert not (tmp_path / "run").exists()


# A module whose import leaves a mark: whether a command imported it is then a file on disk.
MARKING_MODULE = """
from pathlib import Path

Path("imported").touch()

from graphtransfer.tasks.mis.env import MISEnv as Env
"""


@pytest.mark.parametrize(
    "text",
    ["env: marking:Env\n", "env: os:system\nenv_kwargs:\n  command: touch imported\n", "env: marking:Env\ntask: mis\nppo:\n  n_envs: 1\n"],
)
@pytest.mark.parametrize("command", [["train"], ["train", "--print-config"], ["tune", "--n-trials", "1"]])
def test_a_config_file_never_decides_what_code_runs(tmp_path, monkeypatch, text, command):
    """A --config file naming a user env imports nothing (its top-level code would run before any
    check); the env is imported only when the user names it on the command line."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "marking.py").write_text(MARKING_MODULE)
    (tmp_path / "c.yaml").write_text(text)
    result = runner.invoke(app, [*command, "--config", "c.yaml", "--steps", "64"])
    assert result.exit_code == 2, result.output
    named = yaml.safe_load(text)["env"]
    assert result.stderr == (
        f"error: --config c.yaml: names the env {named!r}, whose code would be imported and run; a config file never decides "
        f"what code runs: pass --env {named} on the command line if you trust it\n"
    )
    assert not (tmp_path / "imported").exists()


def test_a_config_files_env_is_used_when_the_command_line_names_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "marking.py").write_text(MARKING_MODULE)
    (tmp_path / "c.yaml").write_text("env: marking:Env\nppo:\n  n_envs: 3\n")
    result = runner.invoke(app, ["train", "--config", "c.yaml", "--env", "marking:Env", "--print-config"])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout)["ppo"]["n_envs"] == 3  # the file's other settings stand
