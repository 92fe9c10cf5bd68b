"""The observation contract every graph environment follows (see DESIGN.md).

``x (max_nodes, F) float32``, ``edge_index (2, max_edges) int64``, ``num_nodes (1,) int64`` and
``num_edges (1,) int64``, padded to the env's largest graph; optionally ``edge_attr
(max_edges, F_e) float32``, one row of edge features per column of ``edge_index``, padded alike,
finite (:func:`check_edge_attr_values`). Any floating dtype is accepted for ``x`` and ``edge_attr``
and widened to float32 (exact from float16; float64 rounds); integer dtypes are refused, not cast.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from graphtransfer.errors import UsageError

INDEX_KEYS = ("edge_index", "num_nodes", "num_edges")


EDGE_ATTR = "edge_attr"


def observation_space(max_nodes: int, max_edges: int, num_features: int, num_edge_features: int = 0) -> spaces.Dict:
    """The padded ``Dict`` space for graphs of up to ``max_nodes`` nodes and ``max_edges``
    directed edges (twice the undirected count), with an ``edge_attr`` key when
    ``num_edge_features`` is above 0."""
    keys: dict[str, spaces.Space] = {
        "x": uniform_box(-np.inf, np.inf, (max_nodes, num_features), np.float32),
        "edge_index": uniform_box(0, max(max_nodes - 1, 0), (2, max_edges), np.int64),
        "num_nodes": spaces.Box(0, max_nodes, (1,), np.int64),
        "num_edges": spaces.Box(0, max_edges, (1,), np.int64),
    }
    if num_edge_features:
        keys[EDGE_ATTR] = uniform_box(-np.inf, np.inf, (max_edges, num_edge_features), np.float32)
    return spaces.Dict(keys)


def uniform_box(low: float, high: float, shape: tuple[int, ...], dtype: type) -> spaces.Box:
    """``spaces.Box(low, high, shape, dtype)`` with the same bounds everywhere, in constant memory:
    its bounds are read-only broadcast views of one value, where gymnasium's own Box holds four
    arrays of the full shape (for ``edge_index`` at 10^7 nodes of average degree 8, 2.7 GB
    before the first observation). It compares, checks and samples as that Box does.
    """
    box = spaces.Box(low, high, (1,) * len(shape), dtype)
    box._shape = tuple(shape)  # gymnasium's Box keeps its shape here
    for name in ("low", "high", "bounded_below", "bounded_above"):
        setattr(box, name, np.broadcast_to(getattr(box, name).reshape(()), shape))
    return box


def box_shape(space: spaces.Dict, key: str) -> tuple[int, ...]:
    """The shape of the Box at ``key`` of an observation space (every contract key is a Box,
    :func:`check_contract`)."""
    box = space.spaces[key]
    if not isinstance(box, spaces.Box):
        raise UsageError(f"observation key {key!r} is {type(box).__name__}; expected a Box (see graphtransfer.envs.contract)")
    return box.shape


def edge_feature_count(space: spaces.Dict) -> int:
    """``F_e``, the width of the optional ``edge_attr`` key; 0 without it."""
    return int(box_shape(space, EDGE_ATTR)[-1]) if EDGE_ATTR in space.spaces else 0


def padded_edge_attr(edge_attr: np.ndarray, max_edges: int) -> np.ndarray:
    """Edge features padded like ``edge_index``: rows past the real edges are zeros.

    Shapes:
        edge_attr: ``(E, F_e)`` with ``E <= max_edges``; returned ``(max_edges, F_e)`` float32.
    """
    if edge_attr.ndim != 2 or edge_attr.shape[0] > max_edges:
        raise ValueError(f"edge_attr has shape {edge_attr.shape}; expected (E, F_e) with E <= max_edges={max_edges}")
    padded = np.zeros((max_edges, edge_attr.shape[1]), dtype=np.float32)
    padded[: edge_attr.shape[0]] = edge_attr
    return padded


def padded_structure(edge_index: np.ndarray, num_nodes: int, max_nodes: int, max_edges: int) -> dict[str, np.ndarray]:
    """The structural keys of an observation; padding columns point at node 0 and are ignored
    because ``num_edges`` says how many are real.

    Shapes:
        edge_index: ``(2, E)`` with ``E <= max_edges``; returned ``(2, max_edges)``.
    """
    if num_nodes > max_nodes or edge_index.shape[1] > max_edges:
        raise ValueError(f"{num_nodes} nodes and {edge_index.shape[1]} directed edges do not fit the padding {max_nodes} / {max_edges}")
    padded = np.empty((2, max_edges), dtype=np.int64)  # zeroed below only where padding: at 10^6 edges a pass of its own
    padded[:, : edge_index.shape[1]] = edge_index
    padded[:, edge_index.shape[1] :] = 0
    return {
        "edge_index": padded,
        "num_nodes": np.array([num_nodes], dtype=np.int64),
        "num_edges": np.array([edge_index.shape[1]], dtype=np.int64),
    }


def check_contract(space: spaces.Space, where: str = "env") -> spaces.Dict:
    """``space``, checked: raise :class:`~graphtransfer.errors.UsageError` naming the first key of
    ``space`` that breaks the contract, what was found and what is expected."""
    if not isinstance(space, spaces.Dict):
        raise UsageError(
            f"{where}: observation space is {type(space).__name__}; expected gymnasium.spaces.Dict with keys "
            "x, edge_index, num_nodes, num_edges (a spaces.Graph env can be wrapped in GraphObservationAdapter)"
        )
    expected = {
        "x": ("a floating dtype", "(max_nodes, F)", lambda s: np.issubdtype(s.dtype, np.floating) and len(s.shape) == 2),
        "edge_index": ("int64", "(2, max_edges)", lambda s: s.dtype == np.int64 and len(s.shape) == 2 and s.shape[0] == 2),
        "num_nodes": ("an integer dtype", "(1,)", lambda s: np.issubdtype(s.dtype, np.integer) and s.shape == (1,)),
        "num_edges": ("an integer dtype", "(1,)", lambda s: np.issubdtype(s.dtype, np.integer) and s.shape == (1,)),
    }
    for key, (dtype, shape, fits) in expected.items():
        if key not in space.spaces:
            raise UsageError(
                f"{where}: observation has no key {key!r} (found {sorted(space.spaces)}); add {key} of shape {shape}, dtype {dtype}"
            )
        sub = space.spaces[key]
        if not isinstance(sub, spaces.Box) or not fits(sub):
            found = f"{type(sub).__name__} shape {getattr(sub, 'shape', None)} dtype {getattr(sub, 'dtype', None)}"
            raise UsageError(f"{where}: observation key {key!r} is {found}; expected a Box of shape {shape} and dtype {dtype}")
    if EDGE_ATTR in space.spaces:
        _check_edge_attr(space, where)
    return space


def _check_edge_attr(space: spaces.Dict, where: str) -> None:
    """The optional ``edge_attr``: a float Box with one row per ``edge_index`` column."""
    sub, max_edges = space.spaces[EDGE_ATTR], box_shape(space, "edge_index")[1]
    fits = isinstance(sub, spaces.Box) and np.issubdtype(sub.dtype, np.floating) and len(sub.shape) == 2 and sub.shape[0] == max_edges
    if not fits:
        found = f"{type(sub).__name__} shape {getattr(sub, 'shape', None)} dtype {getattr(sub, 'dtype', None)}"
        raise UsageError(
            f"{where}: observation key {EDGE_ATTR!r} is {found}; expected a Box of shape (max_edges, F_e) = ({max_edges}, F_e) "
            "and a floating dtype, one row per edge_index column (or leave the key out)"
        )


def check_edge_attr_values(edge_attr: np.ndarray) -> None:
    """The contract's edge features are finite numbers: one NaN or infinity would make every score
    the policy gives NaN. Raise a :class:`~graphtransfer.errors.UsageError` naming the key, the
    first row that holds one and the fix.

    Shapes:
        edge_attr: ``(E, F_e)`` or ``(E, B, F_e)``, the real edges' rows in ``edge_index`` order.
    """
    bad = np.argwhere(~np.isfinite(edge_attr))
    if bad.size:
        row, value = int(bad[0][0]), edge_attr[tuple(bad[0])]
        raise UsageError(
            f"the env's observation key {EDGE_ATTR!r} holds {value} at row {row} (the edge in edge_index column {row}); edge "
            "features must be finite numbers: replace NaN and infinite values in the env's edge_attr (e.g. numpy.nan_to_num)"
        )


def infer_head(observation_space: spaces.Dict, action_space: spaces.Space) -> str:
    """Which policy head fits: one action per node or per edge, one node or edge to choose, or one
    graph-level action. Nodes are tried first: an env with as many edge slots as node slots
    declares its ``head`` to act on edges."""
    max_nodes, max_edges = box_shape(observation_space, "x")[0], box_shape(observation_space, "edge_index")[1]
    for units, prefix in ((max_nodes, "node"), (max_edges, "edge")):
        if isinstance(action_space, spaces.MultiDiscrete) and action_space.shape == (units,):
            return f"{prefix}-wise"
        if isinstance(action_space, spaces.Discrete) and action_space.n == units:
            return f"{prefix}-choice"
    return "graph-level"
