"""Bad models and runs: each is refused with exit code 2 and one line that says what is wrong and
what to do, and nothing handed in is ever unpickled. The messages make tests/BAD_MODELS.md's
"Models and runs" section; ``GRAPHTRANSFER_WRITE_BAD_INPUTS=1`` rewrites it."""

import base64
import hashlib
import io
import json
import os
import pickletools
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from safetensors.torch import save
from typer.testing import CliRunner

from graphtransfer.checkpoint import CONFIG, read_checkpoint, save_checkpoint
from graphtransfer.cli import app
from graphtransfer.config import ModelConfig, RunConfig
from graphtransfer.errors import CheckpointError
from graphtransfer.graphs import barabasi_albert, erdos_renyi, write_npz
from graphtransfer.nn import build_policy
from graphtransfer.tasks.mis.env import MISEnv

runner = CliRunner()
BAD_INPUTS = Path(__file__).with_name("BAD_MODELS.md")
SECTION = "## Models and runs"
MARKER = "PWNED"  # created in the working folder if anything ever unpickled the payload
MODEL = ModelConfig(width=16, head_width=16, num_layers=2)

# Envs "changed since training": one more node feature, and node choice where training had node-wise.
CHANGED_ENVS = """
from graphtransfer.tasks.mis.env import MISEnv
from graphtransfer.tasks.mvc.env import MVCEnv


class WiderMIS(MISEnv):
    num_features = MISEnv.num_features + 1


class PickOne(MVCEnv):
    pass
"""


def payload() -> bytes:
    """A protocol-2 pickle that would call ``builtins.open("PWNED", "w")`` when unpickled, written
    opcode by opcode; nothing in these tests ever unpickles it."""

    def text(value: str) -> bytes:  # BINUNICODE: 4-byte length, UTF-8
        return b"X" + struct.pack("<I", len(value)) + value.encode()

    return b"\x80\x02" + b"cbuiltins\nopen\n" + b"(" + text(MARKER) + text("w") + b"tR."


def sb3_zip() -> bytes:
    """An SB3 save as PPO.save writes it, with the payload where SB3's loader unpickles: the
    ``data`` entry's serialised objects (cloudpickle.loads) and ``policy.pth`` (torch.load)."""
    serialised = {":type:": "<class 'type'>", ":serialized:": base64.b64encode(payload()).decode()}
    data = {"policy_class": serialised, "observation_space": serialised, "n_envs": 1}
    entries = {"data": json.dumps(data), "policy.pth": payload(), "policy.optimizer.pth": payload(), "pytorch_variables.pth": payload()}
    entries["_stable_baselines3_version"] = "2.3.0"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in entries.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0)), content)  # fixed times: the same bytes every run
    return buffer.getvalue()


def save_model(folder: str, config: RunConfig, env=None, info=None) -> Path:
    """A model folder with constant weights, so its file names (their sha256) never change."""
    env = env or MISEnv([erdos_renyi(12, 3.0, 0)])
    policy = build_policy(config.head, config.model, env.observation_space, env.action_space)
    with torch.no_grad():
        for parameter in policy.parameters():
            parameter.fill_(0.01)
    return save_checkpoint(folder, policy, config, info)


def weights_entry(folder: Path) -> dict:
    return json.loads((folder / CONFIG).read_text())["files"]["weights"]


def folder_with_weights(folder: str, content: bytes) -> Path:
    """A model folder whose config.json names ``content`` as its weights, sha256 and all."""
    path = save_model(folder, RunConfig(head="node-wise", model=MODEL))
    meta = json.loads((path / CONFIG).read_text())
    (path / meta["files"]["weights"]["name"]).unlink()
    digest = hashlib.sha256(content).hexdigest()
    meta["files"]["weights"] = {"name": f"model-{digest[:16]}.safetensors", "sha256": digest}
    (path / meta["files"]["weights"]["name"]).write_bytes(content)
    (path / CONFIG).write_text(json.dumps(meta))
    return path


def folder_with_expert(folder: str, content: bytes) -> Path:
    """A model folder whose config.json names ``content`` as its expert ``expert-1``, sha256 and all."""
    path = save_model(folder, RunConfig(head="node-wise", model=MODEL))
    meta = json.loads((path / CONFIG).read_text())
    digest = hashlib.sha256(content).hexdigest()
    meta["files"]["expert-1"] = {"name": f"expert-{digest[:16]}.safetensors", "sha256": digest}
    (path / meta["files"]["expert-1"]["name"]).write_bytes(content)
    (path / CONFIG).write_text(json.dumps(meta))
    return path


