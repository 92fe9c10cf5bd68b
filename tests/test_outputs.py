"""The output rule, on every command that writes: never onto an input, never into or over a model
folder's files, never over an existing file without --force, never into a folder of other files;
every path checked before the work starts; and a training run that damages nothing of the folder
it replaces until its own save commits (tests/test_safety.py has the concurrency and file-mode side).

Each example of issue 29 has its own test; ``test_the_output_rule`` crosses every writing command
with every kind of target that must survive."""

import errno
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch
from stable_baselines3.common.callbacks import BaseCallback
from typer.testing import CliRunner

from graphtransfer.checkpoint import CONFIG, SaveFailed, read_checkpoint, save_checkpoint
from graphtransfer.cli import app
from graphtransfer.config import PPOConfig, RunConfig, Runtime
from graphtransfer.graphs.generators import delaunay
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.training.loop import TrainingStopped, train
from graphtransfer.transferring.transfer import transfer

runner = CliRunner()
TRAIN = ["--task", "mis", "--steps", "64", "--n-envs", "2", "--n-steps", "32", "--batch-size", "32", "--no-progress"]


def snapshot(path: Path) -> dict[str, str]:
    """Every file under ``path`` (or ``path`` itself) by relative name, with its sha256."""
    if path.is_file():
        return {".": hashlib.sha256(path.read_bytes()).hexdigest()}
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(path.rglob("*")) if p.is_file()}


def assert_refused(result, code: int = 2) -> str:
    """One ``error:`` line on stderr, the exit code, no traceback; returns the message."""
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def scratch(folder: Path, model: Path) -> dict[str, Path]:
    """A graph file, a trained model folder, a copy of it (a victim: another model), a folder of
    someone else's files and an existing file, in ``folder``."""
    graph = folder / "g.txt"
    graph.write_text("0 1\n1 2\n2 3\n3 0\n0 2\n")
    shutil.copytree(model, folder / "model")
    shutil.copytree(model, folder / "other_model")
    foreign = folder / "foreign"
    foreign.mkdir()
    (foreign / "config.json").write_text('{"model_type": "bert"}\n')
    (foreign / "model.safetensors").write_bytes(b"someone else's weights")
    (foreign / "notes.md").write_text("do not lose\n")
    existing = folder / "existing.csv"
    existing.write_text("keep me\n")
    (folder / "existing.png").write_bytes(b"\x89PNG keep me")
    (folder / "existing.zip").write_bytes(b"PK keep me")
    (folder / "existing.onnx").write_bytes(b"keep me")
    return {
        "graph": graph,
        "model": folder / "model",
        "victim": folder / "other_model",
        "foreign": foreign,
        "existing": existing,
        "tmp": folder,
    }


@pytest.fixture
def work(tmp_path, tiny_model):
    return scratch(tmp_path, tiny_model("mis"))


