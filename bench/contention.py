"""Whole commands on a busy machine: `graphtransfer predict` on the 250k sample graph with the
default threads and with `--threads 1`, on an idle machine and beside one and two
busy processes (`python -c 'while True: pass'`), each arm in a fresh process, the arms
interleaved, medians. The arm `spin` reproduces the default before issue 31: two threads whose
OpenMP waits spin (`GOMP_SPINCOUNT=300000`, GNU OpenMP's own default) instead of sleeping.

    .venv/bin/python -m bench.contention --model runs/mis/small [--graph large] [--repeats 3] [--busy 0,1,2]
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


def predict(model: str, graph: str, out: Path) -> list[str]:
    return [str(BIN / "graphtransfer"), "predict", "--model", model, "--graph", graph, "--out", str(out / "s.csv"), "--force"]


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
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS")}
    print(f"Command: `.venv/bin/python -m bench.contention {' '.join(sys.argv[1:])}`; {os.cpu_count()} cores\n")
    print("| busy processes | arm | median s | min-max s | / threads 1 | load average |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as out:
        for busy in map(int, args.busy.split(",")):
            times: dict[str, list[float]] = {arm: [] for arm in ARMS}
            others = busy_processes(busy)
            try:
                time.sleep(1.0)
                for _ in range(args.repeats):
                    for arm, (extra, env) in ARMS.items():
                        times[arm].append(timed(predict(args.model, args.graph, Path(out)) + extra, {**base, **env}))
            finally:
                for other in others:
                    other.kill()
                    other.wait()
            load = os.getloadavg()[0]
            one = statistics.median(times["threads 1"])
            for arm, seconds in times.items():
                middle = statistics.median(seconds)
                print(f"| {busy} | {arm} | {middle:.2f} | {min(seconds):.2f}-{max(seconds):.2f} | {middle / one:.2f} | {load:.1f} |")


if __name__ == "__main__":
    main()