def edit_config(folder: str, change) -> None:
    path = save_model(folder, RunConfig(head="node-wise", model=MODEL))
    meta = json.loads((path / CONFIG).read_text())
    change(meta)
    (path / CONFIG).write_text(json.dumps(meta))


def cut_short(folder: str) -> None:
    whole = save_model(folder + "-whole", RunConfig(head="node-wise", model=MODEL))
    folder_with_weights(folder, (whole / weights_entry(whole)["name"]).read_bytes()[:200])


def tamper(folder: str) -> None:
    path = save_model(folder, RunConfig(head="node-wise", model=MODEL))
    weights = path / weights_entry(path)["name"]
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))


def nan_weights(folder: str) -> None:
    """A model folder whose weights, sha256 and all, hold a NaN (a diverged run)."""
    env = MISEnv([erdos_renyi(12, 3.0, 0)])
    policy = build_policy("node-wise", MODEL, env.observation_space, env.action_space)
    with torch.no_grad():
        for parameter in policy.parameters():
            parameter.fill_(0.01)  # constant weights: the same file name every run
        next(policy.parameters()).fill_(float("nan"))
    save_checkpoint(folder, policy, RunConfig(head="node-wise", model=MODEL))


def converted(folder: str, dtype: torch.dtype, expert: bool = False) -> None:
    """A model folder whose weights (or an expert), sha256 and all, were converted to ``dtype``."""
    from safetensors.torch import load

    whole = save_model(folder + "-whole", RunConfig(head="node-wise", model=MODEL))
    tensors = load((whole / weights_entry(whole)["name"]).read_bytes())
    content = save({name: tensor.to(dtype) for name, tensor in tensors.items()})
    (folder_with_expert if expert else folder_with_weights)(folder, content)


def set_config(folder: str, dotted: str, value) -> None:
    """A model folder whose config.json has ``value`` at the dotted key of its run config."""

    def change(meta: dict) -> None:
        *path, last = dotted.split(".")
        target = meta["config"]
        for part in path:
            target = target[part]
        target[last] = value

    edit_config(folder, change)


# a module in the working folder that would leave a marker if anything imported it
EVIL_MODULE = f"open({MARKER!r}, 'w').close()\nclass Env: pass\n"


@dataclass
class Case:
    input: str
    make: object  # builds the input in the working folder
    args: list
    env: dict | None = None


PREDICT = ["--graph", "graph.txt", "--out", "out.csv"]


def predicting(model: str, *extra: str) -> list[str]:
    return ["predict", "--model", model, *PREDICT, *extra]


