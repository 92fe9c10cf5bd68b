"""Experts: further weight sets of a model's network, taking turns with its own weights in the rollouts.

The built-in MIS model carries one (a dense expert); a folder's experts are written, read and
checked like its weights, predict and eval decode with them, and transfer carries them unchanged
while it fine-tunes the model's own weights.
"""

import hashlib
import json
import re
from dataclasses import replace

import numpy as np
import pytest
import torch
from safetensors.torch import save
from typer.testing import CliRunner

from graphtransfer.checkpoint import CONFIG, read_checkpoint, save_checkpoint, state_tensors
from graphtransfer.cli import app
from graphtransfer.config import Decoding
from graphtransfer.errors import CheckpointError
from graphtransfer.graphs import erdos_renyi, write_edge_list
from graphtransfer.graphs.generators import delaunay
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.solve.predict import predict_graph
from graphtransfer.solve.rollouts import best_of_rollouts, rollout_plan
from graphtransfer.tasks import TASKS
from graphtransfer.tasks.mis.baselines import greedy_min_degree
from graphtransfer.transferring.transfer import transfer
from tests.brute_force import is_maximal_independent

runner = CliRunner()


def _other_weights(tensors: dict[str, torch.Tensor], seed: int = 0) -> dict[str, torch.Tensor]:
    """The same tensors moved by seeded noise: a weight set of the same network that decides otherwise."""
    generator = torch.Generator().manual_seed(seed)
    return {name: t + 0.5 * torch.randn(t.shape, generator=generator) * (t.std() if t.numel() > 1 else 1.0) for name, t in tensors.items()}


@pytest.fixture
def with_expert(tiny_model, tmp_path):
    """A copy of the tiny MIS model with one expert, and that expert's tensors."""
    source = read_checkpoint(tiny_model("mis"))
    policy = policy_for_graphs(source, [delaunay(30, 0)]).policy
    expert = _other_weights(source.tensors)
    folder = save_checkpoint(tmp_path / "model", policy, source.config, experts=[expert])
    return folder, expert


def test_experts_are_saved_as_their_own_tensor_files_and_read_back_in_order(tiny_model, tmp_path):
    source = read_checkpoint(tiny_model("mis"))
    policy = policy_for_graphs(source, [delaunay(30, 0)]).policy
    experts = [_other_weights(source.tensors, 1), _other_weights(source.tensors, 2)]
    folder = save_checkpoint(tmp_path / "two", policy, source.config, experts=experts)
    files = json.loads((folder / CONFIG).read_text())["files"]
    assert sorted(files) == ["expert-1", "expert-2", "weights"]
    assert all(re.fullmatch(r"expert-[0-9a-f]{16}\.safetensors", files[role]["name"]) for role in ("expert-1", "expert-2"))
    read = read_checkpoint(folder)
    assert len(read.experts) == 2
    for saved, expert in zip(read.experts, experts, strict=True):
        assert all(torch.equal(saved[name], expert[name].float()) for name in expert)
    assert all(torch.equal(read.tensors[name], source.tensors[name]) for name in source.tensors)
    save_checkpoint(folder, policy, source.config)  # saved again without experts: their files go
    assert read_checkpoint(folder).experts == [] and not list(folder.glob("expert-*"))


def test_an_expert_that_is_not_the_same_network_is_refused_before_anything_is_written(tiny_model, tmp_path):
    source = read_checkpoint(tiny_model("mis"))
    policy = policy_for_graphs(source, [delaunay(30, 0)]).policy
    name = next(iter(source.tensors))
    wider = dict(source.tensors, **{name: torch.zeros(*source.tensors[name].shape[:-1], source.tensors[name].shape[-1] + 1)})
    fewer = {key: t for key, t in source.tensors.items() if key != name}
    for bad, said in (
        (wider, "the weights'"),
        (fewer, f"lacks {name}"),
        (dict(source.tensors, x=torch.zeros(2)), "extra tensor x"),
    ):
        with pytest.raises(CheckpointError, match=re.escape(said)):
            save_checkpoint(tmp_path / "bad", policy, source.config, experts=[bad])
        assert not (tmp_path / "bad").exists()


def _rewrite_expert(folder, tensors, role="expert-1"):
    """Replace the expert file of ``role`` with ``tensors``, its sha256 updated in config.json (an edited folder)."""
    data = save({name: t.contiguous() for name, t in tensors.items()})
    meta = json.loads((folder / CONFIG).read_text())
    name = f"expert-{hashlib.sha256(data).hexdigest()[:16]}.safetensors"
    (folder / name).write_bytes(data)
    meta["files"][role] = {"name": name, "sha256": hashlib.sha256(data).hexdigest()}
    (folder / CONFIG).write_text(json.dumps(meta))


