"""The node budget (``--max-nodes-per-batch``) on the 250k-node sample graph ``large``.

1. One inference forward of the library's default model (3 GraphSAGE layers, width 64, max
   aggregation), without and with a budget, on both message-passing routes: the CPU's sparse
   CSR route (no gradients, >= 65,536 edges) and gather/scatter (the route with gradients or
   on CUDA, forced here by raising ``CSR_MIN_EDGES``). Each in a fresh process, so each peak
   is its own; median seconds of 3, peak RSS increase over the RSS right before.
2. One fine-tune iteration (``finetune``: a rollout of 2 steps, one minibatch of 2
   observations) at the default budget (600,000 nodes: both observations in one backward pass)
   and at 250,000 (one at a time), also in fresh processes.
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from bench.harness import MIB, in_fresh_process, markdown_table, median, print_preamble, rss_before_call, seconds_per_call
from graphtransfer.config import ModelConfig, RunConfig, Runtime
from graphtransfer.graphs import load_graph
from graphtransfer.nn import build_policy, configure_runtime, extractor
from graphtransfer.solve.inference import obs_to_tensors
from graphtransfer.tasks.factory import run_env
from graphtransfer.training.loop import finetune

REPEATS = 3


def measure_forward(route: str, budget: int | None, threads: int) -> tuple[float, float]:
    """Median seconds and peak RSS increase (MiB) of ``policy._predict`` on the large graph."""
    torch.set_num_threads(threads)
    if route == "gather":
        extractor.CSR_MIN_EDGES = 1 << 62
    config = RunConfig(task="mis", model=ModelConfig())
    env = run_env(config, [load_graph("large")])
    obs = obs_to_tensors(env.reset(seed=0)[0], torch.device("cpu"))
    torch.manual_seed(0)
    policy = build_policy("node-wise", config.model, env.observation_space, env.action_space)
    policy.set_training_mode(False)
    configure_runtime(policy, budget)
    before = rss_before_call()
    with torch.inference_mode():
        seconds = median([seconds_per_call(lambda: policy._predict(obs)) for _ in range(REPEATS)])
    return seconds, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / MIB


def measure_finetune(budget: int | None, threads: int) -> tuple[float, float, float, float]:
    """Seconds (total, rollout, update) and peak RSS increase (MiB) of one fine-tune iteration."""
    torch.set_num_threads(threads)
    graph = load_graph("large")
    config = RunConfig(task="mis", head="node-wise", model=ModelConfig(), runtime=Runtime(threads=threads, device="cpu"))
    env = run_env(config, [graph])
    policy = build_policy("node-wise", config.model, env.observation_space, env.action_space)
    before = rss_before_call()
    started = time.perf_counter()
    result = finetune(policy, config, [graph], 2, log=lambda line: None, runtime=Runtime(max_nodes_per_batch=budget))
    seconds = time.perf_counter() - started
    return seconds, result.rollout_seconds, result.update_seconds, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / MIB


def forward_table(budgets: list[int | None], threads: int) -> str:
    rows = []
    for route in ("csr", "gather"):
        baseline = None
        for budget in budgets:
            seconds, mib = in_fresh_process(measure_forward, route, budget, threads)
            baseline = baseline or (seconds, mib)
            label = "none" if budget is None else f"{budget:,}"
            rows.append([route, label, f"{seconds:.2f}", f"{mib:,.0f}", f"{seconds / baseline[0]:.2f}", f"{mib / baseline[1]:.2f}"])
            print(rows[-1], flush=True)
    headers = [
        "route",
        "max nodes per batch",
        f"seconds (median of {REPEATS})",
        "peak RSS increase, MiB",
        "time / no budget",
        "memory / no budget",
    ]
    return markdown_table(headers, rows)


def finetune_table(budgets: list[int | None], threads: int) -> str:
    rows = []
    for budget in budgets:
        seconds, rollout, update, mib = in_fresh_process(measure_finetune, budget, threads)
        label = "default (600,000)" if budget is None else f"{budget:,}"
        rows.append([label, f"{seconds:.1f}", f"{rollout:.1f}", f"{update:.1f}", f"{mib:,.0f}"])
        print(rows[-1], flush=True)
    return markdown_table(["max nodes per batch", "seconds", "rollout s", "update s", "peak RSS increase, MiB"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--budgets", default="50000,10000", help="comma-separated node budgets for the forward")
    parser.add_argument("--skip-finetune", action="store_true", help="only the forward table")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print_preamble("Node budget (--max-nodes-per-batch)", args.threads)
    budgets = [None, *(int(b) for b in args.budgets.split(","))]
    print("One inference forward on the sample graph `large` (250,000 nodes, 1,999,644 directed edges), default model:\n")
    print(forward_table(budgets, args.threads), flush=True)
    if not args.skip_finetune:
        print("\nOne fine-tune iteration on `large` (rollout of 2 steps, one minibatch of 2 observations, 1 epoch):\n")
        print(finetune_table([None, 250_000], args.threads))


if __name__ == "__main__":
    main()
