"""SB3 habits: callbacks passed through train(), the trained model in the result, load_model()."""

import gymnasium
import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback, CallbackList, EvalCallback

from graphtransfer import load_model
from graphtransfer.config import ModelConfig, PPOConfig, RunConfig, Runtime
from graphtransfer.errors import UsageError
from graphtransfer.graphs import barabasi_albert, load_graphs, write_npz
from graphtransfer.training.loop import train
from graphtransfer.transferring.transfer import transfer


def tiny(task: str = "mis", steps: int = 128) -> RunConfig:
    return RunConfig(
        task=task,
        graphs="small",
        model=ModelConfig(width=8, head_width=8, num_layers=1),
        ppo=PPOConfig(total_timesteps=steps, n_envs=2, n_steps=16, batch_size=16, seed=0),
        runtime=Runtime(device="cpu"),
    )


class CountSteps(BaseCallback):
    """A user-written callback: counts env steps and rollouts, stops after ``stop_after`` steps."""

    def __init__(self, stop_after: int | None = None):
        super().__init__()
        self.steps = self.rollouts = 0
        self.stop_after = stop_after

    def _on_rollout_start(self) -> None:
        self.rollouts += 1

    def _on_step(self) -> bool:
        self.steps += 1
        return self.stop_after is None or self.steps < self.stop_after


@pytest.mark.slow
def test_an_eval_callback_and_a_user_callback_drive_train(tmp_path):
    eval_env = gymnasium.make("graphtransfer/MIS-v0", graphs=load_graphs("small"))  # spaces padded as in training
    evaluation = EvalCallback(eval_env, eval_freq=32, n_eval_episodes=2, log_path=str(tmp_path / "evals"), verbose=0)
    counter = CountSteps()
    result = train(tiny(), tmp_path / "run", log=lambda _: None, callback=CallbackList([evaluation, counter]))
    assert counter.steps == 64 and counter.rollouts == 4  # 128 env steps over 2 envs, 16 steps per rollout
    assert len(evaluation.evaluations_timesteps) == 2 and np.isfinite(evaluation.best_mean_reward)
    assert (tmp_path / "evals" / "evaluations.npz").exists()
    assert isinstance(result.model, PPO) and result.model.num_timesteps == 128
    assert (tmp_path / "run" / "config.json").exists()


@pytest.mark.slow
def test_a_callback_returning_false_stops_training_and_the_run_is_saved(tmp_path):
    result = train(tiny(steps=256), tmp_path / "run", log=lambda _: None, callback=[CountSteps(stop_after=20)])
    assert result.steps < 256 and not result.interrupted
    again = load_model(tmp_path / "run", "small")
    for name, tensor in result.model.policy.state_dict().items():
        assert torch.equal(tensor, again.policy.state_dict()[name]), name


def test_a_callback_that_is_not_one_is_refused_by_name(tmp_path):
    with pytest.raises(UsageError, match="callback=.*print.*is not an SB3 callback"):
        train(tiny(), tmp_path / "run", log=lambda _: None, callback=print)


@pytest.mark.slow
def test_load_model_gives_an_sb3_algorithm_for_larger_graphs(tiny_model):
    mvc = load_model(tiny_model("mvc"), "small")
    assert isinstance(mvc, MaskablePPO)
    graph = barabasi_albert(5000, 3, seed=0)  # trained on 20-60 nodes
    mis = load_model(tiny_model("mis"), [graph])
    assert isinstance(mis, PPO)
    obs = mis.env.reset()
    actions, _ = mis.predict(obs, deterministic=True)
    assert actions.shape == (1, graph.num_nodes)


@pytest.mark.slow
def test_transfer_returns_the_sb3_model_on_the_destination_graphs(tiny_model, tmp_path):
    write_npz(barabasi_albert(300, 3, seed=1), tmp_path / "big.npz")
    result = transfer(tiny_model("mis"), tmp_path / "big.npz", folder=tmp_path / "big", log=lambda _: None)
    assert isinstance(result.model, PPO) and result.model.observation_space["x"].shape[0] == 300
