"""Training runs: bit-identical repeats, Ctrl-C with a resumable checkpoint, and --resume."""

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch
from stable_baselines3.common.callbacks import BaseCallback
from typer.testing import CliRunner

from graphtransfer.checkpoint import CONFIG, read_checkpoint
from graphtransfer.cli import app
from graphtransfer.config import ModelConfig, PPOConfig, RunConfig, Runtime
from graphtransfer.training.loop import train

runner = CliRunner()

# An MIS env that, after `after` env steps in its process, touches ./progress and waits for ./go:
# the test's Ctrl-C then arrives at a known step, with no race against the clock.
GATED_ENV = """
import time
from pathlib import Path

from graphtransfer.tasks.mis.env import MISEnv


class GatedMIS(MISEnv):
    steps_taken = 0  # over every copy of the env in this process

    def __init__(self, graphs, after=300):
        super().__init__(graphs)
        self.after = after

    def step(self, action):
        GatedMIS.steps_taken += 1
        if GatedMIS.steps_taken == self.after:
            Path("progress").touch()
            while not Path("go").exists():
                time.sleep(0.01)
        return super().step(action)
"""


def tiny_run(seed: int) -> RunConfig:
    return RunConfig(
        task="mis",
        graphs="small",
        model=ModelConfig(width=16, head_width=16, num_layers=2),
        ppo=PPOConfig(total_timesteps=256, n_envs=2, seed=seed),
        runtime=Runtime(threads=1, device="cpu"),
    )


@pytest.mark.slow
def test_the_same_seed_gives_bit_identical_weights(tmp_path):
    weights = {}
    for name, seed in (("first", 0), ("again", 0), ("other", 1)):
        train(tiny_run(seed), tmp_path / name, log=lambda line: None)
        weights[name] = read_checkpoint(tmp_path / name).tensors
    assert weights["first"].keys() == weights["again"].keys()
    assert all(torch.equal(weights["first"][n], weights["again"][n]) for n in weights["first"])
    assert not all(torch.equal(weights["first"][n], weights["other"][n]) for n in weights["first"])


STOPS = {  # what stops a command, its exit code and how its last line says it
    "Ctrl-C": (signal.SIGINT, 130, "interrupted"),
    "SIGTERM": (signal.SIGTERM, 143, "stopped by SIGTERM"),  # Slurm, Kubernetes, `timeout`, `kill`
}


@pytest.mark.slow
@pytest.mark.parametrize("stop", STOPS)
def test_ctrl_c_saves_a_checkpoint_that_resume_trains_to_the_budget(tmp_path, monkeypatch, stop):
    """Ctrl-C, and SIGTERM alike, stop the run between env steps with a checkpoint and the resume line."""
    signum, code, said = STOPS[stop]
    (tmp_path / "gated.py").write_text(GATED_ENV)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    command = [sys.executable, "-c", "from graphtransfer.cli import main; main()", "train", "--env", "gated:GatedMIS"]
    command += ["--steps", "512", "--n-envs", "2", "--width", "16", "--layers", "1", "--out", "model"]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(tmp_path / "progress", process)
        process.send_signal(signum)
        (tmp_path / "go").touch()
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    # 300 env steps is inside the fifth rollout of 2 x 32: four went into updates, the fifth is dropped
    assert process.returncode == code, stderr
    assert stderr == f"{said} at step 256 of 512; saved model; resume with: graphtransfer train --resume model --env gated:GatedMIS\n"
    assert "\ntraining gatedmis (node-wise head, PPO)" in stdout
    interrupted = read_checkpoint(tmp_path / "model", env="gated:GatedMIS")
    assert interrupted.meta["training"]["steps"] == 256 and interrupted.meta["training"]["complete"] is False
    assert interrupted.optimizer is not None

    refused = runner.invoke(app, ["train", "--resume", "model", "--no-progress"])
    assert refused.exit_code == 2 and "pass --env gated:GatedMIS" in refused.stderr  # a folder never names the code to run
    resumed = runner.invoke(app, ["train", "--resume", "model", "--no-progress", "--env", "gated:GatedMIS"])
    assert resumed.exit_code == 0, resumed.output
    assert resumed.output.startswith("resuming gatedmis (node-wise head) from model at step 256 of 512\n")
    meta = json.loads((tmp_path / "model" / CONFIG).read_text())
    assert meta["training"]["steps"] == meta["training"]["budget"] == meta["config"]["ppo"]["total_timesteps"] == 512
    assert meta["training"]["complete"] is True and "optimizer" not in meta["files"]
    first = interrupted.meta["training"]  # both parts' seconds add up, phase by phase
    for phase in ("seconds", "rollout_seconds", "update_seconds"):
        assert meta["training"][phase] > first[phase] > 0
    with open(tmp_path / "model" / "progress.csv", newline="") as handle:  # both parts, the dropped rollout in neither
        assert [int(row["time/total_timesteps"]) for row in csv.DictReader(handle)] == list(range(64, 513, 64))

    again = runner.invoke(app, ["train", "--resume", "model", "--env", "gated:GatedMIS"])
    assert again.exit_code == 2
    assert again.stderr == "error: model: training is complete (512 of 512 steps); nothing to resume, train a new model instead\n"


