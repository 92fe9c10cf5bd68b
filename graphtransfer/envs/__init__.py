"""Graph environments following the observation contract; one module per task.

Built-in tasks are registered with gymnasium as ``graphtransfer/<Name>-v0`` and take the graphs
to sample from: ``gymnasium.make("graphtransfer/MIS-v0", graphs=load_graphs("small"))``, or a
sample set name, graph file or folder (``graphs="small"``, the default).
"""

import gymnasium as gym

from graphtransfer.envs.base import GraphEnv
from graphtransfer.envs.contract import observation_space
from graphtransfer.envs.epidemic import EpidemicEnv
from graphtransfer.envs.matching import MatchingEnv, is_matching
from graphtransfer.envs.maxcut import MaxCutEnv, cut_size
from graphtransfer.envs.mis import MISEnv, is_independent_set
from graphtransfer.envs.mvc import MVCEnv, is_vertex_cover
from graphtransfer.envs.path import PathEnv, is_route
from graphtransfer.envs.protocol import GraphEnvProtocol, Head

TASKS: dict[str, type[GraphEnv]] = {
    "mis": MISEnv,
    "mvc": MVCEnv,
    "maxcut": MaxCutEnv,
    "epidemic": EpidemicEnv,
    "matching": MatchingEnv,
    "path": PathEnv,
}
GYM_IDS = {
    "mis": "graphtransfer/MIS-v0",
    "mvc": "graphtransfer/MVC-v0",
    "maxcut": "graphtransfer/MaxCut-v0",
    "epidemic": "graphtransfer/Epidemic-v0",
    "matching": "graphtransfer/Matching-v0",
    "path": "graphtransfer/Path-v0",
}

for _task, _env_id in GYM_IDS.items():
    if _env_id not in gym.registry:
        # without graphs=, an env samples the small sample set rather than failing on a missing argument
        gym.register(_env_id, entry_point=f"{TASKS[_task].__module__}:{TASKS[_task].__name__}", kwargs={"graphs": "small"})

__all__ = [
    "GYM_IDS",
    "TASKS",
    "EpidemicEnv",
    "GraphEnv",
    "GraphEnvProtocol",
    "Head",
    "MISEnv",
    "MVCEnv",
    "PathEnv",
    "MatchingEnv",
    "MaxCutEnv",
    "cut_size",
    "is_independent_set",
    "is_matching",
    "is_route",
    "is_vertex_cover",
    "observation_space",
]