# Every writing command, as a function of the path it writes and the scratch files; the flag says
# whether it has --force (passed where it must not help: an input, a model's file).
WRITERS = {
    "predict --out": (lambda t, w: ["predict", "--model", w["model"], "--graph", w["graph"], "--out", t], True),
    "predict --draw": (
        lambda t, w: ["predict", "--model", w["model"], "--graph", w["graph"], "--out", w["tmp"] / "fresh.csv", "--draw", t],
        True,
    ),
    "eval --json": (lambda t, w: ["eval", "--model", w["model"], "--graphs", w["graph"], "--json", t], True),
    "eval --plot": (lambda t, w: ["eval", "--model", w["model"], "--graphs", w["graph"], "--plot", t], True),
    "plot --out": (lambda t, w: ["plot", "--model", w["model"], "--out", t], True),
    "export --sb3": (lambda t, w: ["export", "--model", w["model"], "--graphs", w["graph"], "--sb3", t], True),
    "export --onnx": (lambda t, w: ["export", "--model", w["model"], "--onnx", t], True),
    "graphs convert": (lambda t, w: ["graphs", "convert", w["graph"], t], True),
    "graphs generate": (lambda t, w: ["graphs", "generate", t, "--nodes", "10"], False),  # reads no input: --force may replace g.txt
    "graphs partition": (lambda t, w: ["graphs", "partition", w["graph"], "--parts", "2", "--out", t], True),
    "train --out": (lambda t, w: ["train", "--graphs", w["graph"], *TRAIN, "--out", t], False),
    "transfer --out": (lambda t, w: ["transfer", "--src", w["model"], "--dst", w["graph"], "--out", t], False),
    "tune --out": (lambda t, w: ["tune", "--graphs", w["graph"], "--steps", "64", "--n-trials", "1", "--out", t], False),
}
NAMED_AS = {"predict --draw": ".png", "eval --plot": ".png", "plot --out": ".png", "export --sb3": ".zip", "export --onnx": ".onnx"}
TARGETS = {
    "an input": lambda w: w["graph"],
    "a model folder's file": lambda w: w["victim"] / CONFIG,
    "a foreign folder": lambda w: w["foreign"],
    "an existing file": lambda w: w["existing"],  # with the extension of the commands in NAMED_AS
    "an earlier model": lambda w: w["victim"],  # a run of ours: replaced only with --force (or continued with --resume)
}


TABLE = Path(__file__).with_name("BAD_OUTPUTS.md")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory, tiny_model):
    """Every writing command against every target, each in a fresh working folder of its own (so
    the messages name relative paths): ``{(writer, target): (command line, result, before, after)}``."""
    results = {}
    with pytest.MonkeyPatch.context() as patch:
        for writer, (command, has_force) in WRITERS.items():
            for target, pick in TARGETS.items():
                folder = tmp_path_factory.mktemp("outputs")
                patch.chdir(folder)
                work = {name: path.relative_to(folder) for name, path in scratch(folder, tiny_model("mis")).items()}
                path = pick(work)
                if writer in NAMED_AS and target == "an existing file":
                    path = path.with_suffix(NAMED_AS[writer])
                watched = folder / (path.parent if target == "a model folder's file" else path)
                before = snapshot(watched)
                force = ["--force"] if has_force and target in ("an input", "a model folder's file") else []
                args = [str(part) for part in command(path, work)] + force
                results[writer, target] = ("graphtransfer " + " ".join(args), runner.invoke(app, args), before, snapshot(watched))
    return results


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("writer", WRITERS)
def test_the_output_rule(outcomes, writer, target):
    _, result, before, after = outcomes[writer, target]
    assert_refused(result)
    assert after == before


def test_every_refusal_suggests_a_name_the_command_takes(outcomes):
    """A refusal's "e.g. NAME" is named as the command writes it (an ONNX export once suggested solution.csv)."""
    for (writer, _), (_, result, _, _) in outcomes.items():
        suggested = result.stderr.strip().split("e.g. ")[-1].split()[-1] if "e.g. " in result.stderr else None
        if suggested and writer in NAMED_AS:
            assert suggested.endswith(NAMED_AS[writer]), (writer, result.stderr)


def test_the_table_of_refused_outputs_is_current(outcomes):
    """tests/BAD_OUTPUTS.md: every case above with its real message. Regenerate with
    GRAPHTRANSFER_WRITE_BAD_INPUTS=1 .venv/bin/python -m pytest tests/test_outputs.py"""
    rows = [
        f"| {writer} | {target} | `{line}` | `{result.stderr.strip()}` |" for (writer, target), (line, result, _, _) in outcomes.items()
    ]
    table = "\n".join(
        [
            "# Outputs that are refused, and their messages",
            "",
            "Every command that writes, against every kind of target it must not destroy; each is refused with exit",
            "code 2 and the one line shown, and the target's bytes are unchanged. Generated from the real messages by",
            "`GRAPHTRANSFER_WRITE_BAD_INPUTS=1 .venv/bin/python -m pytest tests/test_outputs.py`; that test fails when",
            "this file is out of date.",
            "",
            "| command | target | command line | message |",
            "|---|---|---|---|",
            *rows,
            "",
        ]
    )
    if os.environ.get("GRAPHTRANSFER_WRITE_BAD_INPUTS"):
        TABLE.write_text(table)
    assert TABLE.read_text() == table, "tests/BAD_OUTPUTS.md is out of date; regenerate it (see this test's docstring)"


