"""SIGTERM (what Slurm, Kubernetes, `timeout` and a closing terminal send) stops a long command as
Ctrl-C does, with real signals to real processes: transfer's fine-tuning and adaptation save what
they can and say so; predict and eval on a folder keep what they wrote; one line, exit 143."""

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphtransfer.checkpoint import CONFIG
from graphtransfer.graphs import erdos_renyi, write_npz

MAIN = [sys.executable, "-c", "from graphtransfer.cli import main; main()"]


def start(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([*MAIN, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop_once_said(process: subprocess.Popen, text: str) -> tuple[str, str]:
    """SIGTERM once ``process`` prints a line holding ``text``; what it printed, all of it."""
    assert process.stdout is not None
    seen = []
    try:
        for line in process.stdout:
            seen.append(line)
            if text in line:
                process.send_signal(signal.SIGTERM)
                break
        stdout, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    return "".join(seen) + stdout, stderr


@pytest.fixture
def destination(tmp_path) -> Path:
    write_npz(erdos_renyi(80, 4.0, 3), tmp_path / "er80.npz")
    return tmp_path / "er80.npz"


@pytest.mark.slow
def test_sigterm_while_fine_tuning_saves_the_model_fine_tuned_so_far(tmp_path, destination):
    process = start(["transfer", "--src", "mis", "--dst", str(destination), "--finetune-steps", "1000000", "--out", "moved"], tmp_path)
    stdout, stderr = stop_once_said(process, "fine-tuning 1000000 steps")
    assert process.returncode == 143, stderr
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert stderr.startswith("stopped by SIGTERM during fine-tuning at step ")
    assert stderr.endswith(" of 1000000; saved the model fine-tuned so far (not evaluated after) in moved\n")
    assert "zero-shot on the destination graphs" in stdout
    meta = json.loads((tmp_path / "moved" / CONFIG).read_text())
    assert meta["transferred"]["finetune"]["stopped"] is True and meta["transferred"]["finetune"]["after"] == []


@pytest.mark.slow
def test_sigterm_while_adapting_saves_the_zero_shot_model_and_says_so(tmp_path, destination):
    process = start(["transfer", "--src", "mis", "--dst", str(destination), "--adapt", "600", "--out", "moved"], tmp_path)
    stdout, stderr = stop_once_said(process, "adapting on ")
    assert process.returncode == 143, stderr
    assert stderr.startswith("stopped by SIGTERM during adapting after ") and stderr.count("\n") == 1
    assert stderr.endswith("; saved the zero-shot model in moved (adapted weights are kept only once evaluated)\n")
    meta = json.loads((tmp_path / "moved" / CONFIG).read_text())
    assert meta["transferred"]["adapt"]["stopped"] is True


@pytest.mark.slow
def test_sigterm_in_predict_on_a_folder_keeps_the_csvs_written_and_says_how_many(tmp_path):
    (tmp_path / "many").mkdir()
    for index in range(8):
        write_npz(erdos_renyi(3000, 6.0, index), tmp_path / "many" / f"g{index}.npz")
    process = start(["predict", "--model", "mis", "--graph", "many", "--out", "solutions", "--rollouts", "2"], tmp_path)
    deadline = time.monotonic() + 120
    try:
        while not list((tmp_path / "solutions").glob("*.csv")):  # the first graph's CSV is written as it is solved
            assert time.monotonic() < deadline and process.poll() is None, process.communicate()
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 143, stderr
    said = re.fullmatch(r"error: stopped by SIGTERM; the CSVs of the (\d) of 8 graphs solved before are in solutions\n", stderr)
    assert said, stderr
    written = sorted((tmp_path / "solutions").glob("*.csv"))
    assert 1 <= len(written) == int(said.group(1)) < 8
    for path in written:  # whole files, never half of one
        assert len(path.read_text().splitlines()) == 3001


@pytest.mark.slow
def test_sigterm_in_eval_on_a_folder_shows_and_writes_the_rows_finished(tmp_path):
    (tmp_path / "many").mkdir()
    for index in range(60):
        write_npz(erdos_renyi(3000, 6.0, index), tmp_path / "many" / f"g{index:02d}.npz")
    process = start(["eval", "--model", "mis", "--graphs", "many", "--rollouts", "2", "--json", "rows.json"], tmp_path)
    time.sleep(8)  # a few graphs in (a graph takes about a second, the start a few), far from the last
    process.send_signal(signal.SIGTERM)
    try:
        stdout, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 143, stderr
    said = re.fullmatch(r"error: stopped by SIGTERM after (\d+) of 60 graphs(; wrote their rows to rows\.json)?\n", stderr)
    assert said, stderr
    finished = int(said.group(1))
    assert 0 < finished < 60, "the signal came before the first graph or after the last; the timing needs a look"
    rows = json.loads((tmp_path / "rows.json").read_text())
    assert [row["graph"] for row in rows] == [f"g{index:02d}.npz" for index in range(finished)]
    assert all(f"g{index:02d}.npz" in stdout for index in range(finished))
