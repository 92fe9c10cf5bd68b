"""The process tuning of the command line: threads from the cores that are free and allowed,
OpenMP waiting passively, the user's own settings winning."""

import os
import subprocess
import sys

import pytest

from graphtransfer import process

ENV_PROBE = """
import os
{before}
print(os.environ.get("OMP_WAIT_POLICY", "unset"), os.environ.get("THP_MEM_ALLOC_ENABLE", "unset"))
"""


def env_probe(before: str, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "THP_MEM_ALLOC_ENABLE")}
    command = [sys.executable, "-c", ENV_PROBE.format(before=before)]
    return subprocess.run(command, capture_output=True, text=True, env={**environment, **env}, check=True).stdout.strip()


def test_import_changes_nothing_and_tuning_sets_passive_waiting_unless_the_user_chose():
    assert env_probe("import graphtransfer, graphtransfer.process") == "unset unset"
    assert env_probe("from graphtransfer.process import tune_process; tune_process()") == "PASSIVE 1"
    assert env_probe("from graphtransfer.process import tune_process; tune_process(solving=True)") == "PASSIVE 0"
    assert env_probe("from graphtransfer.process import tune_process; tune_process()", OMP_WAIT_POLICY="ACTIVE") == "ACTIVE 1"


def test_the_cli_tunes_its_process_before_any_command():
    probe = "from typer.testing import CliRunner; from graphtransfer.cli import app; CliRunner().invoke(app, ['tasks'])"
    assert env_probe(probe) == "PASSIVE 1"


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU affinity is a Linux setting")
def test_free_cores_honour_the_affinity_mask():
    probe = (
        "import os; os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}); "
        "from graphtransfer import process; print(process.allowed_cores(), process.free_cores())"
    )
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split() == ["1", "1"]


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="reads Linux's run queue")
def test_a_busy_process_is_counted_and_leaves_at_least_one_core():
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        for _ in range(100):  # until the busy loop is running
            if process.busy_elsewhere() >= 1:
                break
        assert process.busy_elsewhere() >= 1
        assert 1 <= process.free_cores() <= max(1, process.allowed_cores() - 1)
    finally:
        busy.kill()
        busy.wait()
