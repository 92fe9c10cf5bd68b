"""--algo a2c and --algo dqn: real tiny runs through the CLI, strict loading into a model for a
larger graph, and every command that reads a model folder; the DQN's masks and replay buffer."""

import json
import shutil

import numpy as np
import pytest
import torch
from sb3_contrib.common.maskable.utils import get_action_masks
from typer.testing import CliRunner

from graphtransfer.checkpoint import CONFIG, load_policy_into_env, read_checkpoint
from graphtransfer.cli import app
from graphtransfer.config import DQNConfig, ModelConfig, PPOConfig, RunConfig, Runtime
from graphtransfer.graphs import barabasi_albert, load_graphs, write_graph
from graphtransfer.nn import NodeChoicePolicy, NodeQPolicy
from graphtransfer.nn.policy import PADDING_LOGIT
from graphtransfer.tasks import MVCEnv
from graphtransfer.tasks.factory import inference_env
from graphtransfer.training.a2c import GraphA2C
from graphtransfer.training.dqn import GraphDQN
from graphtransfer.training.loop import train
from graphtransfer.training.model import load_model, make_model
from graphtransfer.training.replay import GraphReplayBuffer, trim

runner = CliRunner()
TINY = ["--layers", "2", "--width", "16", "--n-envs", "2", "--n-steps", "16", "--batch-size", "16", "--no-progress"]


