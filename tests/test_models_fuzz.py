"""Property tests of model folders: a config.json or a safetensors header changed at random loads or
is refused with a CheckpointError -- never another exception, never a traceback on the command
line, never code run. Repeatable by default; GRAPHTRANSFER_FUZZ=random explores (see conftest.py)."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from graphtransfer.checkpoint import CONFIG, load_strict, read_checkpoint, save_checkpoint
from graphtransfer.cli import app
from graphtransfer.config import ModelConfig, RunConfig
from graphtransfer.errors import CheckpointError
from graphtransfer.graphs import erdos_renyi
from graphtransfer.nn import build_policy
from graphtransfer.tasks.mis.env import MISEnv

runner = CliRunner()
MODEL = ModelConfig(width=8, head_width=8, num_layers=1)
# values a field may be given: wrong types, edges of ranges, names of code, containers, nothing
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "x", "os.system", "lin_", "lin_-1", "lin_3e-4", "sage", "gcn", "node-wise", "../x", "logging:basicConfig"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)
FIELDS = [
    ("config", "task"),
    ("config", "graphs"),
    ("config", "horizon"),
    ("config", "env"),
    ("config", "env_kwargs"),
    ("config", "head"),
    ("config", "model"),
    ("config", "model", "conv"),
    ("config", "model", "num_layers"),
    ("config", "model", "width"),
    ("config", "model", "aggr"),
    ("config", "model", "head_width"),
    ("config", "ppo"),
    ("config", "ppo", "learning_rate"),
    ("config", "ppo", "seed"),
    ("config", "ppo", "n_steps"),
    ("config", "ppo", "device"),  # where folders from before the runtime section hold it
    ("config", "runtime"),
    ("config", "runtime", "device"),
    ("config", "runtime", "max_nodes_per_batch"),
    ("config", "log", "eval_every"),
    ("config", "unknown"),
    ("files",),
    ("files", "weights"),
    ("files", "weights", "name"),
    ("files", "weights", "sha256"),
    ("format_version",),
]


def fresh_policy():
    env = MISEnv([erdos_renyi(10, 3.0, 0)])
    return build_policy("node-wise", MODEL, env.observation_space, env.action_space)


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    return save_checkpoint(tmp_path_factory.mktemp("fuzz") / "model", fresh_policy(), RunConfig(head="node-wise", model=MODEL))


def copy_of(saved: Path, folder: Path) -> Path:
    """A fresh copy of the saved model folder, to damage."""
    folder.mkdir(exist_ok=True)
    for file in saved.iterdir():
        (folder / file.name).write_bytes(file.read_bytes())
    return folder


def set_path(meta: dict, path: tuple[str, ...], value) -> None:
    target = meta
    for key in path[:-1]:
        if not isinstance(target.get(key), dict):
            target[key] = {}
        target = target[key]
    target[path[-1]] = value


@given(field=st.sampled_from(FIELDS), value=VALUES)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_config_json_field_changed_at_random_loads_or_is_a_checkpoint_error(saved, tmp_path_factory, field, value):
    folder = copy_of(saved, tmp_path_factory.mktemp("case"))
    meta = json.loads((folder / CONFIG).read_text())
    set_path(meta, field, value)
    (folder / CONFIG).write_text(json.dumps(meta))
    try:
        checkpoint = read_checkpoint(folder)
    except CheckpointError as err:
        assert "\n" not in str(err)
        return
    RunConfig.from_dict(checkpoint.config.to_dict())  # what loaded is a valid config


HEADER_EDITS = st.one_of(
    st.binary(max_size=64),  # a header that is not JSON at all
    st.dictionaries(st.text(max_size=8), VALUES, max_size=3).map(lambda d: json.dumps(d).encode()),
    st.builds(
        lambda dtype, shape, offsets: json.dumps({"t": {"dtype": dtype, "shape": shape, "data_offsets": offsets}}).encode(),
        st.sampled_from(["F32", "F64", "I64", "BOOL", "U8", "F16", "X"]),
        st.lists(st.integers(min_value=-2, max_value=2**40), max_size=3),
        st.lists(st.integers(min_value=-2, max_value=2**40), max_size=3),
    ),
)


@given(header=HEADER_EDITS, declared=st.one_of(st.none(), st.integers(min_value=0, max_value=2**64 - 1)))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_safetensors_header_changed_at_random_is_a_checkpoint_error(saved, tmp_path_factory, header, declared):
    """The weights file gets another header (and maybe a lying header length), its sha256 updated
    in config.json so the damage reaches the safetensors parser itself."""
    folder = copy_of(saved, tmp_path_factory.mktemp("case"))
    meta = json.loads((folder / CONFIG).read_text())
    weights = folder / meta["files"]["weights"]["name"]
    body = weights.read_bytes()
    length = struct.unpack("<Q", body[:8])[0]
    data = struct.pack("<Q", len(header) if declared is None else declared) + header + body[8 + length :]
    weights.write_bytes(data)
    meta["files"]["weights"]["sha256"] = hashlib.sha256(data).hexdigest()
    (folder / CONFIG).write_text(json.dumps(meta))
    try:
        checkpoint = read_checkpoint(folder)
    except CheckpointError as err:
        assert "\n" not in str(err)
        return
    with pytest.raises(CheckpointError):  # a header that still parses names none of the model's tensors
        load_strict(fresh_policy(), checkpoint.tensors)


def test_a_damaged_config_json_is_one_line_on_the_command_line(saved, tmp_path):
    folder = copy_of(saved, tmp_path / "model")
    meta = json.loads((folder / CONFIG).read_text())
    meta["config"]["ppo"]["n_steps"] = [1, 2]
    (folder / CONFIG).write_text(json.dumps(meta))
    result = runner.invoke(app, ["predict", "--model", str(folder), "--graph", "small", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "ppo.n_steps: expected an integer, got [1, 2]" in result.stderr