CASES = [
    Case("SB3 zip with code in its pickles", lambda: Path("evil.zip").write_bytes(sb3_zip()), ["predict", "--model", "evil.zip", *PREDICT]),
    Case(
        "the same zip as transfer's source",
        lambda: Path("evil.zip").write_bytes(sb3_zip()),
        ["transfer", "--src", "evil.zip", "--dst", "small"],
    ),
    Case("the zip renamed `evil.model`", lambda: Path("evil.model").write_bytes(sb3_zip()), ["predict", "--model", "evil.model", *PREDICT]),
    Case(
        "a pickle (`torch.save` file) as the model",
        lambda: Path("policy.pth").write_bytes(payload()),
        ["predict", "--model", "policy.pth", *PREDICT],
    ),
    Case(
        "a folder holding only the zip, renamed `model.safetensors`",
        lambda: (Path("renamed").mkdir(), Path("renamed/model.safetensors").write_bytes(sb3_zip())),
        predicting("renamed"),
    ),
    Case(
        "weights that are the zip (config.json names it, sha256 right)",
        lambda: folder_with_weights("zipped", sb3_zip()),
        predicting("zipped"),
    ),
    Case(
        "weights that are a pickle (config.json names it, sha256 right)",
        lambda: folder_with_weights("pickled", payload()),
        predicting("pickled"),
    ),
    Case(
        "weights cut short (config.json's sha256 right)",
        lambda: cut_short("cut"),
        predicting("cut"),
    ),
    Case("weights changed after saving", lambda: tamper("tampered"), predicting("tampered")),
    Case(
        "config.json of another format version",
        lambda: edit_config("future", lambda meta: meta.update(format_version=99)),
        predicting("future"),
    ),
    Case(
        "config.json naming a file outside the folder",
        lambda: edit_config("escape", lambda meta: meta["files"]["weights"].update(name="../../etc/passwd")),
        predicting("escape"),
    ),
    Case(
        "transfer with `--task` other than the model's",
        lambda: save_model("mis-model", RunConfig(task="mis", head="node-wise", model=MODEL)),
        ["transfer", "--src", "mis-model", "--dst", "small", "--task", "mvc"],
    ),
    Case(
        "transfer after the env's actions changed (head)",
        lambda: save_model("head-model", RunConfig(env="changed:PickOne", head="node-wise", model=MODEL)),
        ["transfer", "--src", "head-model", "--dst", "small", "--env", "changed:PickOne"],
    ),
    Case(
        "transfer after the env's node features changed",
        lambda: save_model("wide-model", RunConfig(env="changed:WiderMIS", head="node-wise", model=MODEL)),
        ["transfer", "--src", "wide-model", "--dst", "small", "--env", "changed:WiderMIS"],
    ),
    Case(
        "predict on a graph larger than the memory available",
        lambda: save_model("mem-model", RunConfig(head="node-wise", model=MODEL)),
        ["predict", "--model", "mem-model", "--graph", "big.npz", "--out", "out.csv"],
        {"GRAPHTRANSFER_MEMORY_LIMIT_MB": "100"},
    ),
    Case(
        "eval on a graph larger than the memory available",
        lambda: None,
        ["eval", "--model", "mem-model", "--graphs", "big.npz"],
        {"GRAPHTRANSFER_MEMORY_LIMIT_MB": "100"},
    ),
    Case(
        "config.json: a width that is a string",
        lambda: set_config("width-x", "model.width", "x"),
        predicting("width-x"),
    ),
    Case("config.json: a negative width", lambda: set_config("width-neg", "model.width", -4), predicting("width-neg")),
    Case("config.json: 10^9 layers", lambda: set_config("deep", "model.num_layers", 1e9), predicting("deep")),
    Case(
        "config.json: conv `os.system`",
        lambda: set_config("conv-os", "model.conv", "os.system"),
        predicting("conv-os"),
    ),
    Case("config.json: `model: null`", lambda: set_config("model-null", "model", None), predicting("model-null")),
    Case(
        "config.json naming a module:function as its env",
        lambda: edit_config("runs-code", lambda meta: meta["config"].update(env="logging:basicConfig", env_kwargs={"filename": MARKER})),
        predicting("runs-code"),
    ),
    Case(
        "config.json naming a module in the working folder as its env",
        lambda: (Path("evilmod.py").write_text(EVIL_MODULE), set_config("evil-env", "env", "evilmod:Env")),
        predicting("evil-env"),
    ),
    Case(
        "the user env named, but another than the folder's",
        lambda: None,
        predicting("evil-env", "--env", "changed:PickOne"),
    ),
    Case("weights holding NaN", lambda: nan_weights("nan-model"), predicting("nan-model")),
    Case(
        "an expert that is a pickle (config.json names it, sha256 right)",
        lambda: folder_with_expert("pickled-expert", payload()),
        predicting("pickled-expert"),
    ),
    Case(
        "an expert of another network (config.json names it, sha256 right)",
        lambda: folder_with_expert("foreign-expert", save({"features_extractor.encode.0.weight": torch.zeros(3, 3)})),
        predicting("foreign-expert"),
    ),
    Case("weights converted to int64 (sha256 right)", lambda: converted("int-model", torch.int64), predicting("int-model")),
    Case(
        "an expert converted to float16 (sha256 right)",
        lambda: converted("half-expert", torch.float16, expert=True),
        predicting("half-expert"),
    ),
    Case("predict `--seed -1`", lambda: None, predicting("mem-model", "--seed", "-1")),
    Case("predict `--seed 10^23`", lambda: None, predicting("mem-model", "--seed", "99999999999999999999999")),
    Case(
        "predict `--out` the input graph", lambda: None, ["predict", "--model", "mem-model", "--graph", "graph.txt", "--out", "./graph.txt"]
    ),
    Case(
        "predict `--out` the model's config.json",
        lambda: None,
        ["predict", "--model", "mem-model", "--graph", "graph.txt", "--out", "mem-model/config.json"],
    ),
    Case("predict `--out` a folder", lambda: None, ["predict", "--model", "mem-model", "--graph", "graph.txt", "--out", "mem-model"]),
    Case("predict `--out ''`", lambda: None, ["predict", "--model", "mem-model", "--graph", "graph.txt", "--out", ""]),
    Case(
        "predict `--out` an existing file without `--force`",
        lambda: Path("taken.csv").write_text("keep me\n"),
        ["predict", "--model", "mem-model", "--graph", "graph.txt", "--out", "taken.csv"],
    ),
    Case(
        "`train --resume` of a finished run",
        lambda: save_model("done", RunConfig(head="node-wise", model=MODEL), info={"training": {"steps": 30016, "complete": True}}),
        ["train", "--resume", "done"],
    ),
    Case("`train --resume` with other settings", lambda: None, ["train", "--resume", "done", "--steps", "100", "--seed", "3"]),
    Case(
        "a `--config` YAML naming a user env (`env: evilenv:Env`), no `--env` typed",
        lambda: (Path("evilenv.py").write_text(EVIL_MODULE), Path("env.yaml").write_text("env: evilenv:Env\n")),
        ["train", "--config", "env.yaml"],
    ),
    Case(
        "the same YAML naming `env: os:system` with `env_kwargs`",
        lambda: Path("system.yaml").write_text(f"env: os:system\nenv_kwargs:\n  command: touch {MARKER}\n"),
        ["tune", "--config", "system.yaml", "--n-trials", "1"],
    ),
    Case("a `--config` that is a FIFO", lambda: os.mkfifo("settings.yaml"), ["train", "--config", "settings.yaml"]),
    Case("a model that is a link to /dev/zero", lambda: Path("zero-model").symlink_to("/dev/zero"), predicting("zero-model")),
    Case(
        "a model folder whose config.json is a FIFO",
        lambda: (Path("fifo-model").mkdir(), os.mkfifo("fifo-model/config.json")),
        predicting("fifo-model"),
    ),
    Case(
        "`train --resume` of a folder no training wrote",
        lambda: save_model("made", RunConfig(head="node-wise", model=MODEL)),
        ["train", "--resume", "made"],
    ),
]


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    """Each case run once through the CLI in a fresh working folder: ``{input: result}``."""
    work = tmp_path_factory.mktemp("bad-models")
    results = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)
        patch.syspath_prepend(str(work))
        patch.setenv("GRAPHTRANSFER_CACHE", str(work / "cache"))
        Path("changed.py").write_text(CHANGED_ENVS)
        Path("graph.txt").write_text("0 1\n1 2\n2 3\n3 0\n")
        write_npz(barabasi_albert(100_000, 5, seed=1), "big.npz")
        for case in CASES:
            case.make()
            results[case.input] = runner.invoke(app, case.args, env=case.env)
            assert not Path(MARKER).exists(), f"{case.input}: the payload ran"
            assert not Path("out.csv").exists(), f"{case.input}: wrote an output though refused"
        assert Path("graph.txt").read_text() == "0 1\n1 2\n2 3\n3 0\n" and Path("taken.csv").read_text() == "keep me\n"
    return results