# --- issue 29, "Unsafe" -------------------------------------------------------------------------


def test_eval_json_never_replaces_another_models_config(work):
    config = work["victim"] / CONFIG
    before = config.read_bytes()
    result = runner.invoke(app, ["eval", "--model", str(work["model"]), "--graphs", str(work["graph"]), "--json", str(config)])
    assert "is a file of the model folder" in assert_refused(result)
    assert config.read_bytes() == before and read_checkpoint(work["victim"]).config.task == "mis"


def test_eval_json_never_replaces_the_input_graph(work):
    graph = work["graph"]
    before = graph.read_bytes()
    result = runner.invoke(app, ["eval", "--model", str(work["model"]), "--graphs", str(graph), "--json", str(graph), "--force"])
    assert "would overwrite the input" in assert_refused(result)
    assert graph.read_bytes() == before


def test_train_never_writes_into_a_folder_of_someone_elses_files(work):
    foreign = work["foreign"]
    before = snapshot(foreign)
    result = runner.invoke(app, ["train", "--graphs", str(work["graph"]), *TRAIN, "--out", str(foreign)])
    message = assert_refused(result)
    assert "not a graphtransfer model" in message and "notes.md" in message
    assert snapshot(foreign) == before and sorted(p.name for p in foreign.iterdir()) == ["config.json", "model.safetensors", "notes.md"]


class Explode(BaseCallback):
    """A user's callback that fails after a few steps, as a bug in user code would."""

    def _on_step(self) -> bool:
        if self.num_timesteps >= 8:
            raise RuntimeError("the user's callback failed")
        return True


def test_a_failed_run_leaves_the_folder_it_would_replace_as_it_was(work):
    victim = work["victim"]
    before = snapshot(victim)
    assert len((victim / "progress.csv").read_text().splitlines()) > 2
    config = RunConfig(task="mis", graphs=str(work["graph"]), ppo=PPOConfig(total_timesteps=64, n_envs=2, n_steps=32, batch_size=32))
    with pytest.raises(RuntimeError, match="the user's callback failed"):
        train(config, victim, log=lambda _: None, callback=Explode(), force=True)
    assert snapshot(victim) == before
    assert not [p.name for p in victim.iterdir() if p.name.startswith(".unfinished-")]  # nothing of the failed run is left


