"""Bad commands and options (issue 29): each is one ``error:`` line with exit code 2, never a
traceback. The refusals make the "Commands and options" section of tests/BAD_MODELS.md, which
``GRAPHTRANSFER_WRITE_BAD_INPUTS=1`` rewrites; the other tests here need a process of their own
(a lock held, Ctrl-C) or check what a command does besides refusing."""

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import optuna
import pytest
import torch
from filelock import FileLock
from typer.testing import CliRunner

from graphtransfer.checkpoint import CONFIG, save_checkpoint
from graphtransfer.cli import app
from graphtransfer.config import RunConfig
from graphtransfer.graphs import erdos_renyi, read_graph
from graphtransfer.io import LOCK_NAME
from graphtransfer.nn import build_policy
from graphtransfer.tasks.path.env import PathEnv
from tests.test_bad_models import BAD_INPUTS, MODEL, command_line, edit_config, replace_section, save_model

runner = CliRunner()
SECTION = "## Commands and options"
GRAPH = "0 1\n1 2\n2 3\n3 0\n"
NO_EDGES = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 0\n"
# a user env whose edge lengths hold a NaN in row 2
NANENV = """
import numpy as np
from graphtransfer.tasks.path.env import PathEnv


class NanPath(PathEnv):
    def _edge_features(self, edges):
        lengths = super()._edge_features(edges).copy()
        lengths[2, 0] = np.nan
        return lengths
"""


def path_model(folder: str, info=None) -> Path:
    """A path (node-choice, edge features) model folder with constant weights."""
    env = PathEnv([erdos_renyi(12, 3.0, 0)])
    policy = build_policy("node-choice", MODEL, env.observation_space, env.action_space)
    with torch.no_grad():
        for parameter in policy.parameters():
            parameter.fill_(0.01)
    return save_checkpoint(folder, policy, RunConfig(task="path", head="node-choice", model=MODEL), info)


def deep_config(folder: str) -> None:
    """A config.json nested 100,000 deep (json.loads raised RecursionError)."""
    save_model(folder, RunConfig(head="node-wise", model=MODEL))
    (Path(folder) / CONFIG).write_text("[" * 100_000 + "]" * 100_000)


def damaged_study(folder: str, keep: int | None) -> None:
    """A study.db cut to its first ``keep`` bytes (None: a folder named study.db)."""
    study = Path(folder) / "study.db"
    Path(folder).mkdir()
    if keep is None:
        study.mkdir()
        return
    optuna.create_study(study_name="graphtransfer", storage=f"sqlite:///{study.resolve()}")
    study.write_bytes(study.read_bytes()[:keep])


@dataclass
class Case:
    input: str
    make: object
    args: list
    env: dict | None = None


def predicting(model: str, *extra: str) -> list[str]:
    return ["predict", "--model", model, "--graph", "graph.txt", "--out", "out.csv", *extra]


