"""graphtransfer on a CUDA GPU (issue 31), in one call on a machine with a GPU: one forward against
the plain recipe on the same device, one solve after load, the GPU's load in PPO updates, whole
``predict`` commands from 250k to 10^7 nodes (10^7: on the GPU in float32 only), and training
speed, each on the GPU in float32 and with bfloat16 message passing beside the same machine's CPU.

- forward: the make-demo MIS policy's ``act`` (deterministic) on the recipe's own random graph
  (``naive_graph_env.random_graph_edge_index``, average degree 4) at 250,151 and 10^6 nodes, and the
  recipe's model (``../shared/plain-recipe``, its classes unchanged, built as its driver builds them
  but with ``device="cuda"``) calling ``policy._predict`` as its driver times it; CUDA-synchronised
  wall clock, median of ``CALLS`` after one warm-up; the GPU's peak allocated memory.
- solve: one MIS solve after load, in this process (250k to 10^7 nodes): the passes kept on the GPU
  (``graphtransfer.tasks.mis.device``) against the env's numpy steps between the same GPU forwards
  (the path before it) and the same machine's CPU.
- busy: NVML's GPU utilisation, sampled every 20 ms, inside each PPO update of MIS training at
  148,640 nodes (n_steps 32, batch 8, 4 epochs).
- predict: ``graphtransfer predict`` as a user runs it (a fresh process, Erdős–Rényi average degree 8,
  the default decoding): the solve as predict prints it, the whole process, its peak RSS.
- train: env steps/s of MIS training with the recipe's PPO settings (``bench.training_recipe``'s
  worker) at N = 50 / 1,000 / 10,000, and one PPO iteration at 148,640 nodes (n_steps 32, batch 8,
  4 epochs; ``graphtransfer train``).

Parts run in that order while ``--deadline`` seconds last; a part that fails prints its error and
the next runs. Prints Markdown tables (for bench/RESULTS.md) and, with ``--json``, every number.

    python -m bench.gpu --model runs/mis/small [--deadline 480] [--json gpu.json] [--recipe DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from stable_baselines3.common.callbacks import BaseCallback

from bench.forward import RECIPE
from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.config import PPOConfig, RunConfig, Runtime
from graphtransfer.graphs import Graph, erdos_renyi, write_graph
from graphtransfer.solve import inference
from graphtransfer.solve.inference import act, obs_to_tensors
from graphtransfer.solve.loading import policy_for_graphs
from graphtransfer.training.loop import train

CALLS = 3
CLI = [sys.executable, "-c", "from graphtransfer.cli import main; main()"]
ARMS = {"cuda": ("cuda", False), "cuda bf16": ("cuda", True), "cpu": ("cpu", False)}
if not torch.cuda.is_available():  # a dry run of the script on a machine without a GPU
    ARMS = {"cpu": ("cpu", False)}
NOT_RUN = {"seconds": float("nan"), "gpu_peak_mib": float("nan")}
SOLVED = re.compile(r"objective ([\d.]+) in (\d+) passes.*?([\d.]+) s, peak memory")
TRAINED = re.compile(r"trained (\d+) steps in ([\d.]+) s: rollout ([\d.]+) s, update ([\d.]+) s")


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def median_seconds(call: Callable[[], object]) -> float:
    call()
    sync()
    times = []
    for _ in range(CALLS):
        started = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def gpu_peak_mib() -> float:
    return torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else float("nan")


def reset_gpu_peak() -> None:
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def recipe_edges(recipe: Path, nodes: int) -> np.ndarray:
    sys.path.insert(0, str(recipe))
    from naive_graph_env import random_graph_edge_index

    return random_graph_edge_index(nodes, 4.0, 0)


def ours_forward(model: str, graph: Graph, device: str, mixed: bool) -> dict:
    """The demo policy's deterministic ``act`` on ``graph``."""
    torch.set_num_threads(os.cpu_count() or 1)
    loaded = policy_for_graphs(read_checkpoint(model), [graph], Runtime(device=device, mixed_precision=mixed))
    obs = obs_to_tensors(loaded.env.reset(seed=0)[0], torch.device(device))
    reset_gpu_peak()
    seconds = median_seconds(lambda: act(loaded.policy, obs, deterministic=True))
    return {"seconds": seconds, "gpu_peak_mib": gpu_peak_mib() if device == "cuda" else float("nan")}


