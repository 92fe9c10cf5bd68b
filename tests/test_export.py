"""`graphtransfer export --sb3`: the zip loads in SB3 and acts as graphtransfer's own predict path does."""

import numpy as np
import pytest
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO
from typer.testing import CliRunner

from graphtransfer import act, load_policy, obs_to_tensors, predict
from graphtransfer.cli import app
from graphtransfer.graphs import load_graphs
from graphtransfer.tasks import MISEnv, MVCEnv

runner = CliRunner()
SMALL = load_graphs("small")
GRAPHS = (0, 9, 23)  # a 20-node BA, a 60-node BA and a 60-node ER graph of the training set


def export(model, tmp_path, *extra):
    out = tmp_path / "model.zip"
    result = runner.invoke(app, ["export", "--model", str(model), "--sb3", str(out), *extra])
    assert result.exit_code == 0, result.output
    return out, result.stdout


@pytest.mark.slow
def test_ppo_load_gives_the_per_node_actions_of_act_and_the_solution_of_predict(tiny_model, tmp_path):
    model = tiny_model("mis")
    zipped, printed = export(model, tmp_path)
    assert "load it with PPO.load(" in printed  # SB3's class, not our subclass
    env = MISEnv(SMALL, horizon=MISEnv.inference_horizon)
    sb3 = PPO.load(zipped, env=env, device="cpu")
    policy, _ = load_policy(model, SMALL[0])
    for index in GRAPHS:
        obs, _ = env.reset(seed=0, options={"graph_index": index})
        done, steps = False, 0
        while not done:  # a whole deterministic episode driven by SB3, checked at every observation
            actions, _ = sb3.predict(obs, deterministic=True)
            ours = act(policy, obs_to_tensors(obs, policy.device), deterministic=True)[0].numpy()
            assert np.array_equal(actions, ours)
            obs, _, terminated, truncated, _ = env.step(actions)
            done, steps = terminated or truncated, steps + 1
        # predict decodes from the same actions, then settles clashes between neighbours (inference.settle_clashes)
        _, solution = predict(model, SMALL[index], deterministic=True, decoding="drawn")
        assert solution.feasible


@pytest.mark.slow
def test_maskable_ppo_load_picks_the_nodes_predict_commits(tiny_model, tmp_path):
    model = tiny_model("mvc")
    zipped, printed = export(model, tmp_path)
    assert "load it with MaskablePPO.load(" in printed
    env = MVCEnv(SMALL)
    sb3 = MaskablePPO.load(zipped, env=env, device="cpu")
    for index in GRAPHS:
        obs, _ = env.reset(seed=0, options={"graph_index": index})
        done, steps = False, 0
        while not done:
            action, _ = sb3.predict(obs, action_masks=env.action_masks(), deterministic=True)
            obs, _, terminated, truncated, _ = env.step(int(action))
            done, steps = terminated or truncated, steps + 1
        # predict's drawn decoding committing one node per pass (the best valid one), on the graph itself (no kernel),
        # is the same sequence of choices
        options = {"deterministic": True, "commit_fraction": 1e-9, "rollouts": 1, "decoding": "drawn", "reductions": False}
        _, solution = predict(model, SMALL[index], **options)
        assert np.array_equal(env.solution(), solution.solution) and steps == solution.passes


def test_export_sizes_the_zip_for_the_graphs_named(tiny_model, tmp_path):
    zipped, _ = export(tiny_model("mis"), tmp_path, "--graphs", str(_one_graph_file(tmp_path)))
    sb3 = PPO.load(zipped, device="cpu")
    assert sb3.observation_space["x"].shape[0] == 7 and sb3.action_space.shape == (7,)


def test_export_refuses_a_name_that_is_not_a_zip(tiny_model, tmp_path):
    result = runner.invoke(app, ["export", "--model", str(tiny_model("mis")), "--sb3", str(tmp_path / "model.pt")])
    assert result.exit_code == 2
    assert result.stderr == f"error: --sb3 {tmp_path / 'model.pt'}: name the file *.zip, as SB3 writes and reads them\n"


def test_graphtransfer_never_loads_the_zip_it_exported(tiny_model, tmp_path):
    zipped, _ = export(tiny_model("mis"), tmp_path)
    result = runner.invoke(
        app, ["predict", "--model", str(zipped), "--graph", str(_one_graph_file(tmp_path)), "--out", str(tmp_path / "s.csv")]
    )
    assert result.exit_code == 2 and "SB3 zip files are not loaded" in result.stderr


def _one_graph_file(tmp_path):
    path = tmp_path / "path7.txt"
    path.write_text("".join(f"{i} {i + 1}\n" for i in range(6)))
    return path
