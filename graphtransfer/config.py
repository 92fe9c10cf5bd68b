"""Every default in one place: typed settings for the model, PPO, a run's logs, and a run.

A run's :class:`RunConfig` is saved beside its weights (``config.json``, and ``config.yaml`` for
people) and is enough to rebuild the model and to repeat the run. The dataclass defaults below
are the base; each task's departures from them live in ``graphtransfer/hyperparams/<task>.yml``
and nowhere else. Reading YAML, ``--set`` overrides and their checks are in
:mod:`graphtransfer.configfile`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from importlib import resources
from typing import Any

import yaml

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
    vec_env: str = "dummy"
    """dummy (every env in this process) or subproc (one process per env); dummy measured faster on 2 cores"""
    n_steps: int = 32
    """steps per env between updates"""
    batch_size: int = 64
    """observations per minibatch"""
    n_epochs: int = 4
    """passes over each rollout"""
    learning_rate: float | str = 3e-4
    """a number, or 'lin_<start>': linear decay from start to 0 over the run"""
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_range: float | str = 0.2
    """a number, or 'lin_<start>' like learning_rate"""
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


@dataclass
class LogConfig:
    """What a training run writes besides its model, all inside the run folder."""

    stdout: bool = False
    """print SB3's table of training statistics after every rollout (progress.csv is always written)"""
    tensorboard: bool = False
    """also write TensorBoard event files to tensorboard/ (needs graphtransfer[tensorboard])"""
    eval_graphs: str | None = None
    """held-out graphs (set name, file or folder) to evaluate the policy on; the best model goes to best/"""
    eval_every: int = 0
    """evaluate every this many env steps (0: only once training ends)"""
    checkpoint_every: int = 0
    """save a resumable checkpoint to checkpoints/step-<N>/ every this many env steps (0: none)"""


SCHEDULE = re.compile(r"^lin_(?P<start>[0-9.eE+-]+)$")


def schedule_start(value: float | str) -> float:
    """The starting value of a learning-rate or clip-range setting: the number itself, or
    ``start`` in ``lin_<start>``. Raises ValueError for anything else."""
    if isinstance(value, (int, float)):
        return float(value)
    match = SCHEDULE.match(value)
    if match is None:
        raise ValueError(value)
    return float(match["start"])


def schedule(value: float | str):
    """What SB3 takes for ``learning_rate`` / ``clip_range``: the number, or for ``lin_<start>`` a
    function of the remaining progress (1 at the start of the run, 0 at its end)."""
    if isinstance(value, str):
        start = schedule_start(value)
        return lambda progress_remaining: progress_remaining * start
    return value


def task_defaults(task: str) -> dict[str, Any]:
    """The task's departures from the defaults, from its packaged ``hyperparams/<task>.yml``
    (an empty dict for a task without one, such as a user's env)."""
    file = resources.files("graphtransfer") / "hyperparams" / f"{task}.yml"
    if not task or not file.is_file():
        return {}
    return yaml.safe_load(file.read_text()) or {}


def ppo_for_task(task: str, **values: Any) -> PPOConfig:
    """PPO settings for ``task``: its defaults from :func:`task_defaults`, then ``values``."""
    return PPOConfig(**{**task_defaults(task).get("ppo", {}), **values})


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
    log: LogConfig = field(default_factory=LogConfig)

    @property
    def name(self) -> str:
        """The task name, or the user env's class or id, lower case: a run folder's first part."""
        return self.task if self.env is None else self.env.rpartition(":")[2].replace("/", "-").lower()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_yaml(self) -> str:
        """The whole config as YAML that ``train --config`` reads back to the same config."""
        header = "# graphtransfer run config: 'graphtransfer train --config THIS_FILE' repeats the run\n"
        return header + yaml.safe_dump(self.to_dict(), sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        """Inverse of :meth:`to_dict`; an unknown key is an error that names it."""
        data = dict(data)
        sections = {name: _build(kind, data.pop(name, {}), name) for name, kind in SECTIONS.items()}
        return _build(cls, {**data, **sections}, "run")


SECTIONS: dict[str, type] = {"model": ModelConfig, "ppo": PPOConfig, "log": LogConfig}
"""RunConfig's nested sections, by key"""


def _build(kind: type, values: dict[str, Any], section: str):
    known = {f.name for f in fields(kind)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise CheckpointError(f"config section {section!r} has unknown keys {unknown}; known keys are {sorted(known)}")
    return kind(**values)
