"""The weighted vertex cover's rules as a user's env declares them (``rules =
graphtransfer.tasks.weighted_cover``): the searches and baselines the built-in ``mvc-weighted`` task
declares, for an env whose ``solution()`` is the ``(num_nodes,)`` bool cover and whose weights are
:func:`graphtransfer.graphs.weights.node_weights` of the graph (a file's own node weights, else the
seeded ones), as the searches read them."""

from __future__ import annotations

from graphtransfer.envs.protocol import Rules
from graphtransfer.tasks.mvc.env import WeightedMVCEnv

WEIGHTED_COVER = Rules(
    improve=WeightedMVCEnv.improve,
    search=WeightedMVCEnv.search,
    baselines=dict(WeightedMVCEnv.baselines),
)
"""Minimum-weight vertex cover: ``eval --polish`` and ``predict --polish`` run the heavy-set search
of :mod:`graphtransfer.tasks.mvc.weighted_search` from the env's cover; eval compares with greedy
weight/degree, greedy maximum degree and that search from greedy's cover."""
