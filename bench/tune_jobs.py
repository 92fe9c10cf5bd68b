"""`graphtransfer tune --n-jobs`: the wall time of a fixed number of cheap trials with --n-jobs 1
and with --n-jobs 2 (issue 34's target: 2 jobs at least 1.6x faster on 2 cores), each run a whole
command in a fresh study, the arms interleaved, medians, the load average before each run, and
the CPU seconds of each command with its workers (what start-up costs, beside what the trials do).

    .venv/bin/python -m bench.tune_jobs [--trials 8] [--steps 256] [--repeats 3] [--jobs 1,2]

Run it on an idle machine: a trial is a few seconds of single-threaded training, so every busy
core elsewhere slows the 2-job arm and not the 1-job one.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def tune_command(out: Path, trials: int, steps: int, jobs: int) -> list[str]:
    """A search of ``trials`` trials of ``steps`` env steps, evaluated once at the end, never pruned
    (so every trial costs the same whatever its score), random draws, one torch thread per job."""
    return [
        str(BIN / "graphtransfer"),
        "tune",
        "--out",
        str(out),
        "--graphs",
        "small",
        "--steps",
        str(steps),
        "--n-envs",
        "2",
        "--eval-every",
        str(steps),
        "--n-trials",
        str(trials),
        "--n-jobs",
        str(jobs),
        "--sampler",
        "random",
        "--pruner",
        "none",
        "--set",
        "runtime.threads=1",
    ]


def timed(argv: list[str]) -> tuple[float, float]:
    """The wall seconds of the command, and the CPU seconds of it and its workers (user + system)."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8, help="trials per search")
    parser.add_argument("--steps", type=int, default=256, help="env steps per trial")
    parser.add_argument("--repeats", type=int, default=3, help="searches per arm, interleaved")
    parser.add_argument("--jobs", default="1,2", help="--n-jobs of each arm, comma-separated; the first is the baseline")
    args = parser.parse_args()
    arms = [int(jobs) for jobs in args.jobs.split(",")]
    print(f"Command: `.venv/bin/python -m bench.tune_jobs {' '.join(sys.argv[1:])}`; {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}\n")
    times: dict[int, list[float]] = {jobs: [] for jobs in arms}
    cpu: dict[int, list[float]] = {jobs: [] for jobs in arms}
    loads: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(args.repeats):
            for jobs in arms:
                loads.append(os.getloadavg()[0])
                out = Path(scratch) / f"study-{jobs}-{repeat}"
                wall, seconds = timed(tune_command(out, args.trials, args.steps, jobs))
                times[jobs].append(wall)
                cpu[jobs].append(seconds)
                print(f"repeat {repeat}, --n-jobs {jobs}: {wall:.1f} s, CPU {seconds:.1f} s (load {loads[-1]:.2f})", file=sys.stderr)
    baseline = statistics.median(times[arms[0]])
    print(f"{args.trials} trials of {args.steps} env steps; load average (1 min) before the runs: {min(loads):.2f} to {max(loads):.2f}\n")
    print(f"| --n-jobs | median s | min-max s | speed-up vs --n-jobs {arms[0]} | median CPU s (all processes) |")
    print("|---|---|---|---|---|")
    for jobs in arms:
        median, spread = statistics.median(times[jobs]), f"{min(times[jobs]):.1f}-{max(times[jobs]):.1f}"
        print(f"| {jobs} | {median:.1f} | {spread} | {baseline / median:.2f}x | {statistics.median(cpu[jobs]):.1f} |")


if __name__ == "__main__":
    main()