CASES = [
    Case(
        'config.json: `format_version` the string "2"',
        lambda: edit_config("v-text", lambda m: m.update(format_version="2")),
        predicting("v-text"),
    ),
    Case(
        "config.json: `format_version` true", lambda: edit_config("v-true", lambda m: m.update(format_version=True)), predicting("v-true")
    ),
    Case("config.json nested 100,000 deep", lambda: deep_config("deep-json"), predicting("deep-json")),
    Case(
        "config.json: `algo` dqn with a node-wise head",
        lambda: save_model("dqn-wise", RunConfig(algo="dqn", head="node-wise", model=MODEL)),
        predicting("dqn-wise"),
    ),
    Case(
        "predict `--rollouts 1000000000`",
        lambda: save_model("mis", RunConfig(head="node-wise", model=MODEL)),
        predicting("mis", "--rollouts", "1000000000"),
    ),
    Case("predict `--max-passes 0`", lambda: None, predicting("mis", "--max-passes", "0")),
    Case("eval `--max-passes 0`", lambda: None, ["eval", "--model", "mis", "--graphs", "graph.txt", "--max-passes", "0"]),
    Case(
        "transfer `--max-passes 0`", lambda: None, ["transfer", "--src", "mis", "--dst", "graph.txt", "--out", "moved", "--max-passes", "0"]
    ),
    Case("predict `--max-passes 10^7`", lambda: None, predicting("mis", "--max-passes", "10000000")),
    Case("a memory limit of -1 MiB", lambda: None, predicting("mis"), {"GRAPHTRANSFER_MEMORY_LIMIT_MB": "-1"}),
    Case("a memory limit that is not a number", lambda: None, predicting("mis"), {"GRAPHTRANSFER_MEMORY_LIMIT_MB": "lots"}),
    Case(
        "`graphs generate` 2^31 - 1 nodes",
        lambda: None,
        ["graphs", "generate", "--nodes", "2147483647", "huge.npz"],
        {"GRAPHTRANSFER_MEMORY_LIMIT_MB": "65536"},
    ),
    Case(
        "`graphs generate` beyond the memory limit",
        lambda: None,
        ["graphs", "generate", "--nodes", "1000000", "million.npz"],
        {"GRAPHTRANSFER_MEMORY_LIMIT_MB": "100"},
    ),
    Case(
        "path on a graph with no edges",
        lambda: (path_model("path-model"), Path("none.mtx").write_text(NO_EDGES)),
        ["predict", "--model", "path-model", "--graph", "none.mtx", "--out", "out.csv"],
    ),
    Case(
        "`--commit-fraction` where the decoding ignores it (path, drawn)",
        lambda: None,
        ["predict", "--model", "path-model", "--graph", "graph.txt", "--out", "out.csv", "--commit-fraction", "0.5", "--decoding", "drawn"],
    ),
    Case("predict `--kernel-every` with `--no-reductions`", lambda: None, predicting("mis", "--kernel-every", "2", "--no-reductions")),
    Case("predict `--kernel-every` on a task without a kernel (path)", lambda: None, predicting("path-model", "--kernel-every", "2")),
    Case("predict `--no-reductions` on a task without exact rules (path)", lambda: None, predicting("path-model", "--no-reductions")),
    Case("predict `--node-order` on a task never renumbered (path)", lambda: None, predicting("path-model", "--node-order", "given")),
    Case("predict `--deterministic` under local-max, which draws nothing", lambda: None, predicting("mis", "--deterministic")),
    Case("predict `--mixed-precision` on the CPU", lambda: None, predicting("mis", "--mixed-precision")),
    Case(
        "eval `--kernel-every` with `--no-reductions`",
        lambda: None,
        ["eval", "--model", "mis", "--graphs", "graph.txt", "--kernel-every", "0", "--no-reductions"],
    ),
    Case(
        "eval `--polish` on a task without a local search (path)",
        lambda: None,
        ["eval", "--model", "path-model", "--graphs", "graph.txt", "--polish"],
    ),
    Case("eval `--mixed-precision` on the CPU", lambda: None, ["eval", "--model", "mis", "--graphs", "graph.txt", "--mixed-precision"]),
    Case(
        "transfer `--mixed-precision` on the CPU",
        lambda: None,
        ["transfer", "--src", "mis", "--dst", "graph.txt", "--out", "moved", "--mixed-precision", "--device", "cpu"],
    ),
    Case(
        "eval `--ray-address` where no cluster answers",
        lambda: None,
        ["eval", "--model", "mis", "--graphs", "graph.txt", "--ray-address", "127.0.0.1:1"],
    ),
    Case(
        "train `--vec-env ray` where no cluster answers",
        lambda: None,
        [
            "train",
            "--vec-env",
            "ray",
            "--ray-address",
            "127.0.0.1:1",
            "--steps",
            "64",
            "--n-envs",
            "2",
            "--out",
            "ray-run",
            "--no-progress",
        ],
    ),
    Case(
        "eval `--ray-address` that is no address",
        lambda: None,
        ["eval", "--model", "mis", "--graphs", "graph.txt", "--ray-address", "cluster"],
    ),
    Case(
        "tune: study.db of random bytes",
        lambda: (Path("noise").mkdir(), Path("noise/study.db").write_bytes(os.urandom(4096))),
        ["tune", "--out", "noise", "--n-trials", "1"],
    ),
    Case("tune: study.db cut short", lambda: damaged_study("cut", 4096), ["tune", "--out", "cut", "--n-trials", "1"]),
    Case("tune: study.db a folder", lambda: damaged_study("folder", None), ["tune", "--out", "folder", "--n-trials", "1"]),
    Case("tune `--plot`: study.db cut short", lambda: None, ["tune", "--out", "cut", "--n-trials", "0", "--plot"]),
    Case(
        "tune `--plot`: study.db empty",
        lambda: (Path("empty").mkdir(), Path("empty/study.db").write_bytes(b"")),
        ["tune", "--out", "empty", "--n-trials", "0", "--plot"],
    ),
    Case("tune `--n-jobs` that is no number", lambda: None, ["tune", "--out", "jobs", "--n-jobs", "two"]),
    Case("tune `--n-jobs 0`", lambda: None, ["tune", "--out", "jobs", "--n-jobs", "0"]),
    Case("tune `--n-jobs nan`", lambda: None, ["tune", "--out", "jobs", "--n-jobs", "nan"]),
    Case("tune `--n-jobs -1`", lambda: None, ["tune", "--out", "jobs", "--n-jobs", "-1"]),
    Case("tune `--sampler` unknown", lambda: None, ["tune", "--out", "jobs", "--sampler", "grid"]),
    Case("tune `--pruner` unknown", lambda: None, ["tune", "--out", "jobs", "--pruner", "hyperband"]),
    Case("tune `--timeout nan`", lambda: None, ["tune", "--out", "jobs", "--timeout", "nan"]),
    Case("tune `--study-name` empty", lambda: None, ["tune", "--out", "jobs", "--study-name", ""]),
    Case("tune `--storage` that is a file name, not a URL", lambda: None, ["tune", "--out", "jobs", "--storage", "study.db"]),
    Case("tune `--storage` of an unknown database", lambda: None, ["tune", "--out", "jobs", "--storage", "foo://host/db"]),
    Case("tune `--storage` in memory", lambda: None, ["tune", "--out", "jobs", "--storage", "sqlite://"]),
    Case(
        "tune `--storage` with a port that is no number",
        lambda: None,
        ["tune", "--out", "jobs", "--storage", "postgresql://me:secret@db-host:port/studies"],
    ),
    Case(
        "a user env whose edge_attr holds NaN",
        lambda: Path("nanenv.py").write_text(NANENV),
        ["train", "--env", "nanenv:NanPath", "--steps", "64", "--n-envs", "2", "--out", "nan-run", "--no-progress"],
    ),
]


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    """Each case run once through the CLI in a fresh working folder: ``{input: result}``."""
    work = tmp_path_factory.mktemp("bad-runs")
    results = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)
        patch.syspath_prepend(str(work))
        patch.setenv("GRAPHTRANSFER_CACHE", str(work / "cache"))
        patch.delenv("RAY_ADDRESS", raising=False)
        Path("graph.txt").write_text(GRAPH)
        for case in CASES:
            case.make()
            started = time.monotonic()
            results[case.input] = runner.invoke(app, case.args, env=case.env)
            results[case.input].seconds = time.monotonic() - started
            assert not Path("out.csv").exists(), f"{case.input}: wrote an output though refused"
        assert not Path("huge.npz").exists() and not Path("million.npz").exists()
    return results


