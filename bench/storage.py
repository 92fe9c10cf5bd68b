"""Rollout storage, plain SB3 + PyG recipe vs graphtransfer: observation bytes kept per env step.

Measured on the buffers the two models really use (same env, same PPO settings): the plain
recipe's preallocated arrays, and ours after a real rollout has filled it (what it keeps depends
on what the steps held). Extrapolated to SB3's default ``n_steps=2048`` on a 250,151-node graph,
where the plain recipe's request follows from the observation shapes alone and is never allocated.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np
import torch
from gymnasium import spaces

from bench.harness import BENCH_PPO, SIDES, bench_config, er_graphs, large_graph, markdown_table, print_preamble, vec_env, verdict
from graphtransfer.training.buffers import held_bytes
from graphtransfer.training.model import build_model

SIZES = (50, 1000, 10000)
TARGET = 0.1  # ours / plain at N=10,000 (issue 5)
SB3_DEFAULT_N_STEPS = 2048
PROBE_STEPS = 8  # steps of the real rollout the 250k-node row extrapolates from
# What SB3's rollout buffers keep per step besides the observation; anything else is observation storage.
NOT_OBSERVATIONS = {"actions", "rewards", "returns", "episode_starts", "values", "log_probs", "advantages", "action_masks"}
GIB = 2**30


def observation_bytes(buffer) -> int:
    """Bytes of every array the rollout buffer holds for observations, however it stores them
    (SB3's per-key arrays, or a separate store of graph structure)."""
    return sum(held_bytes(value) for name, value in vars(buffer).items() if name not in NOT_OBSERVATIONS)


def fill(model) -> None:
    """One real rollout into the model's buffer."""
    _, callback = model._setup_learn(model.n_steps * model.n_envs, None)
    model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)


def bytes_per_step(model) -> float:
    buffer = model.rollout_buffer
    return observation_bytes(buffer) / (buffer.buffer_size * buffer.n_envs)


def sb3_request(observation_space: spaces.Dict, n_steps: int, n_envs: int = 1) -> int:
    """Bytes SB3's ``DictRolloutBuffer`` allocates for observations: every key, every step, in
    the key's own dtype."""
    per_step = sum(int(np.prod(space.shape)) * np.dtype(space.dtype).itemsize for space in observation_space.spaces.values())
    return per_step * n_steps * n_envs


def compare_at(num_nodes: int) -> list[object]:
    graphs = er_graphs(num_nodes)
    config = bench_config(graphs)
    models = {side: build(config, vec_env(config, graphs)) for side, build in SIDES.items()}
    fill(models["ours"])  # the plain buffer's size does not depend on its contents: SB3 preallocates it
    plain, ours = bytes_per_step(models["plain"]), bytes_per_step(models["ours"])
    expected = sb3_request(models["plain"].observation_space, 1)
    if plain != expected:
        raise RuntimeError(f"plain buffer holds {plain} bytes per step, the shape rule says {expected}: fix sb3_request")
    plain_buffer = models["plain"].rollout_buffer
    edge_share = plain_buffer.observations["edge_index"].nbytes / observation_bytes(plain_buffer)
    ratio = ours / plain
    target = verdict(ratio, TARGET, higher_is_better=False) if num_nodes == max(SIZES) else ""
    return [f"{num_nodes:,}", f"{plain / 1024:,.1f} KiB", f"{ours / 1024:,.1f} KiB", f"**{ratio:.3f}**", target, f"{edge_share:.0%}"]


def ours_at_default_n_steps(config, graphs) -> float:
    """Our buffer's bytes at ``n_steps=2048``, extrapolated from a real 8-step rollout: the
    edge-set table once, plus the mean of the rest per step."""
    small = replace(config, ppo=replace(config.ppo, n_steps=PROBE_STEPS, batch_size=PROBE_STEPS))
    model = build_model(small, vec_env(small, graphs))
    fill(model)
    table = model.rollout_buffer.edges.table_bytes()
    return table + (observation_bytes(model.rollout_buffer) - table) / PROBE_STEPS * SB3_DEFAULT_N_STEPS


def large_row() -> list[object]:
    graph = large_graph()
    config = bench_config([graph])
    observation_space = vec_env(config, [graph]).observation_space
    plain = sb3_request(observation_space, SB3_DEFAULT_N_STEPS)
    ours = ours_at_default_n_steps(config, [graph])
    name = f"{graph.num_nodes:,} nodes, {graph.num_edges:,} edges (BA), n_steps {SB3_DEFAULT_N_STEPS}, whole buffer"
    return [name, f"{plain / GIB:.1f} GiB", f"{ours / GIB:.1f} GiB", f"**{ours / plain:.3f}**", "", ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="graph sizes (nodes)")
    args = parser.parse_args()
    print_preamble("Rollout storage: observation bytes per env step", torch.get_num_threads())
    rows = [compare_at(num_nodes) for num_nodes in args.sizes]
    rows.append(large_row())
    headers = ["N", "plain", "ours", "ours / plain", f"target ≤{TARGET} met", "plain: edge_index share"]
    print(markdown_table(headers, rows))
    print(
        f"\nMIS env, 3 Erdős–Rényi graphs of average degree 4 per N; n_steps {BENCH_PPO.n_steps}, 1 env; ours after one rollout "
        "of the untrained policy. Bytes: every observation array the rollout buffer holds / (n_steps × n_envs). Last row: SB3's "
        f"request from the observation shapes (plain) vs ours extrapolated from a {PROBE_STEPS}-step rollout."
    )


if __name__ == "__main__":
    main()