class CtrlCBeforeTheFirstUpdate(BaseCallback):
    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        if self.model.num_timesteps == 64:
            os.kill(os.getpid(), signal.SIGINT)


def test_ctrl_c_inside_an_update_stops_it_after_the_minibatch_in_progress(tmp_path):
    """A long update (a tune trial's sampled epochs) does not hold a stop back: of 10 epochs of four
    minibatches, one minibatch is taken; the rollout it came from counts, the next one is dropped."""
    config = tiny_run(0)
    config.ppo.n_epochs, config.ppo.batch_size = 10, 16
    result = train(config, tmp_path / "m", log=lambda line: None, callback=CtrlCBeforeTheFirstUpdate())
    assert result.interrupted and result.steps == 64
    assert result.model._n_updates == 1  # the first epoch, cut after its first minibatch
    assert result.model.update_deadline is None  # the next learn of this model is not stopped by this Ctrl-C
    training = read_checkpoint(tmp_path / "m").meta["training"]
    assert training["steps"] == 64 and training["complete"] is False


DEFERRED = """
import os, signal
from graphtransfer.training.callbacks import StopOnInterrupt, defer_interrupts, interrupt_pending
defer_interrupts()
assert not interrupt_pending()
os.kill(os.getpid(), signal.SIGINT)  # no KeyboardInterrupt here: only a request
stop = StopOnInterrupt()
with stop.listening():
    print(interrupt_pending(), stop.requested)
"""


def test_a_deferred_ctrl_c_is_a_request_that_the_next_training_run_honours():
    """A tune worker's Ctrl-C never raises inside whatever the worker is doing (an Optuna write):
    it waits for a safe point, and a training run that starts after it stops at its first step."""
    result = subprocess.run([sys.executable, "-c", DEFERRED], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "True True\n"


DROPPED = """
import os, signal
from graphtransfer.training.callbacks import StopOnInterrupt, interrupt_pending, remembered_interrupts


class Dropping:
    def __del__(self):  # a Ctrl-C that lands here raises where Python prints "Exception ignored" and goes on
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10**5):
            pass


before = signal.getsignal(signal.SIGINT)  # Python's own handler, or SIG_IGN where the parent ignores SIGINT (an xdist worker)
with remembered_interrupts():
    thing = Dropping()
    del thing
    stop = StopOnInterrupt()
    with stop.listening():
        print(interrupt_pending(), stop.requested)
print(interrupt_pending(), signal.getsignal(signal.SIGINT) is before)
"""


def test_a_ctrl_c_that_python_drops_is_remembered_and_stops_the_next_training_run():
    """tune's own process: a KeyboardInterrupt raised inside a ``__del__`` or a weakref callback is
    lost (the process trained on, and tests/test_bad_runs.py's Ctrl-C test hung once in CI); the
    request stays, so the next training run stops at its first step, Python's traceback for it is
    not printed, and afterwards the request is forgotten."""
    result = subprocess.run([sys.executable, "-c", DROPPED], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # not Python's "Exception ignored in ... __del__" and its traceback
    assert result.stdout == "True True\nFalse True\n"


def test_resume_refuses_settings_it_would_ignore(tmp_path):
    result = runner.invoke(app, ["train", "--resume", str(tmp_path), "--steps", "100", "--seed", "3", "--config", "c.yaml", "--set", "x=1"])
    assert result.exit_code == 2
    dropped = "--total-timesteps, --seed, --config, --set"  # --steps typed: its primary name
    assert result.stderr == f"error: --resume takes every setting from the folder's config.json; drop {dropped}\n"


def _wait_for(path, process, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f"training exited ({process.returncode}) before {path.name}: {process.stderr.read()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no {path.name} after {timeout} s")
        time.sleep(0.05)


def test_a_log_that_is_no_terminal_gets_progress_lines_and_the_update_phases(tmp_path):
    result = runner.invoke(
        app, ["train", "--steps", "128", "--n-envs", "2", "--width", "16", "--layers", "1", "--out", str(tmp_path / "m")]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    progress = [line for line in lines if re.match(r"^step \d+ of 128 \(\d+%\), [\d.]+ env steps/s, \d+ s elapsed$", line)]
    assert len(progress) >= 5  # every 5% of the run at least
    trained = next(line for line in lines if line.startswith("trained "))
    assert re.search(r"update [\d.]+ s \(sample [\d.]+, forward [\d.]+, backward [\d.]+, step [\d.]+\)", trained), trained


def test_progress_counts_to_the_whole_rollouts_that_run_never_past_100_percent(tmp_path):
    """--steps 100 with 2 envs x 32 steps runs two whole rollouts: 128 steps, shown as such."""
    command = ["train", "--steps", "100", "--n-envs", "2", "--n-steps", "32", "--batch-size", "32", "--width", "16", "--layers", "1"]
    result = runner.invoke(app, [*command, "--out", str(tmp_path / "m")])
    assert result.exit_code == 0, result.output
    shown = [re.match(r"^step (\d+) of (\d+) \((\d+)%\)", line) for line in result.output.splitlines()]
    shown = [match for match in shown if match]
    assert shown and all(int(m.group(2)) == 128 and int(m.group(1)) <= 128 and int(m.group(3)) <= 100 for m in shown)
