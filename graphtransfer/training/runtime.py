"""What every algorithm of a run carries besides SB3's own class: the runtime settings of its
GNN, and what the training loop reads and sets (its name, update seconds by phase, a report
callable). Mixed in before the SB3 class: ``class GraphA2C(RuntimeSettings, A2C)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stable_baselines3.common.base_class import BaseAlgorithm

from graphtransfer.nn import check_node_budget, configure_runtime


class RuntimeSettings(BaseAlgorithm):
    """``max_nodes_per_batch`` and ``mixed_precision`` for the policy's extractor, set once the
    policy exists and changeable later; how the numbers are computed, never what they are."""

    algorithm_name: str
    """what the user is told runs"""
    report: Callable[[str], None] | None = None
    """where the algorithm may say something about an update (the train command prints it)"""
    report_every_update: bool = False
    """also report each update (``train --stdout``), where the algorithm has something to say"""

    def __init__(self, *args: Any, max_nodes_per_batch: int | None = None, mixed_precision: bool = False, **kwargs: Any):
        self.max_nodes_per_batch = check_node_budget(max_nodes_per_batch)
        self.mixed_precision = mixed_precision
        self.update_seconds: dict[str, float] = {}
        """seconds of the updates by phase, summed over the run (filled by PPO's update)"""
        super().__init__(*args, **kwargs)

    def _setup_model(self) -> None:
        super()._setup_model()  # type: ignore[safe-super]  # a mixin: the SB3 class after it in the MRO implements it
        configure_runtime(self.policy, self.max_nodes_per_batch, self.mixed_precision)

    def set_max_nodes_per_batch(self, budget: int | None) -> None:
        """Change the node budget of the policy's extractor (and of PPO's update)."""
        self.max_nodes_per_batch = check_node_budget(budget)
        configure_runtime(self.policy, budget, self.mixed_precision)
