"""Model folders and outputs that cannot hurt anyone: concurrent saves, file modes, outputs that
never replace inputs, sample names that never silently lose to a local folder, warnings as
one line, and the memory guard under an address-space limit. (Bad inputs and their one-line
messages are in test_bad_models.py.)"""

import json
import multiprocessing
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from graphtransfer.checkpoint import CONFIG, read_checkpoint, save_checkpoint
from graphtransfer.cli import app
from graphtransfer.config import ModelConfig, RunConfig
from graphtransfer.errors import CheckpointError
from graphtransfer.graphs import erdos_renyi
from graphtransfer.graphs.catalog import resolve
from graphtransfer.nn import build_policy
from graphtransfer.tasks.mis.env import MISEnv

runner = CliRunner()
MODEL = ModelConfig(width=8, head_width=8, num_layers=1)
CONTEXT = multiprocessing.get_context("fork")


def small_policy(value: float):
    env = MISEnv([erdos_renyi(10, 3.0, 0)])
    policy = build_policy("node-wise", MODEL, env.observation_space, env.action_space)
    with torch.no_grad():
        for parameter in policy.parameters():
            parameter.fill_(value)
    return policy


def save_many(folder: str, start: int, errors) -> None:
    for i in range(12):
        try:
            save_checkpoint(folder, small_policy(start + i), RunConfig(head="node-wise", model=MODEL))
        except Exception as err:  # reported to the parent, which fails the test
            errors.put(f"save: {err!r}")


def read_many(folder: str, stop, errors) -> None:
    reads = 0
    while not stop.is_set() or reads == 0:
        try:
            read_checkpoint(folder)
            reads += 1
        except Exception as err:
            errors.put(f"read: {err!r}")
    errors.put(f"reads {reads}")


def test_two_writers_and_a_reader_of_one_folder_never_fail(tmp_path):
    folder = str(tmp_path / "model")
    save_checkpoint(folder, small_policy(0.5), RunConfig(head="node-wise", model=MODEL))
    errors, stop = CONTEXT.Queue(), CONTEXT.Event()
    reader = CONTEXT.Process(target=read_many, args=(folder, stop, errors))
    writers = [CONTEXT.Process(target=save_many, args=(folder, start, errors)) for start in (1, 100)]
    reader.start()
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(120)
    stop.set()
    reader.join(60)
    messages = []
    while not errors.empty():
        messages.append(errors.get())
    failures = [m for m in messages if not m.startswith("reads ")]
    assert not failures, failures[:3]
    assert any(m.startswith("reads ") and int(m.split()[1]) > 0 for m in messages)
    assert all(writer.exitcode == 0 for writer in writers)
    names = {entry["name"] for entry in json.loads((Path(folder) / CONFIG).read_text())["files"].values()}
    assert {p.name for p in Path(folder).glob("*.safetensors")} == names  # no file of an earlier save left behind
    read_checkpoint(folder)


def test_saved_files_get_the_users_umask(tmp_path):
    previous = os.umask(0o022)
    try:
        folder = save_checkpoint(tmp_path / "model", small_policy(0.1), RunConfig(head="node-wise", model=MODEL))
    finally:
        os.umask(previous)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir() if not p.name.startswith(".")}
    assert modes and set(modes.values()) == {0o644}, modes


def test_force_replaces_an_existing_csv_and_only_then(tiny_model, tmp_path):
    graph = tmp_path / "g.txt"
    graph.write_text("0 1\n1 2\n2 3\n")
    out = tmp_path / "out.csv"
    out.write_text("keep\n")
    command = ["predict", "--model", str(tiny_model("mis")), "--graph", str(graph), "--out", str(out)]
    refused = runner.invoke(app, command)
    assert refused.exit_code == 2 and out.read_text() == "keep\n"
    replaced = runner.invoke(app, [*command, "--force"])
    assert replaced.exit_code == 0, replaced.output
    assert out.read_text().startswith("node,decision\n")


def test_a_bare_name_means_the_sample_set_and_says_so_when_a_local_path_shares_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GRAPHTRANSFER_SAMPLES", str(Path(__file__).parents[1] / "sample_graphs"))
    (tmp_path / "small").mkdir()
    (tmp_path / "small" / "mine.txt").write_text("0 1\n")
    result = runner.invoke(app, ["predict", "--model", "nowhere", "--graph", "small", "--out", "o.csv"])
    assert "warning: 'small' is a sample set and also a path here; using the sample set" in result.stderr
    assert resolve("./small") == Path("./small")  # written as a path, the path wins


def test_reader_warnings_are_warning_lines(tiny_model, tmp_path):
    graph = tmp_path / "loops.txt"
    graph.write_text("0 0\n0 1\n1 2\n")
    result = runner.invoke(app, ["predict", "--model", str(tiny_model("mis")), "--graph", str(graph), "--out", str(tmp_path / "o.csv")])
    assert result.exit_code == 0, result.output
    assert result.stderr == f"warning: {graph}: dropped 1 self-loop(s)\n"


def test_the_memory_guard_sees_an_address_space_limit():
    """Under ``ulimit -v`` the available memory is what is left under the limit, not MemAvailable."""
    code = (
        "import resource; from pathlib import Path\n"
        "size = next(int(l.split()[1]) * 1024 for l in Path('/proc/self/status').read_text().splitlines() if l.startswith('VmSize:'))\n"
        "resource.setrlimit(resource.RLIMIT_AS, (size + 300 * 2**20, resource.RLIM_INFINITY))\n"
        "from graphtransfer.solve.memory import available_bytes\n"
        "room, source = available_bytes()\n"
        "print(room // 2**20, source)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "GRAPHTRANSFER_MEMORY_LIMIT_MB"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    room, source = result.stdout.split(maxsplit=1)
    assert int(room) <= 300 and "ulimit -v" in source


def test_a_gym_id_in_a_folder_is_not_built_unless_named(tmp_path):
    """A registered gymnasium id is code too: a folder naming one loads only with --env."""
    policy = small_policy(0.1)
    save_checkpoint(tmp_path / "m", policy, RunConfig(env="graphtransfer/MIS-v0", head="node-wise", model=MODEL))
    with pytest.raises(CheckpointError, match="pass --env graphtransfer/MIS-v0"):
        read_checkpoint(tmp_path / "m")
    assert read_checkpoint(tmp_path / "m", env="graphtransfer/MIS-v0").config.env == "graphtransfer/MIS-v0"


def test_another_librarys_warning_is_shown_once_and_the_command_ends(tmp_path):
    """A plain pickle named .pt makes torch's weights-only unpickler warn (UserWarning, pickle
    protocol 4); the warning handler once re-recorded what it showed and looped forever."""
    import pickle

    import numpy as np

    graph = tmp_path / "g.pt"
    graph.write_bytes(pickle.dumps({"edge_index": np.array([[0, 1], [1, 0]])}, protocol=4))
    command = [sys.executable, "-c", "from graphtransfer.cli.main import main; main()", "graphs", "info", str(graph)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("UserWarning: Detected pickle protocol 4") == 1, result.stderr
    assert result.stderr.splitlines()[-1].startswith(f"error: {graph}: is not a readable torch.save file")
