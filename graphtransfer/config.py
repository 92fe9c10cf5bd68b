"""Every default in one place: typed settings for the model, PPO and a run.

A run's :class:`RunConfig` is saved beside its weights and is enough to rebuild the model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from graphtransfer.errors import CheckpointError


@dataclass
class ModelConfig:
    conv: str = "sage"
    """message-passing layer: sage (GraphSAGE), gcn or gin"""
    num_layers: int = 3
    """message-passing layers; a node sees this many hops"""
    width: int = 64
    """hidden channels of the GNN"""
    aggr: str = "max"
    """GraphSAGE neighbourhood aggregation (mean, max, sum)"""
    head_width: int = 64
    """hidden width of the node head and the value head"""


@dataclass
class PPOConfig:
    total_timesteps: int = 30_000
    """env steps to train for (summed over parallel envs)"""
    n_envs: int = 8
    """parallel copies of the env, each sampling its own graphs"""
    n_steps: int = 32
    """steps per env between updates"""
    batch_size: int = 64
    """observations per minibatch"""
    n_epochs: int = 4
    """passes over each rollout"""
    learning_rate: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.0
    """entropy bonus, per real node (size-invariant)"""
    target_kl: float | None = None
    """stop an update's epochs early once the KL to the old policy exceeds this"""
    seed: int = 0
    threads: int = 1
    """torch CPU threads; one is fastest for small graphs on 2 cores"""
    device: str = "auto"
    """cpu, cuda or auto"""
    max_nodes_per_batch: int | None = None
    """runtime: most graph nodes one forward or backward pass spans; larger batches run in chunks with the same results (None: no limit)"""
    mixed_precision: bool = False
    """runtime: bfloat16 autocast of the GNN's message passing on CUDA (ignored on the CPU)"""


# Per-task departures from the PPO defaults, and why.
TASK_PPO_DEFAULTS: dict[str, dict[str, Any]] = {
    # Each MaxCut step's reward is that step's own cut change. With gamma 0.99 the credit for
    # ~40 simultaneous flips was too noisy and PPO learned to stop flipping (0.50 of edges cut
    # on 2,000-node graphs after 30k steps); with a short horizon of credit it reached 0.70-0.72,
    # above one-flip local search.
    "maxcut": {"gamma": 0.5, "gae_lambda": 0.5},
}


def ppo_for_task(task: str, **values: Any) -> PPOConfig:
    """PPO settings for ``task``: its defaults from :data:`TASK_PPO_DEFAULTS`, then ``values``."""
    return PPOConfig(**{**TASK_PPO_DEFAULTS.get(task, {}), **values})


@dataclass
class RunConfig:
    task: str = "mis"
    """built-in task name (see `graphtransfer.envs.TASKS`); ignored when `env` is set"""
    graphs: str = "small"
    """sample set name, graph file or folder of graphs to train on"""
    horizon: int | None = None
    """env steps before an episode is cut off (None: the task's default)"""
    env: str | None = None
    """the user's env instead of a task: 'package.module:Class' or a gymnasium id"""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """extra keyword arguments for the env's constructor"""
    head: str = ""
    """policy head, filled in from the env at training time: node-wise, node-choice or graph-level"""
    model: ModelConfig = field(default_factory=ModelConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)

    @property
    def name(self) -> str:
        """The task name, or the user env's class or id, lower case: a run folder's first part."""
        return self.task if self.env is None else self.env.rpartition(":")[2].replace("/", "-").lower()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        """Inverse of :meth:`to_dict`; an unknown key is an error that names it."""
        data = dict(data)
        model = _build(ModelConfig, data.pop("model", {}), "model")
        ppo = _build(PPOConfig, data.pop("ppo", {}), "ppo")
        return _build(cls, {**data, "model": model, "ppo": ppo}, "run")


def _build(kind: type, values: dict[str, Any], section: str):
    known = {f.name for f in fields(kind)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise CheckpointError(f"config section {section!r} has unknown keys {unknown}; known keys are {sorted(known)}")
    return kind(**values)