@pytest.mark.slow
def test_a_killed_run_leaves_the_folder_it_would_replace_as_it_was(work):
    victim = work["victim"]
    before = snapshot(victim)
    command = [sys.executable, "-c", "from graphtransfer.cli.main import main; main()", "train", "--graphs", str(work["graph"])]
    command += ["--task", "mis", "--steps", "1000000", "--n-envs", "2", "--n-steps", "16", "--batch-size", "32", "--no-progress"]
    process = subprocess.Popen([*command, "--out", str(victim), "--force"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and process.poll() is None:
            staged = list(victim.glob(".unfinished-*/progress.csv"))
            if (staged and len(staged[0].read_text().splitlines()) > 2) or snapshot(victim) != before:
                break  # the run has logged rows (or, wrongly, touched the folder)
            time.sleep(0.2)
        assert process.poll() is None, process.stderr.read().decode()
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    after = snapshot(victim)
    assert {name: digest for name, digest in after.items() if not name.startswith(".unfinished-")} == before
    assert read_checkpoint(victim).meta["training"]["complete"]


# --- issue 29, paths ----------------------------------------------------------------------------


@pytest.fixture
def bad_paths(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop")
    (tmp_path / "file.txt").write_text("a file, not a folder\n")
    return {
        "a symlink loop": (loop / "out.csv", "symbolic link loop"),
        "a file on the way": (tmp_path / "file.txt" / "sub.csv", "is a file, not a folder"),
        "a 300-character name": (tmp_path / ("x" * 296 + ".csv"), "300 bytes long"),
    }


@pytest.mark.parametrize("form", ["a symlink loop", "a file on the way", "a 300-character name"])
@pytest.mark.parametrize("writer", ["predict --out", "eval --json", "train --out"])
def test_every_path_is_checked_before_the_work_starts(work, bad_paths, writer, form):
    path, expected = bad_paths[form]
    if writer == "train --out" and form != "a file on the way":
        path = path.with_suffix("")  # a folder
        expected = expected.replace("300 bytes", "296 bytes")
    result = runner.invoke(app, [str(part) for part in WRITERS[writer][0](path, work)])
    assert expected in assert_refused(result)
    assert result.stdout == ""  # refused before anything ran: no graph read, no evaluation, no training


def read_only_folders(tmp_path: Path) -> list[Path]:
    """A folder without write permission (which only binds a non-root user) and /proc/sys, which
    nobody writes new files into."""
    folders = []
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    if not os.access(locked, os.W_OK):
        folders.append(locked)
    if sys.platform == "linux" and Path("/proc/sys").is_dir() and not os.access("/proc/sys", os.W_OK):
        folders.append(Path("/proc/sys"))
    if not folders:
        pytest.skip("no folder here refuses this process's writes")
    return folders


@pytest.mark.parametrize(
    "writer", ["predict --out", "eval --json", "train --out", "transfer --out", "graphs generate", "graphs partition", "tune --out"]
)
def test_a_read_only_output_is_refused_up_front(work, writer):
    for folder in read_only_folders(work["tmp"]):
        result = runner.invoke(app, [str(part) for part in WRITERS[writer][0](folder / "out" / "x.csv", work)])
        assert "is not writable" in assert_refused(result)


def test_figures_must_be_named_as_figures(work):
    plot = runner.invoke(app, ["plot", "--model", str(work["model"]), "--out", str(work["tmp"] / "x.json")])
    assert "this output is written as .png, .svg, .pdf; name e.g. --out" in assert_refused(plot)
    evaluation = runner.invoke(
        app, ["eval", "--model", str(work["model"]), "--graphs", str(work["graph"]), "--plot", str(work["tmp"] / "x.safetensors")]
    )
    assert "x.png" in assert_refused(evaluation)
    assert evaluation.stdout == "" and not (work["tmp"] / "x.safetensors").exists()


def test_train_never_replaces_a_model_through_a_symlink(work):
    link = work["tmp"] / "link"
    link.symlink_to(work["victim"], target_is_directory=True)
    before = snapshot(work["victim"])
    result = runner.invoke(app, ["train", "--graphs", str(work["graph"]), *TRAIN, "--out", str(link)])
    assert "is a symbolic link to" in assert_refused(result)
    assert snapshot(work["victim"]) == before


def test_train_replaces_its_own_earlier_model_and_moves_its_logs_in(work):
    """What the rule allows: with --force, a model folder of ours is replaced by a new run, logs and all."""
    victim = work["victim"]
    old_rows = (victim / "progress.csv").read_text().splitlines()
    result = runner.invoke(app, ["train", "--graphs", str(work["graph"]), *TRAIN, "--out", str(victim), "--force"])
    assert result.exit_code == 0, result.output
    rows = (victim / "progress.csv").read_text().splitlines()
    assert rows != old_rows and len(rows) >= 2
    assert read_checkpoint(victim).config.graphs == str(work["graph"])
    assert not list(victim.glob(".unfinished-*"))


def test_a_new_run_leaves_no_earlier_runs_best_or_checkpoints_beside_its_model(work):
    """An earlier run's best/ and checkpoints/ would look like the new run's; its commit removes them,
    and a transfer's commit the earlier run's progress.csv too (a user's own files beside the model stay)."""
    run, graph = work["tmp"] / "run", str(work["graph"])
    logged = ["--steps", "128", "--eval-graphs", graph, "--eval-every", "64", "--checkpoint-every", "64"]
    first = runner.invoke(app, ["train", "--graphs", graph, *TRAIN, *logged, "--out", str(run)])
    assert first.exit_code == 0, first.output
    assert (run / "best" / CONFIG).is_file() and list((run / "checkpoints").iterdir())
    (run / "notes.md").write_text("mine\n")
    second = runner.invoke(app, ["train", "--graphs", graph, *TRAIN, "--out", str(run), "--force"])
    assert second.exit_code == 0, second.output
    left = sorted(p.name for p in run.iterdir() if not p.name.endswith(".safetensors"))
    assert left == [".graphtransfer.lock", CONFIG, "config.yaml", "notes.md", "progress.csv"]
    assert read_checkpoint(run).meta["training"]["complete"]
    transferred = runner.invoke(app, ["transfer", "--src", str(work["model"]), "--dst", graph, "--out", str(run), "--force"])
    assert transferred.exit_code == 0, transferred.output
    left = sorted(p.name for p in run.iterdir() if not p.name.endswith(".safetensors"))
    assert left == [".graphtransfer.lock", CONFIG, "config.yaml", "notes.md"]  # that progress.csv was not the transfer's


# --- a save that fails, env workers that die -------------------------------------------------------


class Disk:
    """A folder on a filesystem of its own that a test fills up or makes read-only while a command
    runs: a small tmpfs where this process may mount one (root, as in a CI container). Elsewhere a
    full disk is an ENOSPC from every fsync of a file in the folder (fault injection at the OS call),
    and read-only is the folder's mode, which binds a user other than root."""

    def __init__(self, folder: Path, monkeypatch: pytest.MonkeyPatch):
        self.folder, self.monkeypatch = folder, monkeypatch
        folder.mkdir()
        mount = ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)]
        can_mount = sys.platform == "linux" and shutil.which("mount") is not None
        self.mounted = can_mount and subprocess.run(mount, capture_output=True).returncode == 0

    def fill(self) -> None:
        if self.mounted:
            with open(self.folder / "filler", "wb", buffering=0) as handle:
                with pytest.raises(OSError, match="No space left on device"):
                    while True:
                        handle.write(bytes(1 << 16))
            return
        if not Path("/proc/self/fd").is_dir():
            pytest.skip("needs /proc to tell which file an fsync is for")
        real_fsync = os.fsync

        def full_disk(fd: int) -> None:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(str(self.folder)):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            real_fsync(fd)

        self.monkeypatch.setattr(os, "fsync", full_disk)

    def make_read_only(self) -> None:
        if self.mounted:
            subprocess.run(["mount", "-o", "remount,ro", str(self.folder)], check=True)
        elif os.geteuid() != 0:
            for path in [self.folder, *self.folder.rglob("*")]:
                path.chmod(0o555 if path.is_dir() else 0o444)
        else:
            pytest.skip("root ignores file modes, and no filesystem can be mounted read-only here")

    def release(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.folder)], check=True)
        else:
            for path in [self.folder, *self.folder.rglob("*")]:
                path.chmod(0o755)


