"""The typed parameters of a call, Decoding and Runtime: each checks itself once, with the schema's
declarations, so the command line, YAML and the Python API refuse the same values the same way; and
model folders from before the runtime section (runtime settings in ``ppo``) still load."""

import json
import math
import shutil

import pytest
from typer.testing import CliRunner

import graphtransfer
from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.cli import app
from graphtransfer.config import RUNTIME_IN_PPO, Decoding, Runtime
from graphtransfer.config.layers import parse_sets
from graphtransfer.errors import UsageError
from graphtransfer.graphs import delaunay

runner = CliRunner()


@pytest.mark.parametrize(
    ("kind", "values", "message"),
    [
        (Decoding, {"seed": -1}, "Decoding.seed (--seed): -1 must be 0 or more"),
        (Decoding, {"seed": 2**32}, "Decoding.seed (--seed): 4294967296 must be at most 4,294,967,295"),
        (Decoding, {"seed": True}, "Decoding.seed (--seed): expected an integer, got True"),
        (Decoding, {"commit_fraction": math.nan}, "Decoding.commit_fraction (--commit-fraction): expected a number or null, got nan"),
        (Decoding, {"commit_fraction": 0.0}, "Decoding.commit_fraction (--commit-fraction): 0.0 must be above 0"),
        (Decoding, {"commit_fraction": 1.5}, "Decoding.commit_fraction (--commit-fraction): 1.5 must be at most 1"),
        (Decoding, {"commit_fraction": "half"}, "Decoding.commit_fraction (--commit-fraction): expected a number or null, got 'half'"),
        (Decoding, {"rollouts": 0}, "Decoding.rollouts (--rollouts): 0 must be at least 1"),
        (Decoding, {"rollouts": 2.5}, "Decoding.rollouts (--rollouts): expected an integer or one of 'auto', got 2.5"),
        (Decoding, {"rollouts": "many"}, "Decoding.rollouts (--rollouts): expected an integer or one of 'auto', got 'many'"),
        (Decoding, {"method": "greedy"}, "Decoding.method (--decoding): 'greedy' is not one of local-max, drawn, local-max-sampled"),
        (Decoding, {"max_passes": 0}, "Decoding.max_passes (--max-passes): 0 must be at least 1"),
        (Decoding, {"node_order": "rcm"}, "Decoding.node_order (--node-order): 'rcm' is not one of auto, given"),
        (Decoding, {"deterministic": "yes"}, "Decoding.deterministic (--deterministic): expected true or false or null, got 'yes'"),
        (Runtime, {"threads": 0}, "Runtime.threads (--threads): 0 must be at least 1"),
        (Runtime, {"threads": math.inf}, "Runtime.threads (--threads): expected an integer or null, got inf"),
        (Runtime, {"max_nodes_per_batch": -5}, "Runtime.max_nodes_per_batch (--max-nodes-per-batch): -5 must be at least 1"),
        (Runtime, {"device": "tpu"}, "Runtime.device (--device): 'tpu' is not one of auto, cpu, cuda"),
        (Runtime, {"mixed_precision": 1}, "Runtime.mixed_precision (--mixed-precision): expected true or false, got 1"),
        (Runtime, {"vec_env": "threads"}, "Runtime.vec_env (--vec-env): 'threads' is not one of auto, batched, dummy, subproc, ray"),
    ],
)
def test_a_bad_parameter_is_one_usage_error_naming_the_field_and_its_option(kind, values, message):
    with pytest.raises(UsageError) as caught:
        kind(**values)
    assert str(caught.value) == message


def test_good_values_are_kept_converted_as_yaml_would_read_them():
    assert Decoding(rollouts="8", commit_fraction="0.5", seed=3.0) == Decoding(rollouts=8, commit_fraction=0.5, seed=3)
    assert Decoding(rollouts="auto").rollouts == "auto"
    assert Runtime(threads=2, max_nodes_per_batch=5e4).max_nodes_per_batch == 50_000


def test_the_python_api_refuses_a_bad_keyword_before_it_reads_anything(tmp_path):
    with pytest.raises(UsageError, match=r"^Decoding.rollouts \(--rollouts\): 0 must be at least 1$"):
        graphtransfer.predict(tmp_path / "no-model", tmp_path / "no-graph.txt", rollouts=0)
    with pytest.raises(UsageError, match=r"^Runtime.max_nodes_per_batch \(--max-nodes-per-batch\): 0 must be at least 1$"):
        graphtransfer.evaluate(tmp_path / "no-model", tmp_path / "no-graphs", max_nodes_per_batch=0)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--commit-fraction", "nan", "error: Decoding.commit_fraction (--commit-fraction): expected a number, got 'nan'"),
        ("--commit-fraction", "0", "error: Decoding.commit_fraction (--commit-fraction): 0.0 must be above 0"),
        ("--decoding", "greedy", "error: Decoding.method (--decoding): 'greedy' is not one of local-max, drawn, local-max-sampled"),
        ("--kernel-every", "nan", "error: Decoding.kernel_every (--kernel-every): expected an integer, got 'nan'"),
        ("--kernel-every", "-1", "error: Decoding.kernel_every (--kernel-every): -1 must be 0 or more"),
        ("--kernel-every", "10000000", "error: Decoding.kernel_every (--kernel-every): 10000000 must be at most 1,000,000"),
    ],
)
def test_the_command_line_refuses_the_same_values_with_the_same_message(tmp_path, option, value, message):
    model, graph = tmp_path / "no-model", tmp_path / "g.txt"  # refused before the model or the graph is read
    for command in (["predict", "--graph", str(graph), "--out", str(tmp_path / "o.csv")], ["eval", "--graphs", str(graph)]):
        result = runner.invoke(app, [*command, "--model", str(model), option, value])
        assert result.exit_code == 2, result.output
        assert result.stderr.strip() == message
    assert not (tmp_path / "o.csv").exists()


def test_yaml_and_set_check_runtime_settings_by_the_same_declaration_under_either_section():
    with pytest.raises(UsageError, match=r"^--set runtime.threads=0: runtime.threads: 0 must be at least 1$"):
        parse_sets(["runtime.threads=0"])
    with pytest.raises(UsageError, match=r"^--set ppo.threads=0: ppo.threads: 0 must be at least 1$"):
        parse_sets(["ppo.threads=0"])
    assert parse_sets(["ppo.threads=2"])[1] == {"runtime": {"threads": 2}}  # the old spelling still sets it


def test_a_model_folder_from_before_the_runtime_section_loads_and_predicts(tiny_model, tmp_path):
    """A config.json that holds threads, device, vec_env... in ppo, as every folder written before
    Runtime does: it loads with them in runtime, and the policy runs."""
    folder = tmp_path / "old"
    shutil.copytree(tiny_model("mis"), folder)
    meta = json.loads((folder / "config.json").read_text())
    runtime = meta["config"].pop("runtime")
    old = {"threads": 1, "device": "cpu", "max_nodes_per_batch": 4096, "mixed_precision": False, "vec_env": "subproc", "ray_address": None}
    assert set(runtime) == set(old) == set(RUNTIME_IN_PPO)
    meta["config"]["ppo"] |= old
    (folder / "config.json").write_text(json.dumps(meta))
    config = read_checkpoint(folder).config
    assert config.runtime == Runtime(threads=1, device="cpu", max_nodes_per_batch=4096, vec_env="subproc")
    assert not set(RUNTIME_IN_PPO) & set(config.to_dict()["ppo"])
    _, solution = graphtransfer.predict(folder, delaunay(60, 1), rollouts=4)  # the keyword API of before
    assert solution.feasible and solution.rollouts == 4