def invoke(*args):
    result = runner.invoke(app, [str(arg) for arg in args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def larger_graph(tmp_path_factory):
    """A 2,000-node graph file, 33 times the largest training graph."""
    path = tmp_path_factory.mktemp("graphs") / "ba2000.npz"
    write_graph(barabasi_albert(2_000, 3, seed=5), path)
    return path


@pytest.mark.parametrize(("algo", "policy_class"), [("a2c", NodeChoicePolicy), ("dqn", NodeQPolicy)])
def test_mvc_trains_resumes_transfers_predicts_evaluates_and_exports(algo, policy_class, tmp_path, larger_graph):
    out = tmp_path / "model"
    steps = ["--steps", "128", "--checkpoint-every", "64", "--set", "dqn.learning_starts=32"]
    trained = invoke("train", "--task", "mvc", "--algo", algo, *TINY, *steps, "--out", out)
    assert f"{'DQN' if algo == 'dqn' else 'MaskableA2C'})" in trained
    checkpoint = read_checkpoint(out)
    assert checkpoint.config.algo == algo and json.loads((out / CONFIG).read_text())["config"]["algo"] == algo

    # strictly into a model for a graph 33 times larger: every tensor, none resized
    env = inference_env(checkpoint.config, load_graphs(larger_graph)[0])
    policy, report = load_policy_into_env(checkpoint, env)
    assert isinstance(policy, policy_class) and report.ok and len(report.loaded) == len(checkpoint.tensors)

    resumed = invoke("train", "--resume", out / "checkpoints" / "step-64", "--no-progress")
    assert "resuming mvc (node-choice head) from" in resumed and "trained 128 steps" in resumed
    transferred = invoke(
        "transfer", "--src", out, "--dst", larger_graph, "--task", "mvc", "--out", tmp_path / "big", "--finetune-steps", "4"
    )
    assert "missing 0, unexpected 0, resized 0" in transferred and read_checkpoint(tmp_path / "big").config.algo == algo
    predicted = invoke("predict", "--model", tmp_path / "big", "--graph", larger_graph, "--out", tmp_path / "cover.csv")
    assert "valid solution: yes" in predicted
    assert "greedy-max-degree" in invoke("eval", "--model", out, "--graphs", larger_graph, "--rollouts", "1")
    exported = invoke("export", "--model", out, "--sb3", tmp_path / "model.zip")
    loader = {"a2c": "graphtransfer.training.a2c.MaskableA2C", "dqn": "graphtransfer.training.dqn.GraphDQN"}[algo]
    assert f"load it with {loader}.load(" in exported


def test_a2c_trains_node_wise_and_graph_level_heads_with_sb3s_a2c(tmp_path):
    for task, env in (("mis", None), ("mis", "examples.seed_scale:SignalEnv")):
        tiny = {"model": ModelConfig(width=16, head_width=16, num_layers=2), "ppo": PPOConfig(total_timesteps=32, n_envs=2, n_steps=8)}
        folder = tmp_path / (env or task).replace(":", "-")
        result = train(RunConfig(task=task, env=env, algo="a2c", graphs="small", **tiny), folder, log=lambda _: None)
        assert type(result.model) is GraphA2C and result.steps == 32
        reloaded = load_model(folder, "small", env=env)
        assert type(reloaded) is GraphA2C
        for name, tensor in reloaded.policy.state_dict().items():
            assert torch.equal(tensor, result.model.policy.state_dict()[name]), name


def test_dqn_is_refused_for_a_head_without_per_node_q_values(tmp_path):
    result = runner.invoke(app, ["train", "--task", "mis", "--algo", "dqn", "--steps", "8", "--out", str(tmp_path / "m")])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: mis: --algo dqn trains node-choice, edge-choice heads only (a Q-value per node or edge), and this env's head is "
        "node-wise; "
        "use --algo ppo or --algo a2c"
    )


def test_a_replay_buffer_that_cannot_fit_is_refused_with_a_buffer_size_that_fits(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHTRANSFER_MEMORY_LIMIT_MB", "1")
    result = runner.invoke(app, ["train", "--task", "mvc", "--algo", "dqn", "--out", str(tmp_path / "m")])
    assert result.exit_code == 2
    assert "the replay buffer needs" in result.stderr and "use --set dqn.buffer_size=" in result.stderr


def test_a_model_folder_without_algo_reads_as_ppo(tiny_model, tmp_path):
    folder = shutil.copytree(tiny_model("mvc"), tmp_path / "old")
    meta = json.loads((folder / CONFIG).read_text())
    del meta["config"]["algo"], meta["config"]["dqn"]  # as folders written before the setting
    (folder / CONFIG).write_text(json.dumps(meta))
    assert read_checkpoint(folder).config.algo == "ppo"
    assert type(load_model(folder, "small")).__name__ == "BudgetMaskablePPO"


def small_mvc(algo: str, ppo: PPOConfig, **more) -> RunConfig:
    """MVC on the small sample graphs with a tiny node-choice model, trained by ``algo``."""
    model = ModelConfig(width=16, head_width=16, num_layers=2)
    return RunConfig(task="mvc", graphs="small", algo=algo, head="node-choice", model=model, ppo=ppo, **more)


def dqn_on_small(**dqn) -> GraphDQN:
    config = small_mvc("dqn", PPOConfig(n_envs=2, batch_size=8, seed=1), runtime=Runtime(device="cpu"), dqn=DQNConfig(**dqn))
    return make_model(config, load_graphs("small"), 1)


@pytest.mark.parametrize("rate", [1.0, 0.0])
def test_dqn_acts_on_valid_nodes_only_exploring_or_greedy(rate):
    model = dqn_on_small()
    model.exploration_rate = rate
    model._last_obs = model.env.reset()
    for _ in range(40):
        masks = get_action_masks(model.env)
        actions, _ = model._sample_action(learning_starts=0, n_envs=2)
        assert masks[np.arange(2), actions].all()
        model._last_obs, *_ = model.env.step(actions)


def test_masked_q_values_hide_invalid_nodes_and_padding():
    model = dqn_on_small()
    obs = model.env.reset()
    masks = get_action_masks(model.env)
    q = model.policy.masked_q_values(model.policy.obs_to_tensor(obs)[0], masks)
    assert bool((q[torch.from_numpy(~masks)] == PADDING_LOGIT).all()) and bool((q[torch.from_numpy(masks)] > PADDING_LOGIT).all())


def test_the_replay_buffer_gives_back_what_it_stored_and_stores_each_step_once():
    env = MVCEnv(load_graphs("small")[:3])
    buffer = GraphReplayBuffer(64, env.observation_space, env.action_space, device="cpu")
    obs, _ = env.reset(seed=0)
    stored, rng = [], np.random.default_rng(0)
    for _ in range(12):
        action = int(rng.choice(np.flatnonzero(env.action_masks())))
        next_obs, reward, terminated, truncated, _ = env.step(action)
        buffer.expect_masks(env.action_masks()[None])
        batch = {key: value[None] for key, value in obs.items()}
        buffer.add(
            batch,
            {key: value[None] for key, value in next_obs.items()},
            np.array([action]),
            np.array([reward]),
            np.array([terminated]),
            [{}],
        )
        stored.append((obs, next_obs, action, env.action_masks()))
        obs = env.reset()[0] if terminated or truncated else next_obs
    samples = buffer._get_samples(np.arange(12))
    for row, (before, after, action, mask) in enumerate(stored):
        for key in before:
            assert np.array_equal(samples.observations[key][row].numpy(), before[key]), key
            assert np.array_equal(samples.next_observations[key][row].numpy(), after[key]), key
        assert samples.actions[row] == action and np.array_equal(samples.next_masks[row].numpy(), mask)
    two_copies = sum(sum(v.nbytes for v in trim(o, env.max_nodes).values()) for before, after, _, _ in stored for o in (before, after))
    assert buffer.stored_bytes() < 0.7 * two_copies  # consecutive steps share their observation


def test_maskable_a2c_updates_as_sb3s_a2c_when_every_action_is_valid():
    """With all-true masks, MaskableA2C.train gives the weights SB3's own A2C.train gives from the
    same rollout, weights and optimizer state: the update is A2C's."""
    import copy

    from stable_baselines3 import A2C

    config = small_mvc("a2c", PPOConfig(n_envs=2, n_steps=8, seed=2), runtime=Runtime(device="cpu"))
    model = make_model(config, load_graphs("small")[:6], 2)
    model.learn(16)  # one rollout, one update; the buffer keeps the rollout
    model.rollout_buffer.action_masks[...] = True
    weights, optimizer = copy.deepcopy(model.policy.state_dict()), copy.deepcopy(model.policy.optimizer.state_dict())
    model.train()
    ours = copy.deepcopy(model.policy.state_dict())
    model.policy.load_state_dict(weights)
    model.policy.optimizer.load_state_dict(optimizer)
    A2C.train(model)  # SB3's update on the same object: no masks
    for name, tensor in model.policy.state_dict().items():
        assert torch.allclose(tensor, ours[name], atol=1e-6), name
    assert any(not torch.equal(weights[name], ours[name]) for name in weights)  # the update changed something


def a2c_after_one_rollout(task: str, head: str):
    """A tiny A2C model of the task after one rollout of 2 envs x 8 steps, its update not run, and
    the weights and optimizer state that update would start from (the buffer holds the rollout)."""
    import copy

    model = ModelConfig(width=16, head_width=16, num_layers=2)
    config = RunConfig(
        task=task,
        graphs="small",
        algo="a2c",
        head=head,
        model=model,
        ppo=PPOConfig(n_envs=2, n_steps=8, seed=2),
        runtime=Runtime(device="cpu"),
    )
    a2c = make_model(config, load_graphs("small")[:6], 2)
    kept = {}
    a2c.train = lambda: kept.update(state=copy.deepcopy((a2c.policy.state_dict(), a2c.policy.optimizer.state_dict())))
    a2c.learn(16)  # the rollout, and in place of its update the state it starts from
    del a2c.train
    return a2c, kept["state"]


def restore(model, state) -> None:
    """The kept weights and optimizer state, copied (the optimizer would update them in place)."""
    import copy

    weights, optimizer = copy.deepcopy(state)
    model.policy.load_state_dict(weights)
    model.policy.optimizer.load_state_dict(optimizer)


def updated_from(model, state) -> dict[str, torch.Tensor]:
    """The weights after ``model.train()`` from the kept ``state``."""
    restore(model, state)
    model.train()
    return {name: tensor.clone() for name, tensor in model.policy.state_dict().items()}


def test_a2cs_update_is_sb3s_when_the_rollout_fits_one_group():
    """Node-wise A2C's update gives the weights SB3's own A2C.train gives (to 1e-6: two runs of
    either from the same state differ by a few 1e-8 in this process)."""
    from stable_baselines3 import A2C

    model, state = a2c_after_one_rollout("mis", "node-wise")
    ours = updated_from(model, state)
    restore(model, state)
    A2C.train(model)
    for name, tensor in model.policy.state_dict().items():
        assert torch.allclose(tensor, ours[name], atol=1e-6, rtol=0), name
    assert any(not torch.equal(state[0][name], ours[name]) for name in ours)  # the update changed something


@pytest.mark.parametrize(("task", "head"), [("mis", "node-wise"), ("mvc", "node-choice")])
def test_a2c_backpropagates_a_large_rollout_in_groups_with_the_same_update(task, head, monkeypatch):
    """A rollout above UPDATE_GROUP_NODES real nodes runs its loss in groups of whole observations
    (16 observations of 20-60 nodes, groups of at most 120 nodes): the whole rollout's update to 1e-6."""
    from graphtransfer.training import ppo

    model, state = a2c_after_one_rollout(task, head)
    whole = updated_from(model, state)
    monkeypatch.setattr(ppo, "UPDATE_GROUP_NODES", 120)
    seen, evaluate = [], model.policy.evaluate_actions
    model.policy.evaluate_actions = lambda obs, *args, **kwargs: (
        seen.append(int(obs["num_nodes"].shape[0])) or evaluate(obs, *args, **kwargs)
    )
    grouped = updated_from(model, state)
    assert len(seen) > 3 and max(seen) < 16
    for name, tensor in grouped.items():
        assert torch.allclose(tensor, whole[name], atol=1e-6, rtol=0), name
    assert any(not torch.equal(state[0][name], grouped[name]) for name in grouped)
