"""Whole commands on a busy machine: `graphtransfer predict` (and, with `--commands`, `eval`,
`transfer` and `train`) with the default threads and with `--threads 1`, on an idle machine and
beside one and two busy processes (`python -c 'while True: pass'`), each arm in a fresh process,
the arms interleaved, medians. The arm `spin` reproduces the default before issue 31: two threads
whose OpenMP waits spin (`GOMP_SPINCOUNT=300000`, GNU OpenMP's own default) instead of sleeping.
predict, eval and transfer (its zero-shot evaluation) run on `--graph`; train runs `--train-steps`
steps of MIS on the small sample graphs, each repeat into a fresh folder.

    .venv/bin/python -m bench.contention --model runs/mis/small [--graph large] [--repeats 3] [--busy 0,1,2]
        [--commands predict,eval,transfer,train] [--arms "default,threads 1"]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
ARMS = {
    "default": ([], {}),
    "threads 1": (["--threads", "1"], {}),
    "spin, 2 threads": (["--threads", "2"], {"GOMP_SPINCOUNT": "300000"}),
}


def command(name: str, model: str, graph: str, out: Path, train_steps: int) -> list[str]:
    """The argv of one run of ``name``; ``out`` is a folder of its own for this run."""
    cli = [str(BIN / "graphtransfer"), name]
    if name == "predict":
        return [*cli, "--model", model, "--graph", graph, "--out", str(out / "s.csv")]
    if name == "eval":
        return [*cli, "--model", model, "--graphs", graph]
    if name == "transfer":
        return [*cli, "--src", model, "--dst", graph, "--out", str(out / "model")]
    if name == "train":
        return [*cli, "--task", "mis", "--graphs", "small", "--steps", str(train_steps), "--no-progress", "--out", str(out / "model")]
    raise ValueError(f"unknown command {name!r}")


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def busy_processes(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--graph", default="large")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--busy", default="0,1,2")
    parser.add_argument("--commands", default="predict", help="of predict, eval, transfer, train")
    parser.add_argument("--arms", default=",".join(ARMS), help=f"of {', '.join(ARMS)}")
    parser.add_argument("--train-steps", type=int, default=4096)
    args = parser.parse_args()
    arms = {name: ARMS[name] for name in args.arms.split(",")}
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS")}
    print(f"Command: `.venv/bin/python -m bench.contention {' '.join(sys.argv[1:])}`; {os.cpu_count()} cores\n")
    print("| command | busy processes | arm | median s | min-max s | / threads 1 | load average |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        runs = 0
        for name in args.commands.split(","):
            for busy in map(int, args.busy.split(",")):
                times: dict[str, list[float]] = {arm: [] for arm in arms}
                others = busy_processes(busy)
                try:
                    time.sleep(1.0)
                    for _ in range(args.repeats):
                        for arm, (extra, env) in arms.items():
                            runs += 1
                            out = Path(folder) / f"run-{runs}"
                            out.mkdir()
                            times[arm].append(timed(command(name, args.model, args.graph, out, args.train_steps) + extra, {**base, **env}))
                finally:
                    for other in others:
                        other.kill()
                        other.wait()
                load = os.getloadavg()[0]
                one = statistics.median(times["threads 1"]) if "threads 1" in times else float("nan")
                for arm, seconds in times.items():
                    middle, spread = statistics.median(seconds), f"{min(seconds):.2f}-{max(seconds):.2f}"
                    print(f"| {name} | {busy} | {arm} | {middle:.2f} | {spread} | {middle / one:.2f} | {load:.1f} |", flush=True)


if __name__ == "__main__":
    main()
