"""``eval`` over a folder of graphs on one worker (the serial path) and on two worker processes, in
one run: median wall seconds over repeats and their ratio. Each timed call is what
``graphtransfer eval --workers N`` does, worker start-up included. The machine's load average is
printed beside every repeat, since other jobs share the cores.

    .venv/bin/python -m bench.workers [--graphs 8] [--nodes 20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import torch

from bench.harness import markdown_table, median, print_preamble
from graphtransfer.config import PPOConfig, RunConfig
from graphtransfer.graphs import erdos_renyi, write_graph
from graphtransfer.solve.parallel import evaluate
from graphtransfer.training.loop import train

WORKERS = (1, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", type=int, default=8, help="graphs in the folder")
    parser.add_argument("--nodes", type=int, default=20_000, help="nodes per graph (Erdős–Rényi, average degree 4)")
    parser.add_argument("--rollouts", type=int, default=4, help="eval --rollouts")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print_preamble(f"eval over {args.graphs} graphs of {args.nodes:,} nodes: --workers 1 vs 2", threads=1)
    with tempfile.TemporaryDirectory() as tmp:
        model, folder = Path(tmp, "model"), Path(tmp, "graphs")
        config = RunConfig(task="mis", graphs="small", ppo=PPOConfig(total_timesteps=1024, n_envs=4))
        train(config, model, log=lambda _: None)
        folder.mkdir()
        for seed in range(args.graphs):
            write_graph(erdos_renyi(args.nodes, 4.0, seed), folder / f"er-{seed}.npz")
        seconds: dict[int, list[float]] = {w: [] for w in WORKERS}
        loads, objectives = [], {}
        for repeat in range(args.repeats):
            for workers in WORKERS:  # alternate, so a change in the machine's load hits both sides
                started = time.perf_counter()
                _, rows = evaluate(model, folder, workers=workers, rollouts=args.rollouts, deterministic=False)
                seconds[workers].append(time.perf_counter() - started)
                loads.append(os.getloadavg()[0])
                objectives[workers] = [s.objective for row in rows for s in row.decodings.values()]
                print(f"repeat {repeat}: --workers {workers}: {seconds[workers][-1]:.1f} s, load average {loads[-1]:.2f}", flush=True)
    if objectives[1] != objectives[2]:
        raise SystemExit("the two runs gave different objectives; the parallel path is broken")
    serial = median(seconds[1])
    rows = [[f"--workers {w}", f"{median(seconds[w]):.1f}", f"{serial / median(seconds[w]):.2f}×"] for w in WORKERS]
    print()
    print(markdown_table(["eval", "median seconds", "speed-up over --workers 1"], rows))
    print(f"\nload average (1 min) during the runs: {min(loads):.2f}-{max(loads):.2f}; objectives identical: yes")


if __name__ == "__main__":
    main()
