import json
import zipfile

import pytest
import torch

from graphtransfer.checkpoint import CONFIG, WEIGHTS, load_policy, load_strict, read_checkpoint, save_checkpoint, state_tensors
from graphtransfer.config import ModelConfig, RunConfig
from graphtransfer.envs.mis import MISEnv
from graphtransfer.errors import CheckpointError
from graphtransfer.graphs import erdos_renyi
from graphtransfer.nn import build_policy


@pytest.fixture
def saved(tmp_path):
    env = MISEnv([erdos_renyi(12, 3.0, 0)])
    torch.manual_seed(1)
    policy = build_policy("node-wise", ModelConfig(width=16, head_width=16), env.observation_space, env.action_space)
    config = RunConfig(head="node-wise", model=ModelConfig(width=16, head_width=16))
    return save_checkpoint(tmp_path / "model", policy, config), policy, config


def test_round_trip_is_bit_identical_on_a_larger_graph(saved):
    folder, policy, config = saved
    checkpoint = read_checkpoint(folder)
    assert checkpoint.config == config
    big = MISEnv([erdos_renyi(500, 3.0, 1)])
    loaded, report = load_policy(checkpoint, big)
    assert report.ok and not report.missing and len(report.loaded) == len(state_tensors(policy))
    for name, tensor in state_tensors(policy).items():
        assert torch.equal(state_tensors(loaded)[name], tensor), name


def test_aliases_of_the_shared_extractor_are_saved_once(saved):
    folder, policy, _ = saved
    names = read_checkpoint(folder).tensors
    assert any(n.startswith("features_extractor.") for n in names)
    assert not any(n.startswith(("pi_features_extractor.", "vf_features_extractor.")) for n in names)


def test_changed_weights_fail_the_checksum(saved):
    folder, _, _ = saved
    data = bytearray((folder / WEIGHTS).read_bytes())
    data[-1] ^= 0xFF
    (folder / WEIGHTS).write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="sha256 differs"):
        read_checkpoint(folder)


def test_other_format_versions_are_refused(saved):
    folder, _, _ = saved
    meta = json.loads((folder / CONFIG).read_text())
    meta["format_version"] = 99
    (folder / CONFIG).write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="v99"):
        read_checkpoint(folder)


def test_sb3_zip_is_refused_without_opening_it(tmp_path):
    crafted = tmp_path / "model.zip"
    with zipfile.ZipFile(crafted, "w") as archive:
        archive.writestr("data", "not even looked at")
    with pytest.raises(CheckpointError, match="unpickles"):
        read_checkpoint(crafted)


def test_mismatched_architecture_names_tensors_and_shapes(saved):
    folder, _, _ = saved
    env = MISEnv([erdos_renyi(12, 3.0, 0)])
    wider = build_policy("node-wise", ModelConfig(width=32, head_width=16), env.observation_space, env.action_space)
    with pytest.raises(CheckpointError, match=r"features_extractor\.encode\.0\.weight: checkpoint \(16, 5\) vs model \(32, 5\)"):
        load_strict(wider, read_checkpoint(folder).tensors)


def test_save_leaves_no_temporary_files(saved):
    folder, _, _ = saved
    assert sorted(p.name for p in folder.iterdir()) == sorted([CONFIG, WEIGHTS])