def test_a_folder_whose_expert_does_not_fit_its_weights_or_holds_nan_or_skips_a_number_is_refused(with_expert):
    folder, expert = with_expert
    name = next(iter(expert))
    size = expert[name].numel() + 1  # a vector no tensor of the network can be mistaken for, whichever comes first
    _rewrite_expert(folder, dict(expert, **{name: torch.zeros(size)}))
    with pytest.raises(CheckpointError, match=rf"expert-1: {re.escape(name)} is \({size},\), the weights'"):
        read_checkpoint(folder)
    _rewrite_expert(folder, dict(expert, **{name: torch.full_like(expert[name], float("nan"))}))
    with pytest.raises(CheckpointError, match="holds NaN or infinite values"):
        read_checkpoint(folder)
    _rewrite_expert(folder, expert, role="expert-2")
    meta = json.loads((folder / CONFIG).read_text())
    del meta["files"]["expert-1"]
    (folder / CONFIG).write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="names 1 experts but no 'expert-1'"):
        read_checkpoint(folder)


def test_each_weight_set_decodes_its_rollouts_as_it_would_alone():
    plan = rollout_plan(Decoding(seed=7), 6, "local-max", weight_sets=2)
    assert [(p.seed, p.method) for p in plan] == [
        (7, None),
        (7, None),
        (8, "local-max-sampled"),
        (8, "local-max-sampled"),
        (9, None),
        (9, None),
    ]
    assert [p.seed for p in rollout_plan(Decoding(seed=7), 3, "local-max", weight_sets=1)] == [7, 8, 9]


def test_the_best_of_rollouts_with_an_expert_is_the_best_of_each_weight_sets_own_rollouts(with_expert):
    folder, expert = with_expert
    model = read_checkpoint(folder)
    graph = erdos_renyi(300, 30.0, 3)
    loaded = policy_for_graphs(model, [graph])
    own = {name: t.clone() for name, t in state_tensors(loaded.policy).items()}
    both = best_of_rollouts(loaded.policy, loaded.env, 6, Decoding(rollouts=6), TASKS["mis"].finish, experts=model.experts)
    assert all(torch.equal(t, own[name]) for name, t in state_tensors(loaded.policy).items())  # its own weights are back
    alone = best_of_rollouts(loaded.policy, loaded.env, 3, Decoding(rollouts=3), TASKS["mis"].finish)
    as_model = policy_for_graphs(replace(model, tensors=model.experts[0], experts=[]), [graph])
    expert_alone = best_of_rollouts(as_model.policy, as_model.env, 3, Decoding(rollouts=3), TASKS["mis"].finish)
    assert alone.objective != expert_alone.objective or not np.array_equal(alone.solution, expert_alone.solution)  # they decide otherwise
    assert both.objective == max(alone.objective, expert_alone.objective)
    assert both.expert == (0 if alone.objective >= expert_alone.objective else 1) and both.weight_sets == 2 and both.rollouts == 6
    assert is_maximal_independent(graph, both.solution.astype(bool))


def test_one_rollout_is_the_models_own_weights_alone(with_expert, tiny_model):
    folder, _ = with_expert
    graph = erdos_renyi(200, 20.0, 1)
    one, _ = predict_graph(folder, graph, Decoding(rollouts=1))
    without, _ = predict_graph(tiny_model("mis"), graph, Decoding(rollouts=1))
    assert np.array_equal(one.solution, without.solution) and (one.expert, one.weight_sets) == (0, 1)


def test_predict_says_which_weight_set_gave_the_best_rollout(with_expert, tmp_path):
    folder, _ = with_expert
    write_edge_list(erdos_renyi(200, 20.0, 2), tmp_path / "g.txt")
    command = ["predict", "--model", str(folder), "--graph", str(tmp_path / "g.txt"), "--out", str(tmp_path / "s.csv"), "--rollouts", "4"]
    result = runner.invoke(app, [*command, "--threads", "1"])
    assert result.exit_code == 0, result.output
    shown = re.search(
        r"best of 4 rollouts \(seeds 0-1, the model's weights and 1 expert taking turns; best: seed [01], local-max, (.+?)\)", result.output
    )
    assert shown and shown.group(1) in ("the model's weights", "expert 1"), result.output