@pytest.fixture
def disk(tmp_path, monkeypatch):
    made = Disk(tmp_path / "disk", monkeypatch)
    yield made
    made.release()


def kept_folder(message: str) -> Path:
    """The temporary folder a failed save's message names, to be removed by the test."""
    return Path(message.split("it is kept in ")[1].split(",")[0])


def test_a_full_disk_during_training_keeps_a_resumable_run_elsewhere(work, disk):
    """The logs are the first to fail on a full disk; the run stops there and is kept, resumable."""
    out = disk.folder / "run"
    disk.fill()
    result = runner.invoke(app, ["train", "--graphs", str(work["graph"]), *TRAIN, "--out", str(out)])
    message = assert_refused(result, code=1)
    assert f"error: {out}: the unfinished run could not be saved (No space left on device); it is kept in" in message
    kept = kept_folder(message)
    try:
        assert message.endswith(f"; resume with: graphtransfer train --resume {kept}")
        assert not read_checkpoint(kept).meta["training"]["complete"] and not (out / CONFIG).exists()
        resumed = runner.invoke(app, ["train", "--resume", str(kept), "--no-progress"])
        assert resumed.exit_code == 0, resumed.output
        training = read_checkpoint(kept).meta["training"]
        assert training["complete"] and training["steps"] == 64
    finally:
        shutil.rmtree(kept, ignore_errors=True)