@pytest.mark.parametrize("case", CASES, ids=[case.input for case in CASES])
def test_each_is_one_line_and_exit_code_2(refused, case):
    result = refused[case.input]
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.output


def test_the_messages_say_what_is_wrong(refused):
    def said(case: str) -> str:
        return refused[case].stderr.strip()

    assert 'format_version is "2"; expected an integer (1 or 2)' in said('config.json: `format_version` the string "2"')
    assert "format_version is true; expected an integer" in said("config.json: `format_version` true")
    assert "rewritten by another process" not in said("config.json: `format_version` true")
    assert "nests its values too deeply" in said("config.json nested 100,000 deep")
    assert "algo 'dqn' with a node-wise head; DQN models have a node-choice or edge-choice head" in said(
        "config.json: `algo` dqn with a node-wise head"
    )
    for option in ("predict", "eval", "transfer"):
        assert said(f"{option} `--max-passes 0`") == "error: Decoding.max_passes (--max-passes): 0 must be at least 1"
    assert said("a memory limit of -1 MiB").startswith("error: $GRAPHTRANSFER_MEMORY_LIMIT_MB='-1' is not a positive number of MiB")
    unlimited = runner.invoke(app, ["graphs", "generate", "--nodes", "2147483647", "huge.npz"])  # the machine's own memory
    assert unlimited.exit_code == 2 and "needs about 1408.0 GiB, but" in unlimited.stderr
    assert "no Ray cluster answers there (Connection refused)" in said("eval `--ray-address` where no cluster answers")
    assert "no Ray cluster answers there" in said("train `--vec-env ray` where no cluster answers")
    assert said("tune: study.db cut short").startswith("error: cut/study.db: is not a readable Optuna study (")
    assert said("tune: study.db cut short").endswith("move it away (or pass another --out) to start a new study")
    assert said("tune: study.db a folder") == (
        "error: folder/study.db: is a folder, not a study file; move it away (or pass another --out) to start a new study"
    )
    assert "observation key 'edge_attr' holds nan at row 2" in said("a user env whose edge_attr holds NaN")
    assert "secret" not in said("tune `--storage` with a port that is no number")
    assert not Path("jobs").exists()  # every tune option is refused before the output folder is made
    assert "PathEnv (node-choice head) names no step_many" in said("`--commit-fraction` where the decoding ignores it (path, drawn)")