def test_the_payload_would_run_code_if_unpickled():
    """The pickle is real: its opcodes call builtins.open on the marker (read, never executed)."""
    ops = [(op.name, arg) for op, arg, _ in pickletools.genops(payload())]
    assert ops[1] == ("GLOBAL", "builtins open") and ("BINUNICODE", MARKER) in ops and ("REDUCE", None) in ops


@pytest.mark.parametrize("case", CASES, ids=[case.input for case in CASES])
def test_each_bad_input_is_one_line_and_exit_code_2(refused, case):
    result = refused[case.input]
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert "Traceback" not in result.output


def test_sb3_zip_explains_why_it_is_refused(refused):
    for case in CASES[:3]:
        assert "SB3 zip files are not loaded (their loader unpickles and can run code)" in refused[case.input].stderr


def test_read_checkpoint_never_runs_the_zips_payload(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("evil.zip").write_bytes(sb3_zip())
    Path("evil.model").write_bytes(sb3_zip())
    for name in ("evil.zip", "evil.model"):
        with pytest.raises(CheckpointError, match="SB3 zip files are not loaded"):
            read_checkpoint(name)
    with pytest.raises(CheckpointError, match="is a pickle file, not safetensors"):
        read_checkpoint(folder_with_weights("pickled", payload()))
    assert not Path(MARKER).exists()


def test_incompatible_transfers_name_the_tensor_the_shapes_and_the_fix(refused):
    assert refused["transfer with `--task` other than the model's"].stderr == (
        "error: mis-model holds a model of task mis (node-wise head), not of task mvc; "
        "drop --task mvc, or pass a model trained with --task mvc\n"
    )
    assert refused["transfer after the env's node features changed"].stderr == (
        "error: wide-model: features_extractor.encode.0.weight is (16, 6) in the checkpoint but this env needs (16, 7): "
        "the env's node features differ from training (6 then, 7 now); "
        "use the env and env settings the model was trained with, or retrain\n"
    )
    assert refused["transfer after the env's actions changed (head)"].stderr == (
        "error: head-model: the model has a node-wise head, but pickone's env now needs a node-choice head (its action space is "
        "Discrete(60)); the env's actions differ from training: restore the env the model was trained with, or retrain\n"
    )


def test_memory_guard_refuses_with_the_estimate_and_the_fix(refused):
    message = refused["predict on a graph larger than the memory available"].stderr
    assert message.startswith("error: graph big.npz: running the policy needs about ")
    assert message.endswith(
        "but 100 MiB is available ($GRAPHTRANSFER_MEMORY_LIMIT_MB); use a smaller graph or a machine with more memory\n"
    )


def test_bad_inputs_table_is_current(refused):
    rows = [f"| {case.input} | `{command_line(case)}` | `{refused[case.input].stderr.strip()}` |" for case in CASES]
    section = "\n".join([SECTION, "", *SECTION_INTRO, "", "| input | command | message |", "|---|---|---|", *rows, ""])
    text = (
        BAD_INPUTS.read_text()
        if BAD_INPUTS.exists()
        else "# Bad models and runs and their messages\n\nGraph files: see BAD_INPUTS.md beside this file.\n"
    )
    updated = replace_section(text, section)
    if os.environ.get("GRAPHTRANSFER_WRITE_BAD_INPUTS"):
        BAD_INPUTS.write_text(updated)
        text = updated
    assert updated == text, "tests/BAD_MODELS.md is out of date; run GRAPHTRANSFER_WRITE_BAD_INPUTS=1 pytest tests/test_bad_models.py"


SECTION_INTRO = [
    "Every model or run below is refused with exit code 2 and the one line shown on stderr; the inputs with a",
    "pickle payload would create a marker file if anything unpickled them, and the tests check that it never",
    "appears. Generated from the real messages by `GRAPHTRANSFER_WRITE_BAD_INPUTS=1 .venv/bin/python -m pytest",
    "tests/test_bad_models.py`; that test fails when this section is out of date.",
]


def command_line(case: Case) -> str:
    variables = [f"{name}={value} " for name, value in (case.env or {}).items()]
    return "".join(variables) + "graphtransfer " + " ".join(case.args)


def replace_section(text: str, section: str, heading: str = SECTION) -> str:
    """``text`` with the section under ``heading`` (up to the next ``## `` heading) replaced, or appended."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.rstrip("\n") == heading]
    if not starts:
        return text.rstrip("\n") + "\n\n" + section
    start = starts[0]
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    after = "".join(lines[end:])
    return "".join(lines[:start]) + section + ("\n" + after if after else "")


def test_replace_section_keeps_the_other_sections():
    text = "# Bad inputs\n\n## Graph files\n\nrows\n\n## Models and runs\n\nold\n\n## Later\n\nmore\n"
    assert replace_section(text, "## Models and runs\n\nnew\n") == (
        "# Bad inputs\n\n## Graph files\n\nrows\n\n## Models and runs\n\nnew\n\n## Later\n\nmore\n"
    )
    assert replace_section("# Bad inputs\n", "## Models and runs\n\nnew\n") == "# Bad inputs\n\n## Models and runs\n\nnew\n"