def test_a_full_disk_at_the_transfer_save_keeps_the_fine_tuned_model_and_changes_nothing(work, disk):
    """transfer --finetune-steps onto an existing model folder on a full disk: the fine-tuned model
    is kept in a temporary folder, and the source and the folder it would replace stay as they were."""
    out = disk.folder / "out"
    shutil.copytree(work["victim"], out)
    before, source = snapshot(out), snapshot(work["model"])
    disk.fill()
    command = ["transfer", "--src", str(work["model"]), "--dst", str(work["graph"]), "--finetune-steps", "8", "--out", str(out), "--force"]
    message = assert_refused(runner.invoke(app, command), code=1)
    assert f"error: {out}: the fine-tuned model could not be saved (No space left on device); it is kept in" in message
    kept = kept_folder(message)
    try:
        assert read_checkpoint(kept).meta["transferred"]["finetune"]["steps"] >= 8
        assert snapshot(out) == before and snapshot(work["model"]) == source
    finally:
        shutil.rmtree(kept, ignore_errors=True)


def test_a_full_disk_at_the_transfer_save_keeps_the_model_with_its_expert(work, disk):
    """transfer of a model with an expert (no fine-tuning) onto a full disk: the transferred model
    is kept in a temporary folder with its expert, and the source stays as it was."""
    source = read_checkpoint(work["model"])
    policy = policy_for_graphs(source, [delaunay(30, 0)]).policy
    expert = {name: tensor + 0.01 for name, tensor in source.tensors.items()}
    with_expert = save_checkpoint(work["tmp"] / "with-expert", policy, source.config, experts=[expert])
    before = snapshot(with_expert)
    disk.fill()
    command = ["transfer", "--src", str(with_expert), "--dst", str(work["graph"]), "--out", str(disk.folder / "out")]
    message = assert_refused(runner.invoke(app, command), code=1)
    assert "the transferred model could not be saved (No space left on device); it is kept in" in message
    kept = kept_folder(message)
    try:
        read = read_checkpoint(kept)
        assert len(read.experts) == 1 and all(torch.equal(read.experts[0][name], expert[name]) for name in expert)
        assert snapshot(with_expert) == before
    finally:
        shutil.rmtree(kept, ignore_errors=True)


def test_a_full_disk_while_partitioning_leaves_the_earlier_partition_as_it_was(work, disk):
    """graphs partition --force over an earlier partitioned graph on a full disk: one line, exit
    code 1, and the earlier map and parts unchanged (each file is written atomically, the map last)."""
    out = disk.folder / "parts"
    first = runner.invoke(app, ["graphs", "partition", str(work["graph"]), "--parts", "2", "--out", str(out)])
    assert first.exit_code == 0, first.output
    before = snapshot(out)
    disk.fill()
    result = runner.invoke(app, ["graphs", "partition", str(work["graph"]), "--parts", "3", "--out", str(out), "--force"])
    assert "No space left on device" in assert_refused(result, code=1)
    assert snapshot(out) == before


