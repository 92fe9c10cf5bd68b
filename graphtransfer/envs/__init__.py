"""The env interface every task meets: the base class, the observation contract, the protocol of
what an env may declare, adapters. The tasks themselves live in :mod:`graphtransfer.tasks`."""

from graphtransfer.envs.base import GraphEnv
from graphtransfer.envs.contract import observation_space
from graphtransfer.envs.protocol import GraphEnvProtocol, Head

__all__ = ["GraphEnv", "GraphEnvProtocol", "Head", "observation_space"]
