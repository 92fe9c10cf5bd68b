"""--vec-env ray: each env a Ray actor behind SB3's VecEnv interface, with the numbers of dummy."""

import pytest
import torch

from graphtransfer.config import ModelConfig, PPOConfig, RunConfig, Runtime
from graphtransfer.graphs import load_graphs
from graphtransfer.training.loop import train

ray = pytest.importorskip("ray")


def tiny(vec_env: str, task: str) -> RunConfig:
    return RunConfig(
        task=task,
        graphs="small",
        model=ModelConfig(width=8, head_width=8, num_layers=1),
        ppo=PPOConfig(total_timesteps=64, n_envs=2, n_steps=16, batch_size=16, n_epochs=2, seed=3),
        runtime=Runtime(device="cpu", vec_env=vec_env),
    )


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.slow
@pytest.mark.parametrize("task", ["mis", "mvc"])  # PPO, and MaskablePPO, whose action masks come from the actors
def test_ray_rollouts_train_the_weights_dummy_trains(local_ray, tmp_path, task):
    weights = {}
    for vec_env in ("dummy", "ray"):
        result = train(tiny(vec_env, task), tmp_path / vec_env, log=lambda _: None)
        assert result.steps == 64
        weights[vec_env] = result.model.policy.state_dict()
    for name, tensor in weights["dummy"].items():
        assert torch.equal(tensor, weights["ray"][name]), name
    assert ray.is_initialized()  # a Ray instance the caller started is left running


@pytest.mark.slow
def test_the_ray_vec_env_answers_attribute_calls_like_dummy(local_ray):
    from stable_baselines3.common.env_util import make_vec_env

    from graphtransfer.tasks import MVCEnv
    from graphtransfer.training.ray_vec_env import RayVecEnv

    graphs = load_graphs("small")[:3]
    envs = make_vec_env(lambda: MVCEnv(graphs), n_envs=2, seed=0, vec_env_cls=RayVecEnv)
    try:
        envs.reset()
        assert envs.has_attr("action_masks") and not envs.has_attr("no_such_member")
        assert [mask.shape for mask in envs.env_method("action_masks")] == [(envs.observation_space["x"].shape[0],)] * 2
        envs.set_attr("horizon", 5, indices=[1])
        assert envs.get_attr("horizon") == [MVCEnv(graphs).horizon, 5]
    finally:
        envs.close()