def test_a_destination_made_read_only_while_adapting_keeps_the_adapted_model(work, disk):
    """The destination turns read-only after the up-front checks (a remount, say): the adapted
    model is kept in a temporary folder, and the folder it would replace stays as it was."""
    out = disk.folder / "out"
    shutil.copytree(work["victim"], out)
    before, source = snapshot(out), snapshot(work["model"])
    lines = []

    def log(line: str) -> None:  # the first line comes once the checks have passed and adapting starts
        if not lines:
            disk.make_read_only()
        lines.append(line)

    with pytest.raises(SaveFailed, match=r"could not be saved \((Read-only file system|Permission denied)\)") as failed:
        transfer(work["model"], work["graph"], folder=out, adapt_seconds=2.0, adapt_nodes=4, log=log, force=True)
    kept = kept_folder(str(failed.value))
    try:
        assert "adapt" in read_checkpoint(kept).meta["transferred"]
        assert snapshot(out) == before and snapshot(work["model"]) == source
    finally:
        shutil.rmtree(kept, ignore_errors=True)


class KillAWorker(BaseCallback):
    """Kills one SubprocVecEnv worker process once, after some steps, as the OOM killer would."""

    def _on_step(self) -> bool:
        if self.num_timesteps >= 96 and self.training_env.processes[0].is_alive():
            os.kill(self.training_env.processes[0].pid, signal.SIGKILL)
            self.training_env.processes[0].join()
        return True


@pytest.mark.slow
def test_a_run_whose_env_worker_dies_saves_a_checkpoint_to_resume(work):
    out = work["tmp"] / "run"
    ppo = PPOConfig(total_timesteps=512, n_envs=2, n_steps=32, batch_size=32)
    config = RunConfig(task="mis", graphs=str(work["graph"]), ppo=ppo, runtime=Runtime(vec_env="subproc"))
    with pytest.raises(TrainingStopped, match=f"resume with: graphtransfer train --resume {out}"):
        train(config, out, log=lambda _: None, callback=KillAWorker())
    saved = read_checkpoint(out)
    assert saved.optimizer is not None and not saved.meta["training"]["complete"]
    assert 64 <= saved.meta["training"]["steps"] < 512
    resumed = runner.invoke(app, ["train", "--resume", str(out), "--no-progress"])
    assert resumed.exit_code == 0, resumed.output
    assert read_checkpoint(out).meta["training"]["complete"]


# --- a Ray cluster that dies ------------------------------------------------------------------------


@pytest.fixture
def ray_head(tmp_path):
    """A Ray cluster of its own (``ray start --head --block`` in a session of its own, so the test
    kills the head and every process it started at once): ``(address, environment, kill)``. Its
    own temporary folder keeps its address out of /tmp/ray/ray_current_cluster, where every later
    ``ray.init()`` on this machine would try the dead cluster."""
    pytest.importorskip("ray")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = dict(os.environ, RAY_AUTH_MODE="disabled")  # a token-protected cluster would need its token handed over
    ray = Path(sys.executable).with_name("ray")
    temp = tempfile.mkdtemp(prefix="gt-ray-")  # short: Ray's socket paths inside it must fit 107 bytes
    command = [str(ray), "start", "--head", "--block", f"--port={port}", "--num-cpus=2", "--include-dashboard=false", f"--temp-dir={temp}"]
    head = subprocess.Popen(
        [*command, "--disable-usage-stats"], env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.5)

    def kill() -> None:
        if head.poll() is None:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()

    yield f"127.0.0.1:{port}", env, kill
    kill()
    shutil.rmtree(temp, ignore_errors=True)


