"""The plain recipe's own environment (``../shared/plain-recipe/naive_graph_env.py``), run as it is,
behind the two things graphtransfer's user-env path asks of an env: a ``graphs=`` constructor
argument (ignored: the recipe builds its own fixed graph) and the contract's ``num_nodes`` /
``num_edges`` keys. This is what a recipe user writes to move their env onto graphtransfer.

    graphtransfer train --env bench.recipe_env:RecipeEnv --env-kwargs '{"num_nodes": 1000}' ...
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
from gymnasium import spaces

RECIPE = Path(os.environ.get("PLAIN_RECIPE", Path(__file__).resolve().parents[2] / "shared" / "plain-recipe"))


def naive_graph_env():
    """The recipe's env class, imported from its folder (``$PLAIN_RECIPE`` or ../shared/plain-recipe)."""
    if not (RECIPE / "naive_graph_env.py").is_file():
        raise FileNotFoundError(f"{RECIPE}: no naive_graph_env.py; set PLAIN_RECIPE to the plain recipe's folder")
    if str(RECIPE) not in sys.path:
        sys.path.insert(0, str(RECIPE))
    from naive_graph_env import NaiveGraphEnv

    return NaiveGraphEnv


class RecipeEnv(gym.ObservationWrapper):
    """``NaiveGraphEnv(num_nodes, seed=seed)`` with the counts of its (unpadded) graph added."""

    def __init__(self, graphs=None, num_nodes: int = 50, seed: int = 0):
        super().__init__(naive_graph_env()(num_nodes, seed=seed))
        inner = self.env.observation_space
        n, e = inner["x"].shape[0], inner["edge_index"].shape[1]
        self.observation_space = spaces.Dict(
            {
                **inner.spaces,
                "num_nodes": spaces.Box(0, n, (1,), np.int64),
                "num_edges": spaces.Box(0, e, (1,), np.int64),
            }
        )
        self._counts = {"num_nodes": np.array([n], dtype=np.int64), "num_edges": np.array([e], dtype=np.int64)}

    def observation(self, observation: dict) -> dict:
        return {**observation, **{key: value.copy() for key, value in self._counts.items()}}
