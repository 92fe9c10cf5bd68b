"""`graphtransfer tune` processes sharing a study: two tune processes at once on one study.db,
--n-jobs workers on a --storage URL that another folder then continues, a folder that belongs to
one study, trials left running by a killed search, sampler draws seeded by trial number, the
settings a trial ran with as its line says them, and the refusals that depend on the machine."""

import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import yaml
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.config import PPOConfig, RunConfig
from graphtransfer.graphs import load_graphs, write_edge_list
from graphtransfer.process import allowed_cores
from graphtransfer.training.samplers import make_sampler
from graphtransfer.training.tuning import _describe, sample, with_values

runner = CliRunner()
# one evaluation on two held-out graphs per trial of 32 steps, never pruned
TINY = ["--steps", "32", "--n-envs", "1", "--eval-every", "32", "--set", "ppo.n_epochs=1", "--sampler", "random", "--pruner", "none"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> list[str]:
    folder = tmp_path_factory.mktemp("held-out")
    for graph in load_graphs("small")[:2]:
        write_edge_list(graph, folder / f"{graph.name}.txt")
    return [*TINY, "--eval-graphs", str(folder)]


TRIAL_LINE = re.compile(r"^trial (\d+): score .*batch_size=(\d+)", re.MULTILINE)


def tune_process(*args: str, cwd: Path, preexec_fn=None) -> subprocess.Popen:
    code = "from graphtransfer.cli import main; main()"  # the console script's entry point
    command = [sys.executable, "-c", code, "tune", *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, preexec_fn=preexec_fn)


def _read_until(process: subprocess.Popen, text: str) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        if text in line:
            return
    raise AssertionError(f"the process ended before printing {text!r}: {process.communicate()}")


def pause_outside_a_write(process: subprocess.Popen, database: Path) -> None:
    """SIGSTOP ``process`` at a moment it holds no lock on the SQLite ``database``: paused inside a
    write, or inside a read (a shared lock, which a writer's commit waits for), it would keep every
    other process out; an exclusive lock is had only when it holds neither."""
    for _ in range(200):
        process.send_signal(signal.SIGSTOP)
        try:
            with sqlite3.connect(database, timeout=0.2) as connection:
                connection.execute("BEGIN EXCLUSIVE")
                connection.rollback()
            return
        except sqlite3.OperationalError:
            process.send_signal(signal.SIGCONT)
            time.sleep(0.05)
    raise AssertionError(f"{database} stayed locked")


def trials_of(storage: str, name: str = "graphtransfer") -> list:
    return optuna.load_study(study_name=name, storage=storage).trials


def assert_lines_say_what_ran(output: str, folder: Path) -> set[int]:
    """Every trial line's batch size is the one its run folder's config holds; the trial numbers."""
    numbers = set()
    for number, batch in TRIAL_LINE.findall(output):
        saved = yaml.safe_load((folder / "trials" / f"trial-{number}" / "config.yaml").read_text())
        assert saved["ppo"]["batch_size"] == int(batch), (
            f"trial {number}: the line says {batch}, the config holds {saved['ppo']['batch_size']}"
        )
        numbers.add(int(number))
    return numbers


@pytest.mark.slow
def test_two_tune_processes_at_once_share_one_study_db(tmp_path, tiny):
    """The case the one-writer lock refused: now both run, neither fails the other's running
    trial, no trial is drawn twice, and together they stop at --n-trials."""
    args = ["--out", "study", *tiny, "--n-trials", "4"]
    first, second = tune_process(*args, cwd=tmp_path), tune_process(*args, cwd=tmp_path)
    outputs = [process.communicate(timeout=600) for process in (first, second)]
    for process, (_, stderr) in zip((first, second), outputs, strict=True):
        assert process.returncode == 0, stderr
        assert "Traceback" not in stderr
    trials = trials_of(f"sqlite:///{tmp_path / 'study' / 'study.db'}")
    assert all(trial.state.name == "COMPLETE" for trial in trials), [trial.state.name for trial in trials]
    assert 4 <= len(trials) <= 5  # 5 only where both started their last trial at the same moment
    assert len({tuple(sorted(trial.params.items())) for trial in trials}) == len(trials)
    ran = [assert_lines_say_what_ran(stdout, tmp_path / "study") for stdout, _ in outputs]
    assert ran[0] and ran[1], "each process ran trials of its own"
    assert ran[0].isdisjoint(ran[1]) and ran[0] | ran[1] == {trial.number for trial in trials}


@pytest.mark.slow
def test_n_jobs_workers_on_a_storage_url_then_another_folder_goes_on(tmp_path, tiny):
    """Two worker processes under one command, their lines printed by it; the study, in a
    storage of its own, is continued by a tune with another --out, as on another machine."""
    storage = f"sqlite:///{tmp_path / 'shared.db'}"
    shared = ["--storage", storage, "--study-name", "mis-small", *tiny]
    result = runner.invoke(app, ["tune", "--out", str(tmp_path / "here"), *shared, "--n-trials", "3", "--n-jobs", "2"])
    assert result.exit_code == 0, result.output
    assert "running up to 3 more in 2 processes" in result.output
    assert len(assert_lines_say_what_ran(result.output, tmp_path / "here")) >= 3
    assert 3 <= len(trials_of(storage, "mis-small")) <= 4
    assert not (tmp_path / "here" / "study.db").exists()
    best = yaml.safe_load((tmp_path / "here" / "best.yaml").read_text())
    best_trial = optuna.load_study(study_name="mis-small", storage=storage).best_trial
    assert best["ppo"] == yaml.safe_load((tmp_path / "here" / "trials" / f"trial-{best_trial.number}" / "config.yaml").read_text())["ppo"]

    done = len(trials_of(storage, "mis-small"))
    there = runner.invoke(app, ["tune", "--out", str(tmp_path / "there"), *shared, "--n-trials", str(done + 1)])
    assert there.exit_code == 0, there.output
    assert f"{done} trials done, running up to 1 more" in there.output
    assert (tmp_path / "there" / "trials" / f"trial-{done}").is_dir() and len(trials_of(storage, "mis-small")) == done + 1


@pytest.mark.slow
def test_a_worker_failure_is_one_line_and_the_study_resumes(tmp_path, tiny):
    """Both forked workers fail at their first trial (its run folder cannot be made): one line, the
    trials marked failed rather than left running, and the same command goes on once the cause is gone."""
    out = tmp_path / "study"
    out.mkdir()
    optuna.create_study(study_name="graphtransfer", storage=f"sqlite:///{out / 'study.db'}", direction="maximize")
    (out / "trials").write_text("not a folder")
    args = ["tune", "--out", str(out), *tiny, "--n-trials", "2", "--n-jobs", "2"]
    failed = runner.invoke(app, args)
    assert failed.exit_code == 2, failed.stderr
    assert re.fullmatch(rf"error: --out {out}/trials/trial-[01]: {out}/trials is a file, not a folder, .*\n", failed.stderr)
    # FAIL; RUNNING where the stop reached the other worker while Optuna was marking its own failure:
    # the next search in this folder marks such a trial failed when it starts, as for a killed search.
    # On a busy machine the stop can reach the other worker before it has asked for a trial: one trial.
    states = [trial.state.name for trial in trials_of(f"sqlite:///{out / 'study.db'}")]
    assert len(states) in (1, 2) and "FAIL" in states and set(states) <= {"FAIL", "RUNNING"}

    (out / "trials").unlink()
    resumed = runner.invoke(app, args)
    assert resumed.exit_code == 0, resumed.output
    trials = trials_of(f"sqlite:///{out / 'study.db'}")
    before = len(states)
    assert [trial.state.name for trial in trials][:before] == ["FAIL"] * before
    assert [trial.state.name for trial in trials][before:] in (["COMPLETE", "COMPLETE"], ["COMPLETE", "COMPLETE", "COMPLETE"])
    assert assert_lines_say_what_ran(resumed.output, out) == {trial.number for trial in trials[before:]}
    assert len({tuple(sorted(trial.params.items())) for trial in trials}) == len(trials)


@pytest.mark.slow
def test_a_folder_belongs_to_one_study_and_a_killed_search_is_swept(tmp_path, tiny):
    """A study.db of an earlier release (no study.json) with a trial its killed search left running."""
    out = tmp_path / "study"
    out.mkdir()
    legacy = optuna.create_study(study_name="graphtransfer", storage=f"sqlite:///{out / 'study.db'}", direction="maximize")
    legacy.ask()  # trial 0, RUNNING, as a search killed mid-trial leaves it
    other = runner.invoke(app, ["tune", "--out", str(out), *tiny, "--n-trials", "1", "--study-name", "typo"])
    assert other.exit_code == 2
    assert other.stderr == (
        f"error: {out}: holds the trials of study 'graphtransfer' in its study.db; pass --study-name graphtransfer "
        "to go on with it, or another --out for this one\n"
    )
    assert [trial.state.name for trial in trials_of(f"sqlite:///{out / 'study.db'}")] == ["RUNNING"]

    resumed = runner.invoke(app, ["tune", "--out", str(out), *tiny, "--n-trials", "1"])
    assert resumed.exit_code == 0, resumed.output
    assert "trial 0: left running by a stopped search; marked failed" in resumed.output
    assert [trial.state.name for trial in trials_of(f"sqlite:///{out / 'study.db'}")] == ["FAIL", "COMPLETE"]


def test_a_study_name_the_storage_does_not_hold_is_named_with_those_it_does(tmp_path):
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    optuna.create_study(study_name="mis-small", storage=storage)
    result = runner.invoke(
        app, ["tune", "--out", str(tmp_path / "o"), "--storage", storage, "--study-name", "mis-smal", "--n-trials", "0", "--plot"]
    )
    assert result.exit_code == 2
    assert result.stderr == f"error: {storage}: no study named 'mis-smal' (it holds 'mis-small'); check --study-name\n"


def test_refusals_that_depend_on_the_machine(tmp_path):
    cores = allowed_cores()
    huge = runner.invoke(app, ["tune", "--out", str(tmp_path / "o"), "--n-jobs", "99999999999999999999"])
    assert huge.exit_code == 2
    assert huge.stderr == (
        f"error: --n-jobs 99999999999999999999 must be a whole number from 1 to {cores} (the cores this process may use): "
        "each job trains in a process of its own; more run on a Ray cluster (--ray-address)\n"
    )
    if cores >= 2:
        threads = runner.invoke(app, ["tune", "--out", str(tmp_path / "o"), "--n-jobs", "2", "--set", f"ppo.threads={cores}"])
        assert threads.exit_code == 2
        assert f"--n-jobs 2 with runtime.threads {cores} asks for {2 * cores} threads on {cores} cores" in threads.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("sqlite:////nonexistent-folder/sub/study.db", "cannot be opened as an Optuna study (unable to open database file)"),
        ("postgresql://tune:secret@127.0.0.1:1/studies", "postgresql://tune:***@127.0.0.1:1/studies"),
    ],
)
def test_a_storage_that_cannot_be_reached_is_one_line_within_seconds(tmp_path, url, said):
    """No postgres driver here: the driver is named; with one, nothing listens on port 1."""
    started = time.monotonic()
    result = runner.invoke(app, ["tune", "--out", str(tmp_path / "o"), "--storage", url, *TINY, "--n-trials", "1"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert said in result.stderr and "secret" not in result.stderr
    assert time.monotonic() - started < 30
    assert not (tmp_path / "o" / "trials").exists()


def test_each_trial_draws_from_a_sampler_seeded_by_its_number():
    """Processes sharing a study never repeat a draw (trial numbers are unique), and the same
    seed and trial number draw the same settings."""

    def first_draws(seed: int, skip: int) -> dict:
        study = optuna.create_study(sampler=make_sampler("tpe", seed))
        for _ in range(skip):
            study.tell(study.ask(), state=optuna.trial.TrialState.FAIL)
        return sample(study.ask())

    assert first_draws(0, 0) == first_draws(0, 0)
    assert first_draws(0, 0) != first_draws(0, 1)
    assert first_draws(0, 0) != first_draws(1, 0)


def test_a_batch_cut_to_the_rollout_is_said_as_it_ran():
    """The issue: the line showed 128, the config held 64."""
    drawn = {"ppo.n_steps": 16, "ppo.batch_size": 128}
    config = with_values(RunConfig(ppo=PPOConfig(n_envs=4)), drawn)
    assert config.ppo.batch_size == 64
    assert _describe(drawn, config) == "n_steps=16, batch_size=64 (128 drawn, cut to the rollout of 64)"
    assert with_values(config, {"ppo.batch_size": 32}).ppo.batch_size == 32


@pytest.mark.slow
def test_ctrl_c_stops_n_jobs_workers_with_one_line_and_no_trial_left_running(tmp_path):
    """Also where the command starts with SIGINT ignored (a background job of a shell without job
    control, as a CI runner may start the suite): Ctrl-C stops the search as it stops training."""
    command = ("--out", "s", "--steps", "1000000", "--n-envs", "1", "--n-trials", "4", "--n-jobs", "2")
    process = tune_process(*command, cwd=tmp_path, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    _read_until(process, "running up to")  # the study is made: reading it now cannot race its creation
    storage, deadline = f"sqlite:///{tmp_path / 's' / 'study.db'}", time.monotonic() + 300
    while time.monotonic() < deadline and sum(t.state.name == "RUNNING" for t in trials_of(storage)) < 2:  # both workers inside a trial
        time.sleep(1)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=300)
    assert process.returncode == 130
    assert stderr == "error: interrupted\n"
    assert [trial.state.name for trial in trials_of(storage)] == ["FAIL", "FAIL"]


@pytest.mark.parametrize("name", ["tpe", "random", "cmaes"])
def test_every_sampler_draws_new_settings_in_the_search_space(name):
    study = optuna.create_study(sampler=make_sampler(name, 0), direction="maximize")
    for _ in range(4):
        trial = study.ask()
        values = sample(trial)
        study.tell(trial, values["ppo.learning_rate"] * values["model.num_layers"])
    drawn = [trial.params for trial in study.trials]
    assert len({tuple(sorted(params.items())) for params in drawn}) == 4
    assert all(1e-5 <= params["ppo.learning_rate"] <= 3e-3 and 1 <= params["ppo.n_epochs"] <= 10 for params in drawn)


@pytest.mark.slow
def test_n_jobs_on_a_local_ray_cluster_run_the_study_with_more_jobs_than_cores(tmp_path, tiny, monkeypatch):
    """--ray-address: the workers are Ray tasks (here on a local instance), not bound by this
    process's cores; their lines reach this process, and the study is full at --n-trials."""
    pytest.importorskip("ray")
    monkeypatch.chdir(tmp_path)
    jobs = str(allowed_cores() + 1)
    result = runner.invoke(app, ["tune", "--out", "study", *tiny, "--n-trials", "3", "--n-jobs", jobs, "--ray-address", "local"])
    assert result.exit_code == 0, result.output
    assert f"running up to 3 more in {jobs} tasks on the Ray cluster local" in result.output
    trials = trials_of(f"sqlite:///{tmp_path / 'study' / 'study.db'}")
    assert [trial.state.name for trial in trials].count("COMPLETE") >= 3
    assert all(trial.state.name == "COMPLETE" for trial in trials), [trial.state.name for trial in trials]
    assert assert_lines_say_what_ran(result.output, tmp_path / "study") == {trial.number for trial in trials}
    assert (tmp_path / "study" / "best.yaml").is_file()


def test_more_jobs_than_cores_without_a_ray_cluster_is_one_line(tmp_path):
    jobs = str(allowed_cores() + 1)
    result = runner.invoke(app, ["tune", "--out", str(tmp_path / "s"), "--n-jobs", jobs])
    assert result.exit_code == 2 and "more run on a Ray cluster (--ray-address)" in result.output
    assert not (tmp_path / "s").exists()


def test_a_ray_address_where_no_cluster_answers_is_one_line_before_anything_is_written(tmp_path, tiny):
    pytest.importorskip("ray")
    result = runner.invoke(app, ["tune", "--out", str(tmp_path / "s"), *tiny, "--n-trials", "1", "--ray-address", "127.0.0.1:9"])
    assert result.exit_code == 2, result.output
    assert "--ray-address 127.0.0.1:9: no Ray cluster answers there" in result.output and "Traceback" not in result.output


@pytest.mark.slow
def test_the_tune_that_ends_last_writes_the_studys_best_and_one_ending_earlier_says_trials_were_running(tmp_path, tiny):
    """Two real processes on one study: the first is paused in a trial while the second ends (it
    says a trial was still running), then goes on and ends last, and best.yaml is the study's best
    of every trial."""
    args = ["--out", "study", *tiny]
    storage = f"sqlite:///{tmp_path / 'study' / 'study.db'}"
    last = tune_process(*args, "--n-trials", "3", cwd=tmp_path)
    _read_until(last, "trial 0: score")
    deadline = time.monotonic() + 120
    while not any(trial.state.name == "RUNNING" for trial in trials_of(storage)):  # its next trial has started
        assert time.monotonic() < deadline and last.poll() is None, "the second trial never started"
        time.sleep(0.05)
    pause_outside_a_write(last, tmp_path / "study" / "study.db")
    try:
        early = tune_process(*args, "--n-trials", "2", cwd=tmp_path)
        said, errors = early.communicate(timeout=300)
    finally:
        last.send_signal(signal.SIGCONT)
    assert early.returncode == 0, errors
    assert "1 trials of the study were still running in other processes" in said
    assert "1 still running in other processes" in (tmp_path / "study" / "best.yaml").read_text().splitlines()[0]
    _, errors = last.communicate(timeout=600)
    assert last.returncode == 0, errors
    study = optuna.load_study(study_name="graphtransfer", storage=storage)
    assert [trial.state.name for trial in study.trials] == ["COMPLETE"] * 3
    header = (tmp_path / "study" / "best.yaml").read_text().splitlines()[0]
    assert header.startswith(f"# best of 3 trials (trial {study.best_trial.number}, score {study.best_value:.6g});"), header
    best = yaml.safe_load((tmp_path / "study" / "best.yaml").read_text())
    trial_config = tmp_path / "study" / "trials" / f"trial-{study.best_trial.number}" / "config.yaml"
    assert best["ppo"] == yaml.safe_load(trial_config.read_text())["ppo"]


def test_a_study_db_another_process_keeps_locked_is_called_busy_not_damaged(tmp_path, tiny, monkeypatch):
    from graphtransfer.training import tuning

    folder = tmp_path / "study"
    folder.mkdir()
    optuna.create_study(study_name="graphtransfer", storage=f"sqlite:///{folder / 'study.db'}", direction="maximize")
    monkeypatch.setitem(tuning._CONNECT_ARGS, "sqlite", {"timeout": 0.3})
    with sqlite3.connect(folder / "study.db") as holder:
        holder.execute("BEGIN EXCLUSIVE")  # as a process paused inside a write holds it
        result = runner.invoke(app, ["tune", "--out", str(folder), *tiny, "--n-trials", "1"])
        holder.rollback()
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"error: {folder / 'study.db'}: another process kept the study's database locked for 0.3 s; it is busy or stopped "
        "(a paused job), not damaged: try again once it goes on or ends\n"
    )