def run_until(command: list[str], env: dict[str, str], ready, kill, seconds: float = 300) -> subprocess.CompletedProcess:
    """Run the CLI ``command``; once ``ready()`` holds, ``kill()`` the cluster; wait for the command to end."""
    cli = [sys.executable, "-c", "from graphtransfer.cli.main import main; main()", *command]
    process = subprocess.Popen(cli, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + seconds
    try:
        while process.poll() is None and time.monotonic() < deadline and not ready():
            time.sleep(0.2)
        assert process.poll() is None, process.communicate()
        kill()
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    return subprocess.CompletedProcess(cli, process.returncode, stdout, stderr)


@pytest.mark.slow
def test_a_ray_head_that_dies_during_training_leaves_a_checkpoint_to_resume(work, ray_head):
    address, env, kill = ray_head
    out = work["tmp"] / "run"
    command = ["train", "--graphs", str(work["graph"]), "--task", "mis", "--steps", "100000", "--n-envs", "2", "--n-steps", "16"]
    command += ["--batch-size", "32", "--no-progress", "--vec-env", "ray", "--out", str(out)]

    def logged() -> bool:
        staged = list(out.glob(".unfinished-*/progress.csv"))
        return bool(staged) and len(staged[0].read_text().splitlines()) > 2

    result = run_until(command, dict(env, RAY_ADDRESS=address), logged, kill)
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert "stopped answering" in result.stderr and result.stderr.endswith(f"resume with: graphtransfer train --resume {out}\n")
    saved = read_checkpoint(out)
    assert saved.optimizer is not None and 32 <= saved.meta["training"]["steps"] < 100000


def busy_on(fragment: str, seconds: float):
    """``ready()`` for :func:`run_until`: some process has had ``fragment`` in its title (a Ray actor
    names the method it runs there) for ``seconds`` without a break."""
    since = []

    def ready() -> bool:
        busy = any(fragment in _read(cmdline) for cmdline in Path("/proc").glob("[0-9]*/cmdline"))
        since[:] = (since or [time.monotonic()]) if busy else []
        return bool(since) and time.monotonic() - since[0] > seconds

    return ready


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:  # the process ended meanwhile
        return ""


@pytest.mark.slow
def test_a_ray_cluster_that_dies_during_eval_keeps_the_finished_rows(work, ray_head):
    """Three small graphs, then a large one that keeps the one actor busy: the cluster dies there
    (or, on a machine so busy that a small graph keeps it busy for seconds, on one of those)."""
    address, env, kill = ray_head
    graphs = work["tmp"] / "graphs"
    graphs.mkdir()
    for index in range(3):
        shutil.copy(work["graph"], graphs / f"a{index}.txt")
    made = runner.invoke(app, ["graphs", "generate", str(graphs / "z.txt"), "--nodes", "200000", "--avg-degree", "8"])
    assert made.exit_code == 0, made.output
    json_out = work["tmp"] / "rows.json"
    command = ["eval", "--model", str(work["model"]), "--graphs", str(graphs), "--ray-address", address, "--workers", "1"]
    result = run_until([*command, "--json", str(json_out)], env, busy_on("RayWorker.run", 3.0), kill)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "stopped answering" in lines[0] and f"wrote their rows to {json_out}" in lines[0], result.stderr
    names = [Path(row["graph"]).name for row in json.loads(json_out.read_text())]
    assert names and names == ["a0.txt", "a1.txt", "a2.txt"][: len(names)]  # one actor takes the graphs in order
    assert f"{len(names)} of 4 graphs evaluated" in lines[0] and f"({', '.join(names)})" in lines[0]


def test_an_interrupted_run_is_replaced_only_with_force_and_the_refusal_offers_resume(work):
    """A run stopped by Ctrl-C or SIGTERM holds its optimizer state to resume from; a new run with the
    same --out is refused, naming both ways on, and replaces it only with --force."""
    victim = work["victim"]
    meta = json.loads((victim / CONFIG).read_text())
    meta["training"].update(steps=32, complete=False)
    (victim / CONFIG).write_text(json.dumps(meta))
    before = snapshot(victim)
    command = ["train", "--graphs", str(work["graph"]), *TRAIN, "--out", str(victim)]
    message = assert_refused(runner.invoke(app, command))
    budget = meta["config"]["ppo"]["total_timesteps"]
    assert message == (
        f"error: --out {victim}: holds a model already; pass --force to replace it or --resume {victim} to continue its run "
        f"(stopped at step 32 of {budget}), or choose another folder"
    )
    assert snapshot(victim) == before
    replaced = runner.invoke(app, [*command, "--force"])
    assert replaced.exit_code == 0, replaced.output
    assert read_checkpoint(victim).meta["training"]["complete"]
