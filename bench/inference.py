"""Inference, plain SB3 + PyG recipe vs graphtransfer.

1. One forward on a 250,151-node graph: time and peak memory, each side in a fresh process so the
   two never share a high-water mark.
2. A full MIS solve of that graph with ``graphtransfer.solve.inference.solve``.
3. Many small predict calls (batch 1, N = 50): SB3's numpy ``predict`` vs our tensor path.
"""

from __future__ import annotations

import argparse
import gc
import resource
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from multiprocessing import get_context
from pathlib import Path

import torch

from bench.harness import (
    BENCH_PPO,
    bench_config,
    build_plain,
    er_graphs,
    large_graph,
    markdown_table,
    median,
    print_preamble,
    seconds_per_call,
    vec_env,
    verdict,
)
from graphtransfer.config import ModelConfig, PPOConfig
from graphtransfer.envs.factory import run_env
from graphtransfer.envs.mis import MISEnv
from graphtransfer.graphs import load_graphs
from graphtransfer.nn import build_policy
from graphtransfer.solve.inference import obs_to_tensors, solve
from graphtransfer.training.model import build_model

TIME_TARGET, MEMORY_TARGET, SOLVE_TARGET_SECONDS = 1 / 8, 1 / 3, 10.0  # issue 5
FORWARD_REPEATS = 3
# Models are built with the shortest rollout buffer: inference never fills it.
INFERENCE_PPO = replace(BENCH_PPO, n_steps=2, batch_size=2)
MIB = 1024  # ru_maxrss is in KiB on Linux


