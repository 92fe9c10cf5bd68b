"""Graph environments following the observation contract; one module per task."""

from graphtransfer.envs.base import GraphEnv
from graphtransfer.envs.contract import observation_space
from graphtransfer.envs.mis import MISEnv, is_independent_set

TASKS: dict[str, type[GraphEnv]] = {"mis": MISEnv}

__all__ = ["TASKS", "GraphEnv", "MISEnv", "is_independent_set", "observation_space"]
