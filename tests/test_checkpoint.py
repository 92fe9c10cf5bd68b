import json
import multiprocessing
import os
import random
import signal
import time
import zipfile
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import save_file

from graphtransfer.checkpoint import (
    CONFIG,
    CONFIG_YAML,
    load_optimizer_state,
    load_policy_into_env,
    load_strict,
    optimizer_state,
    read_checkpoint,
    save_checkpoint,
    state_tensors,
)
from graphtransfer.config import ModelConfig, RunConfig
from graphtransfer.errors import CheckpointError
from graphtransfer.graphs import erdos_renyi
from graphtransfer.io import LOCK_NAME
from graphtransfer.nn import build_policy
from graphtransfer.tasks.mis.env import MISEnv


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
    loaded, report = load_policy_into_env(checkpoint, big)
    assert report.ok and not report.missing and len(report.loaded) == len(state_tensors(policy))
    for name, tensor in state_tensors(policy).items():
        assert torch.equal(state_tensors(loaded)[name], tensor), name


def test_aliases_of_the_shared_extractor_are_saved_once(saved):
    folder, policy, _ = saved
    names = read_checkpoint(folder).tensors
    assert any(n.startswith("features_extractor.") for n in names)
    assert not any(n.startswith(("pi_features_extractor.", "vf_features_extractor.")) for n in names)


def weights_file(folder):
    return folder / json.loads((folder / CONFIG).read_text())["files"]["weights"]["name"]


def test_changed_weights_fail_the_checksum(saved):
    folder, _, _ = saved
    data = bytearray(weights_file(folder).read_bytes())
    data[-1] ^= 0xFF
    weights_file(folder).write_bytes(bytes(data))
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
    with pytest.raises(CheckpointError, match=r"features_extractor\.encode\.0\.weight: checkpoint \(16, 6\) vs model \(32, 6\)"):
        load_strict(wider, read_checkpoint(folder).tensors)


def test_save_leaves_no_temporary_files(saved):
    folder, _, _ = saved
    assert saved_names(folder) == sorted([CONFIG, CONFIG_YAML, weights_file(folder).name])


def test_config_yaml_holds_the_same_config_as_config_json(saved):
    folder, _, config = saved
    assert RunConfig.from_dict(yaml.safe_load((folder / CONFIG_YAML).read_text())) == config == read_checkpoint(folder).config


def test_saving_again_replaces_the_weights_file_and_keeps_the_users_files(saved):
    folder, policy, config = saved
    old = weights_file(folder)
    (folder / "solution.csv").write_text("node,decision\n")
    with torch.no_grad():
        next(policy.parameters()).add_(1.0)
    save_checkpoint(folder, policy, config)
    assert not old.exists() and weights_file(folder) != old
    assert saved_names(folder) == sorted([CONFIG, CONFIG_YAML, weights_file(folder).name, "solution.csv"])
    assert torch.equal(
        read_checkpoint(folder).tensors["features_extractor.encode.0.weight"], state_tensors(policy)["features_extractor.encode.0.weight"]
    )


def test_a_version_1_folder_still_loads_and_is_upgraded_by_the_next_save(saved):
    folder, policy, config = saved
    v1 = folder.parent / "v1"
    v1.mkdir()
    save_file(state_tensors(policy), v1 / "model.safetensors")
    sha = json.loads((folder / CONFIG).read_text())["files"]["weights"]["sha256"]
    meta = {"format": "graphtransfer-model", "format_version": 1, "config": config.to_dict(), "weights_sha256": sha}
    (v1 / CONFIG).write_text(json.dumps(meta))
    assert read_checkpoint(v1).config == config
    save_checkpoint(v1, policy, config)
    assert saved_names(v1) == sorted([CONFIG, CONFIG_YAML, weights_file(folder).name])


def test_a_file_named_outside_the_folder_is_refused(saved):
    folder, _, _ = saved
    meta = json.loads((folder / CONFIG).read_text())
    meta["files"]["weights"]["name"] = "../elsewhere.safetensors"
    (folder / CONFIG).write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=r"names '\.\./elsewhere\.safetensors'; expected a \.safetensors file name inside"):
        read_checkpoint(folder)


def test_optimizer_state_round_trips_through_safetensors(saved):
    folder, policy, config = saved
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3, eps=1e-5)
    for _ in range(2):  # two steps: moments and step counts that differ from a fresh optimizer
        optimizer.zero_grad()
        sum(p.square().sum() for p in policy.parameters()).backward()
        optimizer.step()
    save_checkpoint(folder, policy, config, optimizer=optimizer)
    fresh = torch.optim.Adam(policy.parameters(), lr=3e-4)
    load_optimizer_state(fresh, policy, read_checkpoint(folder))
    want, got = optimizer.state_dict(), fresh.state_dict()
    assert got["param_groups"][0]["lr"] == 1e-3 and got["param_groups"][0]["eps"] == 1e-5
    assert want["state"].keys() == got["state"].keys()
    for index, state in want["state"].items():
        for key, tensor in state.items():
            assert torch.equal(got["state"][index][key], tensor), (index, key)
    assert len(optimizer_state(fresh, policy)[0]) == 3 * len(list(policy.parameters()))


def _save_forever(folder, policies, config):
    """The child of the kill test: replace the model in ``folder`` again and again."""
    while True:
        for policy in policies:
            save_checkpoint(folder, policy, config)


@pytest.mark.slow
def test_a_save_killed_at_any_moment_leaves_a_folder_that_loads(tmp_path):
    """kill -9 a process that keeps overwriting a model folder; after each kill the folder must
    load, verify, and hold one of the two models whole."""
    env = MISEnv([erdos_renyi(12, 3.0, 0)])
    model = ModelConfig(width=128, head_width=128, num_layers=4)  # 0.8 MB of weights: a save takes a while
    config = RunConfig(head="node-wise", model=model)
    policies = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        policies.append(build_policy("node-wise", model, env.observation_space, env.action_space))
    folder = save_checkpoint(tmp_path / "model", policies[0], config)
    wanted = [state_tensors(p)["features_extractor.encode.0.weight"] for p in policies]
    fork = multiprocessing.get_context("fork")  # the child shares the parent's imports: it starts saving at once
    chance = random.Random(0)
    for _ in range(8):
        child = fork.Process(target=_save_forever, args=(folder, policies, config), daemon=True)
        child.start()
        time.sleep(chance.uniform(0.02, 0.3))
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        checkpoint = read_checkpoint(folder)  # verifies every sha256
        got = checkpoint.tensors["features_extractor.encode.0.weight"]
        assert any(torch.equal(got, w) for w in wanted)
        load_policy_into_env(checkpoint, env)
    save_checkpoint(folder, policies[0], config)
    assert saved_names(folder) == sorted([CONFIG, CONFIG_YAML, weights_file(folder).name])


def saved_names(folder: Path) -> list[str]:
    """The folder's files, less the lock file its writers share."""
    return sorted(p.name for p in folder.iterdir() if p.name != LOCK_NAME)