def in_fresh_process(function: Callable, *args):
    """``function(*args)`` in a newly spawned interpreter; its memory high-water mark is its own."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(function, *args).result()


def rss_before_call() -> int:
    """Lower the high-water mark to the current RSS (Linux), so that ``ru_maxrss`` afterwards
    measures only what follows; without that, the larger of the two is what gets reported."""
    gc.collect()
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def tensor_predict(policy, obs) -> torch.Tensor:
    """Our inference path: tensors straight into the policy, no numpy round trip, no autograd."""
    with torch.inference_mode():
        return policy._predict(obs_to_tensors(obs, policy.device))


def plain_forward(config, env, obs) -> Callable[[], object]:
    model = build_plain(config, vec_env(config, env.graphs))
    return lambda: model.policy.predict(obs)


def ours_forward(config, env, obs) -> Callable[[], object]:
    policy = build_policy(config.head, config.model, env.observation_space, env.action_space)
    policy.set_training_mode(False)
    return lambda: tensor_predict(policy, obs)


FORWARDS = {"plain": plain_forward, "ours": ours_forward}


def measure_forward(side: str, threads: int) -> tuple[float, float]:
    """Median seconds of a forward on the large graph, and the peak RSS increase over the RSS
    right before the first one, in MiB. Runs in a fresh process."""
    torch.set_num_threads(threads)
    graph = large_graph()
    config = bench_config([graph], ppo=INFERENCE_PPO)
    env = run_env(config, [graph])
    obs, _ = env.reset(seed=0)
    forward = FORWARDS[side](config, env, obs)
    before = rss_before_call()
    seconds = median([seconds_per_call(forward) for _ in range(FORWARD_REPEATS)])
    return seconds, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / MIB


def forward_table(threads: int) -> str:
    results = {side: in_fresh_process(measure_forward, side, threads) for side in FORWARDS}
    (plain_s, plain_mib), (ours_s, ours_mib) = results["plain"], results["ours"]
    rows = [
        ["plain", "`model.policy.predict(numpy obs)`", f"{plain_s:.2f}", f"{plain_mib:,.0f}"],
        ["ours", "`policy._predict(obs_to_tensors(obs))`, inference mode", f"{ours_s:.2f}", f"{ours_mib:,.0f}"],
        ["**ours / plain**", "", f"**{ours_s / plain_s:.3f}**", f"**{ours_mib / plain_mib:.3f}**"],
        ["target met", "", verdict(ours_s / plain_s, TIME_TARGET, False), verdict(ours_mib / plain_mib, MEMORY_TARGET, False)],
    ]
    return markdown_table(["side", "call", f"seconds (median of {FORWARD_REPEATS})", "peak RSS increase, MiB"], rows)


def measure_solve(train_steps: int, threads: int) -> tuple[float, int, float, bool, float, int]:
    """A policy with the library's default model, trained ``train_steps`` steps on the small
    sample graphs, solving MIS on the large graph. Runs in a fresh process."""
    torch.set_num_threads(threads)
    small = load_graphs("small")
    config = bench_config(small, ppo=PPOConfig(total_timesteps=train_steps, device="cpu"), model=ModelConfig())
    model = build_model(config, vec_env(config, small))
    if train_steps:
        model.learn(train_steps)
    graph = large_graph()
    env = MISEnv([graph], horizon=256)
    policy = build_policy(config.head, config.model, env.observation_space, env.action_space)
    policy.load_state_dict(model.policy.state_dict())
    before = rss_before_call()
    result = solve(policy, env)
    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / MIB
    return result.seconds, result.passes, result.objective, result.feasible, peak, graph.num_nodes


def solve_table(train_steps: int, threads: int) -> str:
    seconds, passes, objective, feasible, peak, num_nodes = in_fresh_process(measure_solve, train_steps, threads)
    met = verdict(seconds, SOLVE_TARGET_SECONDS, higher_is_better=False)
    valid = "yes" if feasible else "no"
    rows = [[f"{num_nodes:,}", train_steps, f"{seconds:.2f}", passes, f"{objective:,.0f}", valid, f"{peak:,.0f}", met]]
    headers = ["nodes", "training steps", "seconds", "passes", "set size", "valid", "peak RSS increase, MiB", "≤10 s met"]
    return markdown_table(headers, rows)


def small_calls_table(calls: int, repeats: int) -> str:
    """Calls per second of batch-1 predicts on a 50-node graph; repeats alternate between paths."""
    graphs = er_graphs(50)
    config = bench_config(graphs, ppo=INFERENCE_PPO)
    obs, _ = run_env(config, graphs).reset(seed=0)
    plain, ours = build_plain(config, vec_env(config, graphs)), build_model(config, vec_env(config, graphs))
    ours.policy.set_training_mode(False)
    paths = {
        "plain: `model.predict(numpy obs)`": lambda: plain.predict(obs),
        "ours: `model.predict(numpy obs)` (SB3's API)": lambda: ours.predict(obs),
        "ours: `policy._predict(obs_to_tensors(obs))`, inference mode": lambda: tensor_predict(ours.policy, obs),
    }
    for call in paths.values():  # lazy initialisation is not what is being measured
        call()
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(repeats):
        for name, call in paths.items():
            times[name].append(seconds_per_call(call, calls))
    baseline = median(times[next(iter(paths))])
    rows = [[name, f"{1 / median(t):,.0f}", f"**{baseline / median(t):.1f}×**"] for name, t in times.items()]
    return markdown_table(["path", "calls/s", "vs plain"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--train-steps", type=int, default=4096, help="PPO steps on the small graphs before the solve (0: untrained)")
    parser.add_argument("--calls", type=int, default=300, help="predict calls per timed repeat, N = 50")
    parser.add_argument("--repeats", type=int, default=3, help="repeats of the small-call timing")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print_preamble("Inference", args.threads)
    print("One forward on a 250,151-node graph (Barabási–Albert, m = 4), 2-layer GCN width 64, each side in a fresh process:\n")
    print(forward_table(args.threads), flush=True)
    print("\nFull MIS solve on that graph, `solve(policy, MISEnv([graph], horizon=256))`, library default model:\n")
    print(solve_table(args.train_steps, args.threads), flush=True)
    print(f"\nSmall predict calls, batch 1, N = 50, {args.calls} calls per repeat, median of {args.repeats}:\n")
    print(small_calls_table(args.calls, args.repeats))


if __name__ == "__main__":
    main()
