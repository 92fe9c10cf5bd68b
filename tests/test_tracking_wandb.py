"""``train --track wandb``: an offline W&B run holding the run's settings, SB3's scalars at every
update and the model folder as an artifact, read back from the run's own ``.wandb`` file; a missing
extra and a bad folder are one line each and leave nothing behind; two processes track into one
folder at once."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app
from tests.test_tracking import TINY, one_error_line

runner = CliRunner()
BLOCK = 32768
"""W&B writes its run file as a LevelDB-style log: 32 KiB blocks of records, each a 7-byte header
(checksum, length, type) and a piece of one protobuf ``Record``"""


def records(path: Path):
    """The protobuf records of an offline run's ``run-ID.wandb`` file, in order."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    position, pending = 7, b""
    while position + 7 <= len(data):
        if BLOCK - position % BLOCK < 7:  # a block's tail too short for a header is padding
            position += BLOCK - position % BLOCK
            continue
        length, kind = int.from_bytes(data[position + 4 : position + 6], "little"), data[position + 6]
        pending += data[position + 7 : position + 7 + length]
        position += 7 + length
        if kind in (1, 4):  # a whole record, or the last piece of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


def offline_runs(folder: Path) -> list[dict]:
    """Each offline run under ``folder/wandb``: its name, config, history rows, artifacts and exit code.

    First waits for W&B's service to finish writing, as a CLI process's exit does (W&B's atexit
    teardown): the command ran in this process, and on a loaded machine the run file was once read
    before its records were on disk (no run record at all)."""
    import wandb

    wandb.teardown()
    runs = []
    for file in sorted(folder.glob("wandb/offline-run-*/run-*.wandb")):
        run: dict = {"history": [], "artifacts": []}
        for record in records(file):
            kind = record.WhichOneof("record_type")
            if kind == "run":
                run["name"], run["project"] = record.run.display_name, record.run.project
                run["config"] = {item.key: json.loads(item.value_json) for item in record.run.config.update}
            elif kind == "history":
                row = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
                run["history"].append(row)  # W&B keeps "rollout/ep_rew_mean" as the nested key rollout, ep_rew_mean
            elif kind == "artifact":
                run["artifacts"].append((record.artifact.type, [entry.path for entry in record.artifact.manifest.contents]))
            elif kind == "exit":
                run["exit_code"] = record.exit.exit_code
        runs.append(run)
    return runs


def test_a_wandb_run_holds_its_settings_its_scalars_and_its_model(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WANDB_MODE", raising=False)  # offline by default
    result = runner.invoke(app, ["train", *TINY, "--out", "run", "--track", "wandb", "--track-uri", "tracked"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == (
        "tracked in W&B (offline): tracked/wandb, project 'mis' (to upload an offline run: wandb sync --sync-all tracked/wandb)"
    )
    assert "wandb:" not in result.output  # W&B's own banner lines stay off the command's output
    (run,) = offline_runs(tmp_path / "tracked")
    assert (run["name"], run["project"], run["exit_code"]) == ("run", "mis", 0)
    assert run["config"]["ppo"]["n_steps"] == 16 and run["config"]["task"] == "mis"
    rows = list(csv.DictReader(open(tmp_path / "run" / "progress.csv")))
    for key in ("rollout/ep_rew_mean", "train/value_loss"):  # every row SB3 wrote, at its env step, as TensorBoard gets it
        logged = [(row["_step"], pytest.approx(row[key])) for row in run["history"] if key in row]
        assert logged == [(int(row["time/total_timesteps"]), float(row[key])) for row in rows if row[key]]
    ((kind, files),) = run["artifacts"]
    assert kind == "model" and {"config.json", "config.yaml", "progress.csv"} <= set(files)
    assert any(name.endswith(".safetensors") for name in files) and not any(name.startswith(".") for name in files)


def test_wandb_dir_names_the_folder_and_a_ppo_run_records_no_dqn_settings(tmp_path, monkeypatch):
    """Without --track-uri the runs go where W&B's own WANDB_DIR says; the config holds the sections the run uses."""
    pytest.importorskip("wandb")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "elsewhere"))
    result = runner.invoke(app, ["train", *TINY, "--out", "run", "--track", "wandb"])
    assert result.exit_code == 0, result.output
    assert f"tracked in W&B (offline): {tmp_path / 'elsewhere' / 'wandb'}," in result.stdout
    assert not (tmp_path / "wandb").exists()
    (run,) = offline_runs(tmp_path / "elsewhere")
    assert run["config"]["algo"] == "ppo" and "ppo" in run["config"] and "dqn" not in run["config"]


def test_without_wandb_the_extra_is_named_and_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "wandb", None)  # what import finds on an install without the extra
    line = one_error_line(runner.invoke(app, ["train", *TINY, "--out", "run", "--track", "wandb"]))
    assert line == "error: --track wandb needs the wandb package: pip install 'graphtransfer[track]' (or pip install wandb)"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("notes.txt", "error: --track-uri notes.txt: is a file; name the folder W&B's runs go in, e.g. --track-uri runs"),
        ("notes.txt/runs", "notes.txt is a file, not a folder"),
        ("/proc/sys/runs", "not writable"),
    ],
)
def test_a_bad_wandb_folder_is_one_line_before_training(uri, expected, tmp_path, monkeypatch):
    if uri.startswith("/proc") and sys.platform != "linux":
        pytest.skip("/proc/sys is Linux's")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("mine\n")
    assert expected in one_error_line(runner.invoke(app, ["train", *TINY, "--out", "run", "--track", "wandb", "--track-uri", uri]))
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"] and (tmp_path / "notes.txt").read_text() == "mine\n"


def test_two_processes_track_into_one_wandb_folder_at_once(tmp_path):
    pytest.importorskip("wandb")
    cli = [sys.executable, "-c", "from graphtransfer.cli import main; main()"]
    command = [*cli, "train", *TINY, "--track", "wandb", "--track-uri", str(tmp_path / "tracked")]
    processes = [subprocess.Popen([*command, "--out", str(tmp_path / f"run{i}")], stderr=subprocess.PIPE, text=True) for i in (0, 1)]
    for process in processes:
        assert process.wait(timeout=600) == 0, process.stderr.read()
    runs = offline_runs(tmp_path / "tracked")
    assert sorted(run["name"] for run in runs) == ["run0", "run1"] and all(run["exit_code"] == 0 and run["artifacts"] for run in runs)