def test_an_unreachable_cluster_is_refused_within_seconds(refused):
    """Ray itself retried for minutes before its traceback."""
    assert refused["eval `--ray-address` where no cluster answers"].seconds < 30


def test_the_commands_and_options_table_is_current(refused):
    rows = [f"| {case.input} | `{command_line(case)}` | `{refused[case.input].stderr.strip()}` |" for case in CASES]
    intro = [
        "Every command below exits with code 2 and the one line shown, instead of a traceback, a hang or a silent",
        "default (issue 29). Generated from the real messages by `GRAPHTRANSFER_WRITE_BAD_INPUTS=1 .venv/bin/python -m",
        "pytest tests/test_bad_runs.py`; that test fails when this section is out of date. Tested beside it: a `tune`",
        "beside a process that holds its folder's lock without sharing it is refused (tune processes share a study:",
        "tests/test_tune_sharing.py), Ctrl-C in `tune` prints only `error: interrupted`, a resumed study samples new",
        "settings, `export` of an interrupted run says so, uint64 node ids above int64 stay exact, and METIS lists that",
        "are symmetric but repeat an edge are not called asymmetric.",
    ]
    section = "\n".join([SECTION, "", *intro, "", "| input | command | message |", "|---|---|---|", *rows, ""])
    text = BAD_INPUTS.read_text()
    updated = replace_section(text, section, SECTION)
    if os.environ.get("GRAPHTRANSFER_WRITE_BAD_INPUTS"):
        BAD_INPUTS.write_text(updated)
        text = updated
    assert updated == text, "tests/BAD_MODELS.md is out of date; run GRAPHTRANSFER_WRITE_BAD_INPUTS=1 pytest tests/test_bad_runs.py"


