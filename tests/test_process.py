"""The process tuning of the command line: threads from the cores that are free and allowed,
OpenMP waiting passively, the user's own settings winning."""

import os
import subprocess
import sys
from pathlib import Path

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


FREEZE_PROBE = """
import gc, sys
from graphtransfer.cli import main
import graphtransfer.solve.predict as predict
solve = predict.predict_with
def recorded(*args, **kwargs):
    print("frozen before the solve:", gc.get_freeze_count() > 0)
    return solve(*args, **kwargs)
predict.predict_with = recorded
sys.argv = ["graphtransfer", *sys.argv[1:]]
try:
    main()
except SystemExit as exit:
    print("exit", exit.code, "frozen at the end:", gc.get_freeze_count() > 0)
"""


def test_the_cli_leaves_what_it_loaded_out_of_the_collectors_passes(tmp_path):
    """gc.freeze before the solve (its full passes would visit every imported object) and again as
    the command line exits; before any command nothing is frozen, and the solution is whole."""
    graph = os.path.join(os.path.dirname(__file__), "..", "sample_graphs", "small", "ba-20.txt")
    out = tmp_path / "set.csv"
    command = [sys.executable, "-c", "import gc; assert gc.get_freeze_count() == 0" + "\n" + FREEZE_PROBE]
    command += ["predict", "--model", "mis", "--graph", graph, "--out", str(out)]
    printed = subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines()
    assert "frozen before the solve: True" in printed
    assert printed[-1] == "exit 0 frozen at the end: True"
    assert len(out.read_text().splitlines()) == 1 + 20  # a header and a row per node, flushed before the exit
    listed = subprocess.run(command[:3] + ["tasks"], capture_output=True, text=True, check=True).stdout.splitlines()
    assert listed[-1] == "exit 0 frozen at the end: True"  # a command with no solve: frozen only as it exits


COMPILER_PROBE = """
import sys
from graphtransfer.cli import main
sys.argv = ["graphtransfer", "predict", "--model", "mis", "--graph", {graph!r}, "--out", {out!r}]
try:
    main()
except SystemExit as stop:
    assert not stop.code, stop.code
print("after predict:", type(sys.modules["torch._dynamo"]).__name__)
import inspect
import torch
assert inspect.getmodule(torch.nn.Linear) is torch.nn.modules.linear  # reads every module's __file__
import torch._dynamo as dynamo  # the stand-in itself: its names come from the real module
assert dynamo.OptimizedModule is sys.modules["torch._dynamo"].OptimizedModule
compiled = torch.compile(torch.nn.Linear(2, 2))
import torch._dynamo.config
from torch_geometric.isinstance import is_torch_instance
print("after compile:", type(sys.modules["torch._dynamo"]).__name__, isinstance(compiled, torch._dynamo.OptimizedModule),
      is_torch_instance(compiled, torch.nn.Linear), torch._dynamo.config is sys.modules["torch._dynamo.config"])
"""


def test_predict_never_loads_torchs_compiler_and_it_loads_whole_when_used(tmp_path):
    graph, out = "sample_graphs/small/ba-20.txt", str(tmp_path / "set.csv")
    probe = COMPILER_PROBE.format(graph=graph, out=out)
    lines = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.splitlines()
    assert "after predict: _DeferredModule" in lines
    assert lines[-1] == "after compile: module True True True"
    assert (tmp_path / "set.csv").is_file()


ADAM_STEPS = """
import torch

def adam_steps(compiled):
    torch.manual_seed(0)
    weight = torch.nn.Parameter(torch.randn(4))
    optimizer = torch.optim.Adam([weight], lr=0.1)
    def step():
        optimizer.zero_grad()
        (weight**2).sum().backward()
        optimizer.step()
    run = torch.compile(step, backend="eager") if compiled else step
    for _ in range(3):
        run()
    return weight.detach().tolist()
"""

TRAINING_PROBE = (
    """
import sys
from graphtransfer.cli import main
sys.argv = ["graphtransfer", "train", "--task", "mis", "--graphs", "small", "--steps", "128", "--n-envs", "2", "--no-progress",
            "--out", {out!r}]
try:
    main()
except SystemExit as stop:
    assert not stop.code, stop.code
print("after train:", type(sys.modules["torch._dynamo"]).__name__)
"""
    + ADAM_STEPS
    + """
plain = adam_steps(False)  # its optimizer made and stepped with the compiler still deferred
print("after plain steps:", type(sys.modules["torch._dynamo"]).__name__)
compiled = adam_steps(True)  # made before the compiler loads, stepped inside a compiled function
import torch._dynamo
print("after compile:", type(sys.modules["torch._dynamo"]).__name__, torch._dynamo.disable is sys.modules["torch._dynamo"].disable)
print(plain, compiled)
"""
)