def recipe_forward(recipe: Path, edges: np.ndarray, nodes: int, device: str) -> dict:
    """The recipe's model (its env for the spaces, its extractor, SB3's MultiInputPolicy) on ``edges``."""
    from stable_baselines3 import PPO

    sys.path.insert(0, str(recipe))
    from naive_gnn_extractor import GNNExtractor
    from naive_graph_env import NaiveGraphEnv

    env = NaiveGraphEnv(nodes, seed=0)
    kwargs = dict(features_extractor_class=GNNExtractor, features_extractor_kwargs=dict(features_dim=64, hidden=64, num_layers=2))
    model = PPO("MultiInputPolicy", env, policy_kwargs=kwargs, seed=0, device=device, n_steps=64, batch_size=32, n_epochs=2)
    x, _ = env.reset(seed=7)
    obs = {"x": torch.as_tensor(x["x"], device=device)[None], "edge_index": torch.as_tensor(edges, device=device)[None]}

    def forward():
        with torch.no_grad():
            return model.policy._predict(obs, deterministic=True)

    reset_gpu_peak()
    seconds = median_seconds(forward)
    return {"seconds": seconds, "gpu_peak_mib": gpu_peak_mib() if device == "cuda" else float("nan")}


def forward_part(model: str, recipe: Path, sizes: list[int], results: dict) -> None:
    print("\n### One forward (the recipe's random graph, average degree 4)\n")
    print("| nodes | arm | ours s | recipe s | ours / recipe | ours GPU peak MiB | recipe GPU peak MiB |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for nodes in sizes:
        edges = recipe_edges(recipe, nodes)
        graph = Graph(np.ascontiguousarray(edges), nodes, f"recipe-{nodes}")
        for arm, (device, mixed) in ARMS.items():
            ours = ours_forward(model, graph, device, mixed)
            skip_recipe = mixed or (device == "cpu" and nodes > 300_000)  # the recipe has no bfloat16; on the CPU, 250k is its figure
            theirs = NOT_RUN if skip_recipe else recipe_forward(recipe, edges, nodes, device)
            results[f"forward {nodes} {arm}"] = {"ours": ours, "recipe": theirs}
            ratio = ours["seconds"] / theirs["seconds"]
            print(
                f"| {nodes:,} | {arm} | {ours['seconds']:.4f} | {theirs['seconds']:.4f} | {ratio:.3f} | "
                f"{ours['gpu_peak_mib']:,.0f} | {theirs['gpu_peak_mib']:,.0f} |",
                flush=True,
            )


def run_command(args: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB) and output of one whole CLI process."""
    started = time.perf_counter()
    process = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = process.stdout.read() if process.stdout else ""
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"graphtransfer {' '.join(args)} failed: {output[-3000:]}")
    return time.perf_counter() - started, usage.ru_maxrss / 1024, output


def predict_part(model: str, sizes: list[int], folder: Path, deadline: float, results: dict) -> None:
    print("\n### Whole predict commands (Erdős–Rényi, average degree 8, default decoding)\n")
    print("| nodes | arm | set | passes | solve s | whole process s | peak RSS MiB |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for nodes in sizes:
        graph = folder / f"er-{nodes}.npz"
        started = time.perf_counter()
        write_graph(erdos_renyi(nodes, 8.0, 0), graph)
        results[f"generate {nodes}"] = time.perf_counter() - started
        for arm, (device, mixed) in ARMS.items():
            if time.perf_counter() > deadline or (nodes > 2_000_000 and arm != "cuda"):
                continue  # past the deadline; at 10^7 the float32 GPU run alone
            flags = ["--device", device] + (["--mixed-precision"] if mixed else [])
            wall, peak, output = run_command(
                ["predict", "--model", model, "--graph", str(graph), "--out", str(folder / "s.csv"), "--force", *flags]
            )
            found = SOLVED.search(output)
            if not found:
                raise RuntimeError(f"no solve line in: {output[-2000:]}")
            size, passes, solve = float(found.group(1)), int(found.group(2)), float(found.group(3))
            results[f"predict {nodes} {arm}"] = {"set": size, "passes": passes, "solve": solve, "wall": wall, "peak_rss_mib": peak}
            print(f"| {nodes:,} | {arm} | {size:,.0f} | {passes} | {solve:.2f} | {wall:.2f} | {peak:,.0f} |", flush=True)


def timed_solve(loaded, on_device: bool) -> tuple[float, float, int]:
    """Seconds, set size and passes of one default-decoding solve, the passes kept on the device
    (graphtransfer.tasks.mis.device) or taken by the env's numpy steps between the same forwards."""
    kept = inference.runs_on_device
    if not on_device:
        inference.runs_on_device = lambda env, policy: False  # the previous path: the env's own steps on the host
    try:
        sync()
        started = time.perf_counter()
        solution = inference.solve(loaded.policy, loaded.env, seed=0)
        sync()
        return time.perf_counter() - started, solution.objective, solution.passes
    finally:
        inference.runs_on_device = kept


def solve_part(model: str, sizes: list[int], deadline: float, results: dict) -> None:
    """One MIS solve after the graph and the model are loaded (Erdős–Rényi, average degree 8, one
    rollout), in this process: the passes on the GPU, against the env's steps on the host
    between the same GPU forwards (the path before), and the same machine's CPU."""
    print("\n### One MIS solve after load (Erdős–Rényi, average degree 8, default decoding, one rollout)\n")
    print("| nodes | arm | load s | solve s (first) | solve s (second) | set | passes |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    torch.set_num_threads(os.cpu_count() or 1)
    for nodes in sizes:
        graph = erdos_renyi(nodes, 8.0, 0)
        arms = [("cuda, passes on the GPU", "cuda", True), ("cuda, env steps on the host", "cuda", False), ("cpu", "cpu", False)]
        for arm, device, on_device in arms:
            skipped = device == "cuda" and not torch.cuda.is_available() or (device == "cpu" or not on_device) and nodes > 2_000_000
            if skipped or time.perf_counter() > deadline:
                continue
            started = time.perf_counter()
            loaded = policy_for_graphs(read_checkpoint(model), [graph], Runtime(device=device))
            load = time.perf_counter() - started
            first, size, passes = timed_solve(loaded, on_device)
            second = timed_solve(loaded, on_device)[0] if nodes <= 2_000_000 else float("nan")
            results[f"solve {nodes} {arm}"] = {"load": load, "first": first, "second": second, "set": size, "passes": passes}
            print(f"| {nodes:,} | {arm} | {load:.2f} | {first:.3f} | {second:.3f} | {size:,.0f} | {passes} |", flush=True)
            del loaded


class UpdateWindows(BaseCallback):
    """The wall-clock windows of PPO's updates: from the end of a rollout to the start of the next
    (or the end of training)."""

    def __init__(self):
        super().__init__()
        self.windows: list[tuple[float, float]] = []
        self._ended: float | None = None

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self._ended = time.perf_counter()

    def _on_rollout_start(self) -> None:
        self._close()

    def _on_training_end(self) -> None:
        self._close()

    def _close(self) -> None:
        if self._ended is not None:
            self.windows.append((self._ended, time.perf_counter()))
            self._ended = None


def sample_utilisation(samples: list[tuple[float, int]], stop: threading.Event) -> None:
    """NVML's GPU utilisation (the share of its last sample period with a kernel running) every 20 ms."""
    import pynvml

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    while not stop.is_set():
        samples.append((time.perf_counter(), pynvml.nvmlDeviceGetUtilizationRates(handle).gpu))
        time.sleep(0.02)


def busy_part(nodes: int, iterations: int, folder: Path, results: dict) -> None:
    """How busy PPO's updates keep the GPU: NVML's utilisation sampled during each update of MIS
    training at ``nodes`` nodes (ER degree 4; n_steps 32, batch 8, 4 epochs, one env)."""
    print(f"\n### GPU utilisation during PPO updates ({nodes:,} nodes, n_steps 32, batch 8, 4 epochs)\n")
    print("| arm | update | seconds | samples | mean utilisation % | median % |")
    print("|---|---:|---:|---:|---:|---:|")
    graph = folder / f"busy-{nodes}.npz"
    write_graph(erdos_renyi(nodes, 4.0, 0), graph)
    for arm, (device, mixed) in ARMS.items():
        if device != "cuda":
            continue
        ppo = PPOConfig(total_timesteps=32 * iterations, n_envs=1, n_steps=32, batch_size=8, n_epochs=4)
        config = RunConfig(task="mis", graphs=str(graph), ppo=ppo, runtime=Runtime(device=device, mixed_precision=mixed))
        windows, samples, stop = UpdateWindows(), [], threading.Event()
        sampler = threading.Thread(target=sample_utilisation, args=(samples, stop), daemon=True)
        sampler.start()
        try:
            train(config, folder / f"busy-{arm.replace(' ', '-')}", log=lambda line: None, callback=windows)
        finally:
            stop.set()
            sampler.join()
        for index, (start, end) in enumerate(windows.windows):
            inside = [value for at, value in samples if start + 0.2 <= at <= end]  # NVML looks back a sample period
            mean = statistics.mean(inside) if inside else float("nan")
            median = statistics.median(inside) if inside else float("nan")
            results[f"busy {nodes} {arm} update {index}"] = {"seconds": end - start, "samples": len(inside), "mean": mean, "median": median}
            print(f"| {arm} | {index} | {end - start:.2f} | {len(inside)} | {mean:.0f} | {median:.0f} |", flush=True)


def training_worker(nodes: int, timesteps: int, device: str, mixed: bool) -> dict:
    command = [sys.executable, "-m", "bench.training_recipe", "--worker", "mis", "--nodes", str(nodes), "--timesteps", str(timesteps)]
    command += ["--device", device] + (["--mixed-precision"] if mixed else [])
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    line = next((line for line in result.stdout.splitlines() if line.startswith("RESULT_JSON:")), None)
    if line is None:
        raise RuntimeError(f"training worker gave no result: {result.stderr[-2000:]}")
    return json.loads(line[len("RESULT_JSON:") :])


def sized(pair: str) -> tuple[int, int]:
    nodes, steps = pair.split(":")
    return int(nodes), int(steps)


def train_part(sizes: list[tuple[int, int]], deadline: float, results: dict) -> None:
    print("\n### Training (MIS, default model, the recipe's PPO settings: n_steps 64, batch 32, 2 epochs, one env)\n")
    print("| N | arm | env steps/s | update s |")
    print("|---:|---|---:|---:|")
    for nodes, timesteps in sizes:
        for arm, (device, mixed) in ARMS.items():
            if time.perf_counter() > deadline:
                return
            got = training_worker(nodes, timesteps, device, mixed)
            results[f"train {nodes} {arm}"] = got
            print(f"| {nodes:,} | {arm} | {got['sps']:,.1f} | {got['update_s']:.2f} |", flush=True)


def iteration_part(nodes: int, folder: Path, deadline: float, results: dict) -> None:
    print(f"\n### One MIS PPO iteration at {nodes:,} nodes (n_steps 32, batch 8, 4 epochs, default model, ER degree 4)\n")
    print("| arm | iteration s | rollout s | update s | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|")
    graph = folder / f"er-{nodes}.npz"
    write_graph(erdos_renyi(nodes, 4.0, 0), graph)
    ppo = ["--steps", "32", "--n-envs", "1", "--n-steps", "32", "--batch-size", "8", "--epochs", "4"]
    for arm, (device, mixed) in ARMS.items():
        if time.perf_counter() > deadline:
            return
        flags = (
            ["--device", device]
            + (["--mixed-precision"] if mixed else [])
            + (["--threads", str(os.cpu_count())] if device == "cpu" else [])
        )
        out = folder / f"train-{arm.replace(' ', '-')}"
        wall, peak, output = run_command(["train", "--task", "mis", "--graphs", str(graph), *ppo, *flags, "--out", str(out)])
        found = TRAINED.search(output)
        if not found:
            raise RuntimeError(f"no training line in: {output[-2000:]}")
        seconds, rollout, update = (float(found.group(i)) for i in (2, 3, 4))
        results[f"iteration {nodes} {arm}"] = {"seconds": seconds, "rollout": rollout, "update": update, "wall": wall, "peak_rss_mib": peak}
        print(f"| {arm} | {seconds:.2f} | {rollout:.2f} | {update:.2f} | {peak:,.0f} |", flush=True)


def machine() -> str:
    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return f"{name}; torch {torch.__version__}; {os.cpu_count()} CPUs; load {' '.join(open('/proc/loadavg').read().split()[:3])}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="an MIS model folder (make demo's runs/mis/small)")
    parser.add_argument("--deadline", type=float, default=480, help="seconds; parts that would start later are skipped")
    parser.add_argument("--json", type=Path, help="write every number here")
    parser.add_argument("--recipe", type=Path, default=RECIPE, help="the plain recipe's folder (default ../shared/plain-recipe)")
    parser.add_argument("--forward-sizes", default="250151,1000000")
    parser.add_argument("--predict-sizes", default="250151,1000000,10000000")
    parser.add_argument("--train-sizes", default="50:1024,1000:512,10000:192", help="nodes:timed env steps, comma-separated")
    parser.add_argument("--iteration-nodes", type=int, default=148_640)
    parser.add_argument("--solve-sizes", default="250151,1000000,10000000")
    parser.add_argument("--busy-iterations", type=int, default=3, help="PPO iterations whose updates the busy part samples")
    parser.add_argument("--parts", default="forward,solve,predict,busy,iteration,train")
    args = parser.parse_args()
    deadline = time.perf_counter() + args.deadline
    folder = Path(tempfile.mkdtemp(prefix="gpu-bench-"))
    results: dict = {"machine": machine()}
    print(f"`python -m bench.gpu --model {args.model}`, {time.strftime('%Y-%m-%d %H:%M')}: {results['machine']}")
    parts = {
        "forward": lambda: forward_part(args.model, args.recipe, [int(n) for n in args.forward_sizes.split(",")], results),
        "train": lambda: train_part([sized(pair) for pair in args.train_sizes.split(",")], deadline, results),
        "iteration": lambda: iteration_part(args.iteration_nodes, folder, deadline, results),
        "solve": lambda: solve_part(args.model, [int(n) for n in args.solve_sizes.split(",")], deadline, results),
        "busy": lambda: busy_part(args.iteration_nodes, args.busy_iterations, folder, results),
        "predict": lambda: predict_part(args.model, [int(n) for n in args.predict_sizes.split(",")], folder, deadline, results),
    }
    for name in args.parts.split(","):
        if time.perf_counter() > deadline:
            print(f"\n{name}: skipped (deadline)")
            continue
        try:
            parts[name]()
        except Exception:  # noqa: BLE001 -- report it and go on to the next part: one call must return every figure it can
            print(f"\n{name} failed:\n{traceback.format_exc()[-3000:]}", flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    print(f"\nload {' '.join(open('/proc/loadavg').read().split()[:3])} after")


if __name__ == "__main__":
    main()
