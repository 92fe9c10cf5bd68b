"""Training on batched envs (issue 66): env steps per second, and learning per env step, batched
against one by one.

``throughput`` trains MIS (the task's own model) on 16 Erdős–Rényi graphs of N nodes, average
degree 4, under each setting of :data:`SETTINGS`, each run a fresh process, the settings in turn
``--repeats`` times (interleaved), and prints the median env steps per second of ``learn`` after a
warm-up rollout and update, with the load average before and after. ``--busy`` runs one other
process that keeps a core busy beside every measurement (the contention figures).

``curves`` trains each setting on the bundled ``small`` graphs and, every ``--every`` env steps,
evaluates the policy alone (one seeded rollout, no exact rules or kernel: the policy's own
decisions) on held-out ER and BA graphs of 200 nodes, as the ratio of its set to greedy by minimum
degree: learning per env step. Settings that step the same envs one by one and batched give the
same curve, weight for weight (``tests/test_batched_training.py``); ``best`` must follow the
default's curve, ``fastest`` shows what its larger batches cost per env step.

    .venv/bin/python -m bench.batched_training throughput [--sizes 50,1000] [--repeats 3] [--threads 2] [--busy]
    .venv/bin/python -m bench.batched_training curves [--steps 40960] [--every 4096] [--seeds 0,1]
    .venv/bin/python -m bench.batched_training steps [--sizes 50,1000] [--envs 64]

``steps`` times the env steps alone (``VecEnv.step`` with random valid actions, no policy) of every
built-in task, K envs batched against one by one, three alternating rounds, medians.

Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import replace

import numpy as np

TAG = "RESULT_JSON:"
SETTINGS: dict[str, dict] = {
    "default, one by one": {"n_envs": 8, "n_steps": 32, "batch_size": 64, "n_epochs": 4, "vec_env": "dummy"},
    "default, batched": {"n_envs": 8, "n_steps": 32, "batch_size": 64, "n_epochs": 4, "vec_env": "batched"},
    "best": {"n_envs": 64, "n_steps": 16, "batch_size": 256, "n_epochs": 4, "learning_rate": 1.2e-3, "vec_env": "batched"},
    "fastest": {"n_envs": 256, "n_steps": 16, "batch_size": 1024, "n_epochs": 2, "vec_env": "batched"},
    "best, 2 epochs": {"n_envs": 64, "n_steps": 16, "batch_size": 256, "n_epochs": 2, "learning_rate": 1.2e-3, "vec_env": "batched"},
    "2 epochs of 512, lr x8": {
        "n_envs": 128,
        "n_steps": 16,
        "batch_size": 512,
        "n_epochs": 2,
        "learning_rate": 2.4e-3,
        "vec_env": "batched",
    },
}
"""PPO settings (and the VecEnv) of each side: train's defaults for MIS one by one and batched;
``best``, the fastest setting found on two cores that learns as much per env step as the default
(minibatches 4x larger, the learning rate 4x: ``curves``; the same minibatches at the default rate
learned less in the first 12k steps, and 2 epochs of minibatches of 1,024 at 4x the rate stayed
below the default's curve); ``best, 2 epochs``, the same at 2 epochs (its curve 0.1% below the
default's on average; 2 epochs of minibatches of 512 over 128 envs at 8x the rate started slower);
``fastest``, more env steps per second at less learning per step"""
TIMED = {50: 16384, 1000: 4096}
"""env steps timed per size (the fastest setting's rollouts are 4,096 steps)"""


def run_config(setting: str, graphs: str, threads: int, steps: int, seed: int = 0):
    """The MIS run of ``setting`` on ``graphs``, as ``graphtransfer train --task mis`` builds it."""
    from graphtransfer.config import Runtime
    from graphtransfer.config.layers import resolve

    chosen = dict(SETTINGS[setting])
    vec_env = chosen.pop("vec_env")
    config = resolve([("bench", {"task": "mis", "graphs": graphs})])
    ppo = replace(config.ppo, **chosen, total_timesteps=steps, seed=seed)
    return replace(config, head="node-wise", ppo=ppo, runtime=Runtime(threads=threads, vec_env=vec_env))


def throughput_worker(setting: str, nodes: int, threads: int) -> dict:
    """Env steps per second of ``learn`` under ``setting`` on 16 ER graphs of ``nodes`` nodes."""
    from graphtransfer.graphs import erdos_renyi
    from graphtransfer.training.model import make_model

    graphs = [erdos_renyi(nodes, 4.0, seed) for seed in range(16)]
    config = run_config(setting, "small", threads, TIMED.get(nodes, 4096))
    model = make_model(config, graphs, 0)
    model.learn(config.ppo.n_steps * config.ppo.n_envs)  # warm-up: one rollout and update
    started = time.perf_counter()
    model.learn(config.ppo.total_timesteps, reset_num_timesteps=False)
    return {"sps": config.ppo.total_timesteps / (time.perf_counter() - started)}


def curve_worker(setting: str, steps: int, every: int, seed: int, threads: int) -> dict:
    """The policy's ratio to greedy on held-out graphs after every ``every`` env steps of ``setting``."""
    from graphtransfer.graphs import barabasi_albert, erdos_renyi, load_graphs
    from graphtransfer.solve.evaluate import evaluate_policy
    from graphtransfer.solve.rollouts import ONE_ROLLOUT
    from graphtransfer.training.model import make_model

    config = run_config(setting, "small", threads, steps, seed)
    held_out = [erdos_renyi(200, 6.0, 100 + i) for i in range(4)] + [barabasi_albert(200, 3, 200 + i) for i in range(4)]
    model = make_model(config, load_graphs("small"), seed)
    points, trained, seconds = [], 0, 0.0
    while trained < steps:
        started = time.perf_counter()
        model.learn(every, reset_num_timesteps=trained == 0)
        seconds += time.perf_counter() - started
        trained = model.num_timesteps
        rows = evaluate_policy(model.policy, config, held_out, replace(ONE_ROLLOUT, reductions=False))
        ratio = statistics.mean(row.ratio(row.policy.objective, row.baselines[0].objective) for row in rows)
        points.append({"steps": trained, "ratio": ratio, "seconds": seconds})
    return {"points": points}


def env_steps_per_second(task: str, nodes: int, envs: int, batched: bool, steps: int = 60) -> float:
    """Env steps per second of ``VecEnv.step`` alone for ``envs`` envs of ``task`` (a built-in task's
    name, or a user's env as ``module:Class``) on 8 ER graphs of ``nodes`` nodes."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv

    from graphtransfer.graphs import erdos_renyi
    from graphtransfer.tasks.factory import make_env
    from graphtransfer.training.batched_vec_env import BatchedVecEnv, random_actions

    graphs = [erdos_renyi(nodes, 4.0, seed) for seed in range(8)]
    user = ":" in task
    build = lambda: make_env("" if user else task, task if user else None, {}, graphs, None)  # noqa: E731
    vec = BatchedVecEnv([build() for _ in range(envs)]) if batched else make_vec_env(build, n_envs=envs, vec_env_cls=DummyVecEnv)
    vec.seed(0)
    vec.reset()
    rng, spent = np.random.default_rng(0), 0.0
    for _ in range(steps):
        actions = random_actions(vec, rng)
        started = time.perf_counter()
        vec.step(actions)
        spent += time.perf_counter() - started
    vec.close()
    return envs * steps / spent


def env_steps(args: argparse.Namespace) -> None:
    from graphtransfer.tasks import TASKS

    print(
        f"`python -m bench.batched_training steps --sizes {args.sizes} --envs {args.envs}`, {time.strftime('%Y-%m-%d %H:%M')}, "
        f"load {load()} before\n"
    )
    print("| task | N | one by one, env steps/s | batched | ratio |")
    print("|---|---:|---:|---:|---:|")
    for task in args.env or TASKS:
        for nodes in (int(n) for n in args.sizes.split(",")):
            rates: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(3):
                for batched in rates:
                    rates[batched].append(env_steps_per_second(task, nodes, args.envs, batched))
            one, many = statistics.median(rates[False]), statistics.median(rates[True])
            print(f"| {task} | {nodes:,} | {one:,.0f} | {many:,.0f} | {many / one:.1f} |", flush=True)
    print(f"\n{args.envs} envs, random valid actions; load {load()} after")


def measure(arguments: list[str]) -> dict:
    """One worker process's result line."""
    result = subprocess.run([sys.executable, "-m", "bench.batched_training", *arguments], capture_output=True, text=True, timeout=7200)
    line = next((line for line in result.stdout.splitlines() if line.startswith(TAG)), None)
    if line is None:
        raise RuntimeError(f"{' '.join(arguments)} gave no result: {result.stderr[-2000:]}")
    return json.loads(line[len(TAG) :])


@contextmanager
def busy(on: bool):
    """One other process that keeps a core busy while the block runs, where ``on``."""
    process = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if on else None
    try:
        yield
    finally:
        if process is not None:
            process.kill()
            process.wait()


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def throughput(args: argparse.Namespace) -> None:
    sizes = [int(n) for n in args.sizes.split(",")]
    print(
        f"`python -m bench.batched_training throughput --sizes {args.sizes} --repeats {args.repeats} --threads {args.threads}"
        f"{' --busy' if args.busy else ''}`, {time.strftime('%Y-%m-%d %H:%M')}, load {load()} before\n"
    )
    print(f"| N | setting | env steps/s (median) | min | max | vs {args.settings.split(';')[0]} |")
    print("|---:|---|---:|---:|---:|---:|")
    with busy(args.busy):
        for nodes in sizes:
            runs: dict[str, list[float]] = {name: [] for name in args.settings.split(";")}
            for _ in range(args.repeats):
                for name in runs:
                    runs[name].append(measure(["--worker", "throughput", name, str(nodes), str(args.threads)])["sps"])
            base = statistics.median(next(iter(runs.values())))
            for name, values in runs.items():
                median = statistics.median(values)
                print(f"| {nodes:,} | {name} | {median:,.0f} | {min(values):,.0f} | {max(values):,.0f} | {median / base:.2f} |", flush=True)
    print(f"\nload {load()} after")


def curves(args: argparse.Namespace) -> None:
    seeds = [int(s) for s in args.seeds.split(",")]
    print(
        f"`python -m bench.batched_training curves --steps {args.steps} --every {args.every} --seeds {args.seeds} "
        f"--settings '{args.settings}'`, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, load {load()} before\n"
    )
    names = args.settings.split(";")
    found = {
        name: [
            measure(["--worker", "curve", name, str(args.steps), str(args.every), str(seed), str(args.threads)])["points"] for seed in seeds
        ]
        for name in names
    }
    print("| env steps | " + " | ".join(f"{name}: set / greedy" for name in names) + " |")
    print("|---:|" + "---:|" * len(names))
    for index, point in enumerate(found[names[0]][0]):
        cells = [statistics.mean(run[index]["ratio"] for run in found[name]) for name in names]
        print(f"| {point['steps']:,} | " + " | ".join(f"{cell:.4f}" for cell in cells) + " |")
    seconds = [statistics.mean(run[-1]["seconds"] for run in found[name]) for name in names]
    print("| training seconds | " + " | ".join(f"{s:.0f}" for s in seconds) + " |")
    print(f"\nmean of seeds {args.seeds}; load {load()} after")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", choices=("throughput", "curves", "steps"), default="throughput")
    parser.add_argument("--envs", type=int, default=64, help="steps: envs stepped together")
    parser.add_argument("--env", action="append", help="steps: a user's env (module:Class) instead of the built-in tasks")
    parser.add_argument("--sizes", default="50,1000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--busy", action="store_true", help="one other busy process beside every measurement")
    parser.add_argument("--steps", type=int, default=40960)
    parser.add_argument("--every", type=int, default=4096)
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument(
        "--settings", default="default, one by one;default, batched;best;fastest", help="curves: the settings to compare, ;-separated"
    )
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, setting, *rest = args.worker
        numbers = [int(value) for value in rest]
        found = throughput_worker(setting, *numbers) if kind == "throughput" else curve_worker(setting, *numbers)
        print(TAG + json.dumps(found), flush=True)
        return
    {"throughput": throughput, "curves": curves, "steps": env_steps}[args.mode](args)


if __name__ == "__main__":
    main()
