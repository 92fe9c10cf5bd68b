"""The output rule, on every command that writes: never onto an input, never into or over a model
folder's files, never over an existing file without --force, never into a folder of other files;
every path checked before the work starts; and a training run that damages nothing of the folder
it replaces until its own save commits (tests/test_safety.py has the concurrency and file-mode side).

Each example of issue 29 has its own test; ``test_the_output_rule`` crosses every writing command
with every kind of target that must survive."""

import errno
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from stable_baselines3.common.callbacks import BaseCallback
from typer.testing import CliRunner

from graphtransfer.checkpoint import CONFIG, read_checkpoint
from graphtransfer.cli import app
from graphtransfer.config import PPOConfig, RunConfig
from graphtransfer.training.loop import EnvWorkersDied, train

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
    "plot --out": (lambda t, w: ["plot", w["model"], "--out", t], True),
    "export --sb3": (lambda t, w: ["export", w["model"], "--graphs", w["graph"], "--sb3", t], True),
    "graphs convert": (lambda t, w: ["graphs", "convert", w["graph"], t], True),
    "graphs generate": (lambda t, w: ["graphs", "generate", t, "--nodes", "10"], False),  # reads no input: --force may replace g.txt
    "train --out": (lambda t, w: ["train", "--graphs", w["graph"], *TRAIN, "--out", t], False),
    "transfer --out": (lambda t, w: ["transfer", "--src", w["model"], "--dst", w["graph"], "--out", t], False),
    "tune --out": (lambda t, w: ["tune", "--graphs", w["graph"], "--steps", "64", "--n-trials", "1", "--out", t], False),
}
NAMED_AS = {"predict --draw": ".png", "eval --plot": ".png", "plot --out": ".png", "export --sb3": ".zip"}
TARGETS = {
    "an input": lambda w: w["graph"],
    "a model folder's file": lambda w: w["victim"] / CONFIG,
    "a foreign folder": lambda w: w["foreign"],
    "an existing file": lambda w: w["existing"],  # with the extension of the commands in NAMED_AS
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
        train(config, victim, log=lambda _: None, callback=Explode())
    assert snapshot(victim) == before
    assert not [p.name for p in victim.iterdir() if p.name.startswith(".unfinished-")]  # nothing of the failed run is left


@pytest.mark.slow
def test_a_killed_run_leaves_the_folder_it_would_replace_as_it_was(work):
    victim = work["victim"]
    before = snapshot(victim)
    command = [sys.executable, "-c", "from graphtransfer.cli.main import main; main()", "train", "--graphs", str(work["graph"])]
    command += ["--task", "mis", "--steps", "1000000", "--n-envs", "2", "--n-steps", "16", "--batch-size", "32", "--no-progress"]
    process = subprocess.Popen([*command, "--out", str(victim)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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


@pytest.mark.parametrize("writer", ["predict --out", "eval --json", "train --out", "transfer --out", "graphs generate", "tune --out"])
def test_a_read_only_output_is_refused_up_front(work, writer):
    for folder in read_only_folders(work["tmp"]):
        result = runner.invoke(app, [str(part) for part in WRITERS[writer][0](folder / "out" / "x.csv", work)])
        assert "is not writable" in assert_refused(result)


def test_figures_must_be_named_as_figures(work):
    plot = runner.invoke(app, ["plot", str(work["model"]), "--out", str(work["tmp"] / "x.json")])
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
    """What the rule allows: a model folder of ours is replaced by a new run, logs and all."""
    victim = work["victim"]
    old_rows = (victim / "progress.csv").read_text().splitlines()
    result = runner.invoke(app, ["train", "--graphs", str(work["graph"]), *TRAIN, "--out", str(victim)])
    assert result.exit_code == 0, result.output
    rows = (victim / "progress.csv").read_text().splitlines()
    assert rows != old_rows and len(rows) >= 2
    assert read_checkpoint(victim).config.graphs == str(work["graph"])
    assert not list(victim.glob(".unfinished-*"))


# --- a save that fails, env workers that die -------------------------------------------------------


def test_a_full_disk_at_the_save_keeps_the_trained_model_elsewhere(work, monkeypatch):
    """Fault injection at the OS call: every fsync of a file in the run folder fails as on a full disk."""
    out = work["tmp"] / "run"
    real_fsync = os.fsync

    def full_disk(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(out)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to tell which file an fsync is for")
    monkeypatch.setattr(os, "fsync", full_disk)
    result = runner.invoke(app, ["train", "--graphs", str(work["graph"]), *TRAIN, "--out", str(out)])
    message = assert_refused(result, code=1)
    assert "No space left on device" in message and "it is kept in" in message
    kept = Path(message.split("it is kept in ")[1].split(",")[0])
    try:
        assert read_checkpoint(kept).meta["training"]["steps"] == 64
        assert not (out / CONFIG).exists()
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
    ppo = PPOConfig(total_timesteps=512, n_envs=2, n_steps=32, batch_size=32, vec_env="subproc")
    config = RunConfig(task="mis", graphs=str(work["graph"]), ppo=ppo)
    with pytest.raises(EnvWorkersDied, match=f"resume with: graphtransfer train --resume {out}"):
        train(config, out, log=lambda _: None, callback=KillAWorker())
    saved = read_checkpoint(out)
    assert saved.optimizer is not None and not saved.meta["training"]["complete"]
    assert 64 <= saved.meta["training"]["steps"] < 512
    resumed = runner.invoke(app, ["train", "--resume", str(out), "--no-progress"])
    assert resumed.exit_code == 0, resumed.output
    assert read_checkpoint(out).meta["training"]["complete"]
