"""Training on batched envs (``--vec-env batched``, the default where an env declares a batch) is
training on the same envs one by one, weight for weight; a user's env opts in by declaring a
batch and otherwise trains as before; a batch that departs from its env is caught."""

import numpy as np
import pytest
import torch
from stable_baselines3.common.vec_env import DummyVecEnv
from typer.testing import CliRunner

from examples.user_mis import BatchedMISEnv, UserMISBatch, UserMISEnv
from graphtransfer.cli import app
from graphtransfer.config import ModelConfig, PPOConfig, RunConfig, Runtime
from graphtransfer.errors import UsageError
from graphtransfer.graphs import erdos_renyi
from graphtransfer.tasks.mis.batched import MISBatch
from graphtransfer.tasks.mis.env import MISEnv
from graphtransfer.training.batched_vec_env import BatchedVecEnv, first_difference
from graphtransfer.training.model import make_model

GRAPHS = [erdos_renyi(n, 3.0, seed) for seed, n in enumerate((20, 35, 50, 12))]


def tiny(vec_env: str, **run) -> RunConfig:
    return RunConfig(
        **({"task": "mis"} | run),
        head="node-wise",
        model=ModelConfig(width=8, head_width=8, num_layers=2),
        ppo=PPOConfig(n_envs=4, n_steps=16, batch_size=32, n_epochs=2, seed=3),
        runtime=Runtime(threads=1, vec_env=vec_env),
    )


def trained_weights(vec_env: str, **run) -> dict[str, torch.Tensor]:
    model = make_model(tiny(vec_env, **run), GRAPHS, 3)
    model.learn(192)
    return model.policy.state_dict()


def test_batched_training_is_one_by_one_training_weight_for_weight():
    batched, one_by_one = trained_weights("batched"), trained_weights("dummy")
    assert batched.keys() == one_by_one.keys()
    for name, tensor in batched.items():
        assert torch.equal(tensor, one_by_one[name]), name


def test_the_default_steps_a_task_with_a_batch_as_one_batch_and_a_user_env_without_one_one_by_one():
    assert isinstance(make_model(tiny("auto"), GRAPHS, 0).env, BatchedVecEnv)
    user = make_model(tiny("auto", env="examples.user_mis:UserMISEnv"), GRAPHS, 0)
    assert isinstance(user.env, DummyVecEnv)
    user.learn(64)  # an env without a batch still trains
    assert user.num_timesteps >= 64


def test_a_user_env_that_declares_a_batch_trains_on_it_as_it_would_one_by_one():
    assert first_difference(lambda: BatchedMISEnv(GRAPHS, horizon=6)) is None
    run = {"env": "examples.user_mis:BatchedMISEnv"}
    assert isinstance(make_model(tiny("auto", **run), GRAPHS, 0).env, BatchedVecEnv)
    batched, one_by_one = trained_weights("batched", **run), trained_weights("dummy", **run)
    assert all(torch.equal(tensor, one_by_one[name]) for name, tensor in batched.items())


def test_vec_env_batched_for_an_env_without_a_batch_is_one_line():
    with pytest.raises(UsageError, match="declares `batched`"):
        make_model(tiny("batched", env="examples.user_mis:UserMISEnv"), GRAPHS, 0)
    result = CliRunner().invoke(
        app, ["train", "--env", "examples.user_mis:UserMISEnv", "--graphs", "small", "--vec-env", "batched", "--steps", "64"]
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "--vec-env auto or dummy" in lines[0], result.output


class LosesTheDraws(MISBatch):
    """A batch that forgets one episode's random draws: its observations depart from the env's."""

    def draws(self, which: np.ndarray) -> np.ndarray:
        draw = super().draws(which)
        draw[: self.max_nodes] = 0.0
        return draw


class MISWithLostDraws(MISEnv):
    batched = LosesTheDraws


class HalvesRewards(UserMISBatch):
    def apply(self, actions):
        rewards, over = super().apply(actions)
        return rewards / 2, over


class UserMISWithHalvedRewards(UserMISEnv):
    batched = HalvesRewards


def test_a_batch_that_departs_from_its_env_is_caught_where_it_departs():
    assert "observation key 'x' differs" in first_difference(lambda: MISWithLostDraws(GRAPHS, horizon=6))
    assert "rewards differ" in first_difference(lambda: UserMISWithHalvedRewards(GRAPHS, horizon=6))


OWN_STEP = """
from examples.user_mis import BatchedMISEnv


class OwnStep(BatchedMISEnv):  # steps its own way: its parent's batch would skip this step
    def step(self, action):
        return super().step(action)
"""


def test_a_subclass_that_overrides_the_step_trains_one_by_one_and_batched_is_refused_for_it(tmp_path, monkeypatch):
    module = tmp_path / "own_step_env.py"
    module.write_text(OWN_STEP)
    monkeypatch.syspath_prepend(str(tmp_path))
    run = {"env": "own_step_env:OwnStep"}
    assert isinstance(make_model(tiny("auto", **run), GRAPHS, 0).env, DummyVecEnv)
    with pytest.raises(UsageError, match="would skip OwnStep.step"):
        make_model(tiny("batched", **run), GRAPHS, 0)
