"""Mixed precision: bfloat16 autocast of message passing on CUDA; on the CPU it changes nothing.

The CUDA tests run where a GPU is present and are skipped elsewhere (CI has none).
"""

import numpy as np
import pytest
import torch

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.config import ModelConfig, PPOConfig, RunConfig, Runtime
from graphtransfer.graphs import erdos_renyi, random_geometric
from graphtransfer.nn import build_policy, configure_runtime
from graphtransfer.solve import inference
from graphtransfer.solve.device import runs_on_device
from graphtransfer.solve.inference import solve
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.tasks.mis.env import MISEnv

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def batch_on(device: str, conv: str = "sage"):
    graphs = [erdos_renyi(n, 5.0, n) for n in (37, 80, 23)]
    env = MISEnv(graphs)
    observations = [env.reset(seed=0, options={"graph_index": i})[0] for i in range(len(graphs))]
    obs = {k: torch.as_tensor(np.stack([o[k] for o in observations]), device=device) for k in observations[0]}
    torch.manual_seed(0)
    return build_policy("node-wise", ModelConfig(conv=conv), env.observation_space, env.action_space, device=device), obs


def test_mixed_precision_changes_nothing_on_the_cpu():
    policy, obs = batch_on("cpu")
    with torch.no_grad():
        full, _ = policy.features_extractor.node_embeddings(obs)
        configure_runtime(policy, mixed_precision=True)
        mixed, _ = policy.features_extractor.node_embeddings(obs)
    assert torch.equal(full, mixed)


@needs_cuda
@pytest.mark.parametrize("conv", ["sage", "gcn", "gin"])
@pytest.mark.parametrize("budget", [None, 17])
def test_mixed_precision_passes_messages_in_bfloat16_and_returns_float32(conv, budget):
    policy, obs = batch_on("cuda", conv)
    extractor = policy.features_extractor
    seen: list[torch.dtype] = []  # the output dtypes of every layer the forward calls as a module
    for module in extractor.modules():
        module.register_forward_hook(lambda module, inputs, output: seen.append(output.dtype) if torch.is_tensor(output) else None)
    configure_runtime(policy, max_nodes_per_batch=budget)
    with torch.no_grad():
        full, _ = extractor.node_embeddings(obs)
        in_float32, seen[:] = list(seen), []
        configure_runtime(policy, max_nodes_per_batch=budget, mixed_precision=True)
        mixed, _ = extractor.node_embeddings(obs)
        values = policy.predict_values(obs)
    assert in_float32 and set(in_float32) == {torch.float32}
    assert torch.bfloat16 in seen  # the message-passing layers ran in bfloat16
    assert mixed.dtype == torch.float32 and values.dtype == torch.float32
    assert not torch.equal(full, mixed)
    assert torch.linalg.norm(full - mixed) / torch.linalg.norm(full) < 3e-2  # bfloat16: about 3 significant digits a product


@needs_cuda
def test_a_mixed_precision_ppo_run_on_cuda_updates_finite_weights(tmp_path):
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.training.loop import train

    config = RunConfig(
        task="mis",
        graphs="small",
        model=ModelConfig(width=16, head_width=16, num_layers=2),
        ppo=PPOConfig(total_timesteps=128, n_envs=2, seed=0),
        runtime=Runtime(device="cuda", mixed_precision=True, max_nodes_per_batch=200),
    )
    train(config, tmp_path / "m", log=lambda line: None)
    weights = read_checkpoint(tmp_path / "m").tensors
    assert all(torch.isfinite(w).all() for w in weights.values())


@needs_cuda
@pytest.mark.parametrize("make", [lambda: erdos_renyi(20_000, 8.0, 4), lambda: random_geometric(20_000, 8.0, 4)], ids=["er", "rgg"])
def test_an_mis_solve_on_cuda_keeps_its_passes_there_and_finds_the_host_passes_set(monkeypatch, make):
    """On a GPU the MIS passes stay there (graphtransfer.tasks.mis.device): the same set, pass
    for pass, as the env's own numpy steps between the same GPU forwards, and within 1% of the
    CPU's solve (whose forward rounds differently); on a graph whose wedges rarely close (ER: the
    domination check by pendants alone) and on one full of triangles (random geometric: the full check)."""
    checkpoint = read_checkpoint("mis")
    graph = make()
    on_gpu, on_cpu = (policy_for_graphs(checkpoint, [graph], Runtime(device=device)) for device in ("cuda", "cpu"))
    assert runs_on_device(on_gpu.env, on_gpu.policy) and not runs_on_device(on_cpu.env, on_cpu.policy)
    kept_there = solve(on_gpu.policy, on_gpu.env, seed=2)
    monkeypatch.setattr(inference, "runs_on_device", lambda env, policy: False)  # the host's steps, the same GPU forwards
    host_steps = solve(on_gpu.policy, on_gpu.env, seed=2)
    assert kept_there.feasible and kept_there.passes == host_steps.passes
    assert np.array_equal(kept_there.solution, host_steps.solution)
    assert abs(kept_there.objective - solve(on_cpu.policy, on_cpu.env, seed=2).objective) <= 0.01 * kept_there.objective