def test_transfer_carries_the_experts_unchanged_and_fine_tunes_only_the_models_own_weights(with_expert, tmp_path):
    folder, expert = with_expert
    source = read_checkpoint(folder)
    write_edge_list(erdos_renyi(120, 20.0, 5), tmp_path / "dst.txt")
    base = ["transfer", "--src", str(folder), "--dst", str(tmp_path / "dst.txt"), "--threads", "1"]
    tuned = runner.invoke(app, [*base, "--out", str(tmp_path / "tuned"), "--finetune-steps", "64"])
    assert tuned.exit_code == 0, tuned.output
    assert "the source's 1 expert(s), weight sets taking turns in the rollouts, are saved with it unchanged" in tuned.output
    fine_tuned = read_checkpoint(tmp_path / "tuned")
    assert len(fine_tuned.experts) == 1 and all(torch.equal(fine_tuned.experts[0][n], expert[n]) for n in expert)
    assert any(not torch.equal(fine_tuned.tensors[n], source.tensors[n]) for n in source.tensors)  # its own weights trained
    # the evaluations took turns with the expert: each table says 'best of' several rollouts of two weight sets
    after = transfer(folder, tmp_path / "dst.txt", folder=tmp_path / "again", finetune_steps=64, log=lambda line: None)
    assert after.experts == 1 and after.rows[0].policy.weight_sets == 2 and after.finetuned_rows[0].policy.weight_sets == 2


def test_the_built_in_mis_model_has_a_dense_expert_and_beats_greedy_by_5_percent_on_a_dense_random_graph():
    """The dense cells of issue 30 at a test's size: Erdős–Rényi, 2,000 nodes, average degree 64."""
    model = read_checkpoint("mis")
    assert len(model.experts) == 1
    graph = erdos_renyi(2_000, 64.0, 11)
    solution, _ = predict_graph(model, graph)
    assert is_maximal_independent(graph, solution.solution.astype(bool))
    assert solution.objective >= 1.05 * int(greedy_min_degree(graph).sum())


def test_export_holds_the_models_own_weights_and_says_so(with_expert, tmp_path):
    from tests.test_export_onnx import policy_and_file_outputs

    folder, expert = with_expert
    result = runner.invoke(app, ["export", "--model", str(folder), "--onnx", str(tmp_path / "m.onnx")])
    assert result.exit_code == 0, result.output
    assert (
        "has 1 expert(s), weight sets that take turns in predict's rollouts; the export holds the model's own weights only" in result.output
    )
    graph = erdos_renyi(300, 12.0, seed=5)
    own, got = policy_and_file_outputs(folder, tmp_path / "m.onnx", graph)
    assert np.abs(got - own).max() < 1e-4
    as_expert = save_checkpoint(
        tmp_path / "expert",
        policy_for_graphs(replace(read_checkpoint(folder), tensors=expert, experts=[]), [graph]).policy,
        read_checkpoint(folder).config,
    )
    theirs, _ = policy_and_file_outputs(as_expert, tmp_path / "m.onnx", graph)
    assert np.abs(got - theirs).max() > 1e-3  # not the expert's: ten times the tolerance that matched the own policy (0.0099 in one CI run)


def test_a_path_models_expert_takes_the_most_likely_moves_in_its_first_rollout_too(tiny_model, tmp_path):
    """Path takes the most likely moves by default: with an expert, each weight set's first rollout
    takes them (the others sample), so two rollouts are each weight set's deterministic route."""
    source = read_checkpoint(tiny_model("path"))
    graph = delaunay(80, 2)
    loaded = policy_for_graphs(source, [graph])
    expert = _other_weights(source.tensors, 3)
    folder = save_checkpoint(tmp_path / "path-expert", loaded.policy, source.config, experts=[expert])
    both, _ = predict_graph(folder, graph, Decoding(rollouts=2))
    own, _ = predict_graph(tiny_model("path"), graph, Decoding(rollouts=1, deterministic=True))
    alone = save_checkpoint(tmp_path / "expert-alone", policy_for_graphs(replace(source, tensors=expert), [graph]).policy, source.config)
    theirs, _ = predict_graph(alone, graph, Decoding(rollouts=1, deterministic=True))
    assert both.weight_sets == 2 and both.rollouts == 2
    best = min((own, theirs), key=lambda run: (not run.feasible, run.objective))  # a shorter route is better
    assert (both.feasible, both.objective) == (best.feasible, best.objective)