def test_a_tune_beside_one_that_does_not_share_the_study_is_refused_and_touches_nothing(tmp_path):
    """The lock held exclusively, as a tune of an earlier release holds it (tune processes of this
    one share it: tests/test_tune_sharing.py): the second process stops before opening the study,
    so it cannot mark the first one's running trial failed."""
    folder = tmp_path / "study"
    folder.mkdir()
    with FileLock(folder / LOCK_NAME, timeout=0):
        result = runner.invoke(app, ["tune", "--out", str(folder), "--n-trials", "1", "--steps", "64"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {folder}: another process holds {folder / LOCK_NAME} and does not share the study (a 'graphtransfer tune' of "
        "an earlier release); wait for it to finish, or pass another --out\n"
    )
    assert not (folder / "study.db").exists() and not (folder / "trials").exists()


@pytest.mark.slow
def test_a_resumed_study_samples_new_settings(tmp_path):
    """The sampler was seeded alike on every run, so a resumed study's first trial repeated the first one's settings."""
    tiny = ["tune", "--out", str(tmp_path / "study"), "--steps", "32", "--n-envs", "1", "--eval-every", "32", "--set", "ppo.n_epochs=1"]
    for trials in ("1", "2"):
        result = runner.invoke(app, [*tiny, "--n-trials", trials])
        assert result.exit_code == 0, result.output
    trials = optuna.load_study(study_name="graphtransfer", storage=f"sqlite:///{tmp_path / 'study' / 'study.db'}").trials
    assert len(trials) == 2 and trials[0].params != trials[1].params


@pytest.mark.slow
@pytest.mark.parametrize("stop", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "stopped by SIGTERM")])
def test_ctrl_c_in_tune_prints_one_line_and_no_traceback(tmp_path, stop):
    """Ctrl-C, and SIGTERM alike: the running trial is marked failed (the study goes on from there), one line, no traceback."""
    signum, exit_code, said = stop
    code = "from graphtransfer.cli import main; main()"  # the console script's entry point
    command = [sys.executable, "-c", code, "tune", "--out", str(tmp_path / "s"), "--steps", "1000000", "--n-trials", "2"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    assert "running up to 2 more" in _read_until(process, "running up to")
    time.sleep(3)  # into the first trial's training
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == exit_code
    assert stderr == f"error: {said}\n"


def _read_until(process: subprocess.Popen, text: str) -> str:
    lines = []
    for line in process.stdout:
        lines.append(line)
        if text in line:
            return "".join(lines)
    raise AssertionError(f"the process ended before printing {text!r}: {''.join(lines)}")


def test_export_of_an_interrupted_run_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save_model("stopped", RunConfig(head="node-wise", model=MODEL), info={"training": {"steps": 96, "budget": 30000, "complete": False}})
    result = runner.invoke(app, ["export", "--model", "stopped", "--sb3", "stopped.zip"])
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "warning: stopped holds a training run interrupted at step 96 of 30000; the export holds the policy as it was then "
        "(graphtransfer train --resume stopped finishes the run)\n"
    )
    save_model("finished", RunConfig(head="node-wise", model=MODEL), info={"training": {"steps": 30016, "complete": True}})
    assert runner.invoke(app, ["export", "--model", "finished", "--sb3", "finished.zip"]).stderr == ""


def test_uint64_node_ids_above_int64_stay_exact(tmp_path, monkeypatch):
    """They were cast to int64 and shown (and written) as -1."""
    monkeypatch.chdir(tmp_path)
    ids = np.array([5, 2**64 - 1, 7], dtype=np.uint64)
    np.savez("u64.npz", edge_index=np.array([[0, 1], [1, 2]]), node_ids=ids)
    info = runner.invoke(app, ["graphs", "info", "u64.npz"])
    assert info.exit_code == 0 and "node ids  names, e.g. '5', '18446744073709551615', '7'" in info.output
    save_model("mis", RunConfig(head="node-wise", model=MODEL))
    predicted = runner.invoke(app, ["predict", "--model", "mis", "--graph", "u64.npz", "--out", "u64.csv"])
    assert predicted.exit_code == 0, predicted.output
    assert [row.split(",")[0] for row in Path("u64.csv").read_text().splitlines()[1:]] == ["5", "18446744073709551615", "7"]


def test_metis_lists_symmetric_but_repeating_an_edge_are_not_called_asymmetric(tmp_path):
    """A 4-cycle whose first edge is listed twice from both ends: ten entries, as m = 5 asks."""
    path = tmp_path / "c4.graph"
    path.write_text("4 5\n2 2 4\n1 1 3\n2 4\n1 3\n")
    with pytest.warns(UserWarning) as caught:
        graph = read_graph(path)
    assert graph.num_edges == 4
    assert [str(w.message) for w in caught] == [
        f"{path}: the lists repeat some neighbours or list self-loops; read 4 edges, the header declares 5"
    ]
    plain = tmp_path / "plain.graph"
    plain.write_text("4 4\n2 4\n1 3\n2 4\n1 3\n")
    assert read_graph(plain).num_edges == 4
