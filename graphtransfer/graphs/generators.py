"""Seeded random graph generators, vectorized so that 10^6-edge graphs take about a second."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from graphtransfer.errors import GraphInputError
from graphtransfer.graphs.graph import MAX_NODES, Graph, from_edges, sorted_unique


def erdos_renyi(num_nodes: int, avg_degree: float, seed: int) -> Graph:
    """G(n, m) with ``m = round(avg_degree * n / 2)`` distinct edges chosen uniformly."""
    _check_size(num_nodes, 2)
    rng = np.random.default_rng(seed)
    target = min(round(avg_degree * num_nodes / 2), num_nodes * (num_nodes - 1) // 2)
    keys = np.empty(0, dtype=np.int64)
    while keys.size < target:
        # Oversample, then drop self-loops and repeats; one or two rounds suffice.
        draws = rng.integers(0, num_nodes, size=(2, int(1.1 * (target - keys.size)) + 16))
        draws = draws[:, draws[0] != draws[1]]
        lo, hi = np.minimum(draws[0], draws[1]), np.maximum(draws[0], draws[1])
        keys = sorted_unique(np.concatenate([keys, lo * num_nodes + hi]))
    keys = rng.permutation(keys)[:target]
    graph, _, _ = from_edges(keys // num_nodes, keys % num_nodes, num_nodes, f"er-n{num_nodes}-d{avg_degree}-s{seed}")
    return graph


def barabasi_albert(num_nodes: int, m: int, seed: int) -> Graph:
    """Preferential attachment: every new node links to ``m`` earlier nodes chosen with
    probability proportional to their degree.

    Uses the endpoint-list formulation (a target is a uniformly chosen endpoint of an earlier
    edge) and resolves the chains of "target of an earlier edge" by vectorized pointer jumping
    instead of a Python loop over nodes. Repeated picks by one node are dropped, so a graph has
    slightly fewer than ``m * (num_nodes - m)`` edges.
    """
    _check_size(num_nodes, m + 1)
    rng = np.random.default_rng(seed)
    num_links = (num_nodes - m) * m
    link = np.arange(num_links)
    source = m + link // m
    first_link_of_source = (source - m) * m
    # Position in the endpoint list [s_0, t_0, s_1, t_1, ...] of the edges added before this node.
    position = np.floor(rng.random(num_links) * 2 * first_link_of_source).astype(np.int64)
    target = np.full(num_links, -1, dtype=np.int64)
    target[:m] = np.arange(m)  # the first new node links to every seed node
    pending = np.arange(m, num_links)
    pointer = position[pending]
    while pending.size:
        even = pointer % 2 == 0
        target[pending[even]] = source[pointer[even] // 2]
        pending, earlier = pending[~even], (pointer[~even] - 1) // 2
        seeded = earlier < m
        target[pending[seeded]] = earlier[seeded]
        pending, pointer = pending[~seeded], position[earlier[~seeded]]
    graph, _, _ = from_edges(source, target, num_nodes, f"ba-n{num_nodes}-m{m}-s{seed}")
    return graph


def random_geometric(num_nodes: int, avg_degree: float, seed: int) -> Graph:
    """Points uniform in the unit square, linked when closer than the radius that gives
    ``avg_degree`` on average (ignoring border effects)."""
    _check_size(num_nodes, 2)
    rng = np.random.default_rng(seed)
    points = rng.random((num_nodes, 2))
    radius = np.sqrt(avg_degree / (np.pi * num_nodes))
    from scipy.spatial import cKDTree  # here, not at the top: scipy.spatial costs 0.2 s of every command's start

    pairs = cKDTree(points).query_pairs(radius, output_type="ndarray")
    graph, _, _ = from_edges(pairs[:, 0], pairs[:, 1], num_nodes, f"rgg-n{num_nodes}-d{avg_degree}-s{seed}")
    return graph


def delaunay(num_nodes: int, seed: int) -> Graph:
    """The Delaunay triangulation of points uniform in the unit square: a planar mesh of average
    degree just under 6, where greedy leaves more to gain than on random graphs."""
    _check_size(num_nodes, 3)
    points = np.random.default_rng(seed).random((num_nodes, 2))
    from scipy.spatial import Delaunay  # here, not at the top: see random_geometric

    triangles = Delaunay(points).simplices  # (T, 3) corner ids
    src = triangles[:, [0, 1, 2]].ravel()
    dst = triangles[:, [1, 2, 0]].ravel()  # each triangle's three sides; shared sides are deduplicated
    graph, _, _ = from_edges(src, dst, num_nodes, f"delaunay-n{num_nodes}-s{seed}")
    return graph


GENERATORS: dict[str, Callable[..., Graph]] = {
    "erdos_renyi": erdos_renyi,
    "barabasi_albert": barabasi_albert,
    "random_geometric": random_geometric,
    "delaunay": delaunay,
}
_DENSITY_FIXED = {"delaunay"}  # generators whose density is not a parameter


def generate(spec: dict) -> Graph:
    """Build a graph from a spec such as ``{"generator": "barabasi_albert", "num_nodes": 1000,
    "m": 4, "seed": 0}``."""
    spec = dict(spec)
    name = spec.pop("generator", None)
    if name not in GENERATORS:
        raise GraphInputError(f"unknown generator {name!r}; expected one of {sorted(GENERATORS)}")
    for key, value in spec.items():
        _check_parameter(name, key, value)
    try:
        return GENERATORS[name](**spec)
    except TypeError as err:
        raise GraphInputError(f"generator {name!r}: {err}; see graphtransfer.graphs.generators.{name}") from None


GENERATION_BYTES_PER_EDGE, GENERATION_BYTES_PER_NODE = 80, 64
"""peak bytes of generating a graph, per directed edge and per node: 1,000,000-node Barabási-Albert
(m = 4) and Erdős-Rényi (degree 8) graphs peaked at 640 MB ('graphs generate', GNU time's maximum RSS)"""


def generation_bytes(spec: dict) -> int:
    """About the most memory :func:`generate` takes for ``spec``, from its expected edge count,
    so that a graph too large for the machine is refused before anything is allocated."""
    nodes = int(spec.get("num_nodes", 0))
    undirected: float
    if spec.get("generator") == "barabasi_albert":
        undirected = nodes * int(spec.get("m", 1))
    elif spec.get("generator") in _DENSITY_FIXED:
        undirected = 3 * nodes  # a planar triangulation has under 3 n edges
    else:
        undirected = nodes * float(spec.get("avg_degree", 8.0)) / 2
    return int(2 * undirected * GENERATION_BYTES_PER_EDGE + nodes * GENERATION_BYTES_PER_NODE)


def spec_for(generator: str, num_nodes: int, seed: int, m: int | None = None, avg_degree: float | None = None) -> dict:
    """A spec for :func:`generate` from a density given either way: ``m`` edges per new node
    (Barabási–Albert) or an average degree, which is about ``2 m``. Delaunay meshes have no
    density to set."""
    if m is not None and avg_degree is not None:
        raise GraphInputError(f"m={m} and avg_degree={avg_degree} both set the density; give one of them")
    spec = {"generator": generator, "num_nodes": num_nodes, "seed": seed}
    if generator in _DENSITY_FIXED:
        if m is not None or avg_degree is not None:
            raise GraphInputError(f"generator {generator!r} has a fixed density (average degree about 6); leave out m and avg_degree")
    elif generator == "barabasi_albert":
        spec["m"] = m if m is not None else max(1, round((avg_degree or 8.0) / 2))
    else:
        spec["avg_degree"] = avg_degree if avg_degree is not None else 2.0 * (m if m is not None else 4)
    return spec


# Generators take whole counts and a seed, and a positive real degree; anything else is refused
# here rather than failing deep inside numpy.
_WHOLE = {"num_nodes": (1, MAX_NODES), "m": (1, MAX_NODES), "seed": (0, 2**63 - 1)}


def _check_parameter(name: str, key: str, value: object) -> None:
    if key in _WHOLE:
        low, high = _WHOLE[key]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise GraphInputError(f"generator {name!r}: {key}={value!r}; expected an integer in {low}..{high:,}")
    elif key == "avg_degree":
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
            raise GraphInputError(f"generator {name!r}: avg_degree={value!r}; expected a positive number")


def _check_size(num_nodes: int, minimum: int) -> None:
    if num_nodes < minimum:
        raise GraphInputError(f"num_nodes={num_nodes} is too small; use at least {minimum}")
