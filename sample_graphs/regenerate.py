"""Rewrites sample_graphs/small/ from seeded generators (run from the repo root).

small/: 24 graphs of 20-60 nodes, eight each of Erdős–Rényi (average degree 4),
Barabási–Albert (m = 2) and random geometric (average degree 6), as SNAP edge lists,
each from the first seed that leaves no node isolated.
large.json is a generator spec, materialised into the cache on first use.
"""

from itertools import count
from pathlib import Path

from graphtransfer.graphs import barabasi_albert, erdos_renyi, random_geometric, write_edge_list

FAMILIES = {
    "er": lambda n, seed: erdos_renyi(n, 4.0, seed),
    "ba": lambda n, seed: barabasi_albert(n, 2, seed),
    "rgg": lambda n, seed: random_geometric(n, 6.0, seed),
}


def first_without_isolated_nodes(make, n):
    """An edge list cannot hold isolated nodes, so take the first seed that has none."""
    return next(g for g in (make(n, seed) for seed in count()) if g.degrees().min() > 0)


if __name__ == "__main__":
    folder = Path(__file__).parent / "small"
    folder.mkdir(exist_ok=True)
    for n in (20 + round(40 * k / 7) for k in range(8)):
        for family, make in FAMILIES.items():
            write_edge_list(first_without_isolated_nodes(make, n), folder / f"{family}-{n:02d}.txt")
