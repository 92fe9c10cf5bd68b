"""CPU seconds of the stable orderings of node ids that a solve's kernels and CSRs take (``stable_order``): the
counting sort (scipy's ``coo_tocsr``), torch's stable sort on one thread and the 16-bit radix sort, on random ids
as a graph's edges hold them (``--sizes`` pairs of values:range), medians of ``--repeats``.

    .venv/bin/python -m bench.sort_speed [--sizes 70000:10000,1400000:250000,8000000:1000000] [--repeats 5]

Prints a Markdown table and the load average. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch

from graphtransfer.graphs.graph import _counting_order


def radix(values: np.ndarray) -> np.ndarray:
    low = np.argsort(values.astype(np.uint16), kind="stable")
    return low[np.argsort((values >> 16).astype(np.uint16)[low], kind="stable")]


def torch_sort(values: np.ndarray) -> np.ndarray:
    return torch.sort(torch.from_numpy(values.astype(np.int32)), stable=True).indices.numpy()


SORTS = {"counting": _counting_order, "torch (1 thread)": torch_sort, "radix": radix}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="70000:10000,1400000:250000,8000000:1000000")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"load {os.getloadavg()[0]:.2f}\n\n| values | range | " + " | ".join(f"{name} ms" for name in SORTS) + " |")
    print("|---:|---:|" + "---:|" * len(SORTS))
    for pair in args.sizes.split(","):
        size, high = (int(part) for part in pair.split(":"))
        values = np.random.default_rng(0).integers(0, high, size)
        expected = np.argsort(values, kind="stable")
        cells = []
        for sort in SORTS.values():
            seconds = []
            for _ in range(args.repeats):
                started = time.process_time()
                found = sort(values)
                seconds.append(time.process_time() - started)
            assert np.array_equal(found, expected)
            cells.append(f"{statistics.median(seconds) * 1000:.1f}")
        print(f"| {size:,} | {high:,} | " + " | ".join(cells) + " |", flush=True)
    print(f"\nload {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