def test_training_never_loads_torchs_compiler_and_an_optimizer_made_before_it_steps_as_torchs_own(tmp_path):
    """torch's optimizers read ``disable`` and ``graph_break`` of the compiler when made and at every step; the stand-in
    answers them as they behave outside a compilation, so ``train`` runs without loading it (1.3-1.5 s), and an
    optimizer made before it loads then steps, compiled or not, to the very values it reaches in a process that
    imported the compiler from the start."""
    probe = TRAINING_PROBE.format(out=str(tmp_path / "model"))
    lines = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.splitlines()
    assert "after train: _DeferredModule" in lines and "after plain steps: _DeferredModule" in lines
    assert lines[-2] == "after compile: module True"
    reference = ADAM_STEPS + "import torch._dynamo\nprint(adam_steps(False), adam_steps(True))"
    assert lines[-1] == subprocess.run([sys.executable, "-c", reference], capture_output=True, text=True, check=True).stdout.strip()
    assert list((tmp_path / "model").glob("model-*.safetensors"))


DISABLE_PROBE = """
import sys
from graphtransfer.process import defer_compiler_import, COMPILER
defer_compiler_import()
import torch, torch._dynamo

class Env:
    scale = 3

    @torch._dynamo.disable
    def step(self, x):
        "Steps."
        return self.scale * x

env = Env()
print(env.step(2), Env.step.__name__, Env.step.__doc__, type(sys.modules[COMPILER]).__name__)
import torch._dynamo.config  # loads the compiler: the same method now goes through torch's own disable
print(env.step(5), type(sys.modules[COMPILER]).__name__)
"""


def test_a_method_disabled_before_the_compiler_loads_binds_and_steps_as_with_torchs_own():
    """A user's env module may decorate a method with ``torch._dynamo.disable`` while the stand-in is in place: what
    it gets back is a function like the method (it binds ``self``, keeps its name and docstring), before the compiler
    loads and after."""
    lines = subprocess.run([sys.executable, "-c", DISABLE_PROBE], capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines == ["6 step Steps. _DeferredModule", "15 module"]


def test_importing_the_package_and_pyg_defers_nothing():
    probe = "import sys, graphtransfer, graphtransfer.process, torch_geometric; print(type(sys.modules['torch._dynamo']).__name__)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip() == "module"


def test_a_loaded_policy_builds_no_optimizer():
    """The weights of a loaded policy are for solving (its optimizer would have run at learning rate 0); fine-tuning and
    adaptation build an algorithm of their own, optimizer included (tests/test_transfer*.py train through it)."""
    from graphtransfer.nn.policy import NoOptimizer
    from graphtransfer.solve.loading import load_policy

    policy, env = load_policy("mis", "sample_graphs/small/ba-20.txt")
    env.close()
    assert isinstance(policy.optimizer, NoOptimizer)


THREADS_PROBE = """
import sys, threading
from graphtransfer.process import defer_compiler_import, COMPILER
defer_compiler_import()
defer_compiler_import()  # twice: the same stand-in
import torch_geometric, torch
stand_in = sys.modules[COMPILER]
found = []
readers = [threading.Thread(target=lambda: found.append(stand_in.OptimizedModule)) for _ in range(4)]
for reader in readers:
    reader.start()
for reader in readers:
    reader.join()
real = sys.modules[COMPILER]
print(type(stand_in).__name__, type(real).__name__, len(found), len({id(cls) for cls in found}), found[0] is real.OptimizedModule)
"""


def test_readers_in_several_threads_load_the_compiler_once():
    lines = subprocess.run([sys.executable, "-c", THREADS_PROBE], capture_output=True, text=True, check=True).stdout.split()
    assert lines == ["_DeferredModule", "module", "4", "1", "True"]


def test_a_process_that_imported_the_compiler_keeps_it():
    probe = (
        "import sys, torch._dynamo; real = sys.modules['torch._dynamo']; "
        "from graphtransfer.process import tune_process; tune_process(); print(sys.modules['torch._dynamo'] is real)"
    )
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip() == "True"


def test_every_command_runs_with_the_compiler_deferred(tmp_path):
    """The commands as users start them, each its own process with the stand-in installed: training (whose optimizer
    reads two names of the compiler, answered by the stand-in), transfer with fine-tuning, eval and both exports (ONNX's exporter and SB3's
    zip read the real module when they need it)."""
    cli = str(Path(sys.executable).with_name("graphtransfer"))
    model, tuned = tmp_path / "model", tmp_path / "tuned"
    commands = [
        ["train", "--task", "mis", "--graphs", "small", "--steps", "64", "--no-progress", "--out", str(model)],
        ["transfer", "--src", str(model), "--dst", "sample_graphs/small/ba-31.txt", "--finetune-steps", "8", "--out", str(tuned)],
        ["eval", "--model", str(tuned), "--graphs", "sample_graphs/small/ba-20.txt"],
        ["export", "--model", str(tuned), "--onnx", str(tmp_path / "m.onnx"), "--sb3", str(tmp_path / "m.zip")],
    ]
    for command in commands:
        result = subprocess.run([cli, *command], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, (command[0], result.stderr[-2000:])
    assert (tmp_path / "m.onnx").stat().st_size > 0 and (tmp_path / "m.zip").stat().st_size > 0
