"""Every setting declared once: its type, default, range or choices, and help, in typed dataclasses.

A run's :class:`RunConfig` is saved beside its weights (``config.json``, and ``config.yaml`` for
people) and is enough to rebuild the model and to repeat the run. The dataclass defaults below
are the base; each task's departures from them live in ``graphtransfer/hyperparams/<task>.yml``
and nowhere else. :func:`check_layer` validates any mapping of settings against these
declarations -- a YAML file, ``--set``, the command line's options and every ``config.json``
that is loaded -- so a bad value is one line naming where it came from and the dotted key.
Where the values come from and in which order is :mod:`graphtransfer.config.layers`.
"""

from __future__ import annotations

import functools
import math
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, Field, asdict, dataclass, field, fields
from importlib import resources
from typing import Any, Literal, Union

import yaml

from graphtransfer.errors import CheckpointError, UsageError
from graphtransfer.process import allowed_cores

Conv = Literal["sage", "gcn", "gin", "gatv2", "gine", "transformer"]
Aggr = Literal["max", "mean", "sum", "min"]
VecEnvKind = Literal["auto", "batched", "dummy", "subproc", "ray"]
Device = Literal["auto", "cpu", "cuda"]
HeadName = Literal["", "node-wise", "node-choice", "edge-wise", "edge-choice", "graph-level"]
Algo = Literal["ppo", "a2c", "dqn"]
ALGOS: tuple[str, ...] = typing.get_args(Algo)
CONVS: tuple[str, ...] = typing.get_args(Conv)
USER_CONV = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
"""a user's own message-passing layer, ``package.module:Class`` (imported only where the user names it: ``--conv``)"""
DecodingName = Literal["local-max", "drawn", "local-max-sampled"]
DECODINGS: tuple[DecodingName, ...] = typing.get_args(DecodingName)
"""how node-wise tasks with commit and defer actions (MIS) and node-choice tasks with ``step_many`` (MVC) decode:
``local-max`` (the default: each pass, the surest nodes that the policy ranks above every undecided neighbour commit; MVC:
the nodes it ranks below every uncovered neighbour stay out of the cover and their neighbours join),
``drawn`` (MIS: every node acts as drawn, with a commit fraction below 1 only the surest may commit; MVC: the top-scoring
valid nodes commit) or ``local-max-sampled`` (local-max on a ranking drawn near the policy's: each node's log-odds plus
Gumbel noise of scale :data:`ORDER_NOISE`, seeded)"""
ORDER_NOISE = 0.5
"""the scale of the Gumbel noise that ``local-max-sampled`` adds to each node's log-odds (node choice: to each score);
chosen against 0.25 and 1 by ``bench/decoding.py`` on graphs small enough to solve exactly"""
DEFAULT_COMMIT_FRACTION = 0.1
"""node-choice heads commit this share of the valid nodes per pass by default; drawn node-wise decoding every node (1.0)"""
NodeOrder = Literal["auto", "given"]
NODE_ORDERS: tuple[str, ...] = typing.get_args(NodeOrder)
"""the order inference numbers a graph's nodes in: ``auto`` (the default: in locality order, reverse Cuthill-McKee, for
tasks that allow it on graphs of :data:`RENUMBER_FROM_NODES` or more; the solution is written in the graph's own order)
or ``given`` (as the file lists them)"""
RENUMBER_FROM_NODES = 50_000
"""``--node-order auto`` renumbers graphs of this many nodes or more; smaller ones fit the caches as they are"""
LOCAL_MAX_PATIENCE = 0.15
"""the MIS local-max decoding's candidates per pass by default on graphs of average degree up to
:data:`LOCAL_MAX_SPARSE_DEGREE`: the surest undecided nodes, this share of the graph's Caro-Wei bound (the sum over nodes
of ``1 / (degree + 1)``, what a greedy pass in random order is expected to find at least); on graphs of average degree 8
that is about 2% of the nodes, on denser graphs fewer"""
LOCAL_MAX_SPARSE_DEGREE = 16.0
"""above this average degree the MIS local-max decoding's share of the Caro-Wei bound shrinks in proportion to the
degree, down to :data:`LOCAL_MAX_DENSE_PATIENCE`"""
LOCAL_MAX_DENSE_PATIENCE = 0.05
"""the least share of the Caro-Wei bound that the MIS local-max decoding takes as candidates per pass on graphs of average
degree :data:`LOCAL_MAX_SPARSE_DEGREE` or more (the default's from average degree 48 on); on sparser graphs the least
share falls with the square of the degree (0.0125 at degree 8), since their sets are a smaller multiple of the bound and
the same share decides them in fewer passes"""
LEAVE_OUT_PATIENCE = 0.15
"""the MVC local-max decoding's candidates per pass by default: the active nodes the policy ranks lowest, this share of the
graph's Caro-Wei bound; those that rank below every active neighbour stay out of the cover and their neighbours join it"""
AUTO_ROLLOUTS: Literal["auto"] = "auto"
"""``--rollouts auto`` (the default): as many rollouts as a work budget allows, counted in nodes, in directed edges and
in policy passes (:data:`ROLLOUT_NODE_BUDGET`, :data:`ROLLOUT_EDGE_BUDGET`, :data:`ROLLOUT_PASS_BUDGET`), at least 1 and
at most :data:`MAX_AUTO_ROLLOUTS`"""
ROLLOUT_NODE_BUDGET = 30_000
"""the nodes that ``--rollouts auto`` decodes in all: a pass costs a few milliseconds even on a small graph, so 30
rollouts at 1,000 nodes, 3 at 10,000 and one from 15,001 nodes on (the 10^5-10^6-node graphs: one, as before)"""
ROLLOUT_EDGE_BUDGET = 4_000_000
"""the directed edges (both directions of every edge) that ``--rollouts auto`` decodes in all: message passing reads
each edge once per pass, so dense graphs get fewer rollouts (2 on 10,000 nodes of average degree 200, 20 on 1,000)"""
ROLLOUT_PASS_BUDGET = 1_500
"""the policy passes that ``--rollouts auto`` runs in all, judged by the first rollout's: on small graphs a pass costs a
few milliseconds whatever its size, so the passes are the work there, and dense graphs, decided over many passes, get
fewer rollouts (17 on 1,000 nodes of average degree 64, 86 passes each; 11 on Barabási–Albert graphs of degree 143)
where sparse ones keep theirs (30 at 1,000 nodes up to 50 passes a rollout)"""
AUTO_PATIENCE = 7.5
"""where ``--rollouts auto`` decodes a graph of fewer than :data:`PATIENT_BELOW_NODES` nodes, the MIS local-max decoding
is this many times more patient than its default: its share of the Caro-Wei bound divided by it, never below
:data:`LOCAL_MAX_DENSE_PATIENCE`'s floor for the degree (0.02 on graphs of average degree up to 10, 0.05 from 16 on: dense
graphs' as before). Patience found larger sets than more rollouts of the default (measured by ``bench/default_quality.py``)"""
PATIENT_BELOW_NODES = 150_000
"""graphs of this many nodes or more keep the default patience with ``--rollouts auto`` (``make demo``'s 250,000-node graph,
10^6-node graphs): there a patient rollout's extra passes would cost seconds that their one rollout does not have"""
HASTY_FROM_NODES = 2_000_000
"""graphs of this many nodes or more (the kernel the policy solves, after the exact rules) are decoded with
:data:`HASTY_PATIENCE`, whatever ``--rollouts`` says: each pass over such a graph costs seconds, and the early passes,
over most of it, are most of a solve's time; smaller graphs keep the default's patience"""
HASTY_PATIENCE = 0.625
"""the MIS local-max decoding's patience on graphs of :data:`HASTY_FROM_NODES` nodes or more: below 1, its share of the
Caro-Wei bound per pass is the degree's share times 1.6, not below the floor for the degree (on Erdős–Rényi graphs of
average degree 8: about 3% of the nodes as candidates per pass instead of 1.9%; from degree 48 on the dense floor binds).
MVC's decoding keeps its default."""
KERNEL_EVERY = 4
"""the MIS local-max passes between two kernels of the residual graph (:mod:`graphtransfer.solve.residual_kernels`),
chosen against 2 and 8 by ``bench/mis_kernel.py``: more often leaves sets no larger in more seconds"""
MAX_AUTO_ROLLOUTS = 64
"""the most rollouts ``--rollouts auto`` runs (on graphs of up to 468 nodes), chosen by ``bench/decoding.py`` against
exact optima of graphs of 100-300 nodes"""
SAMPLED_ROLLOUT_DEGREE = 16.0
"""on graphs of average degree up to this, every other rollout of the default local-max decoding is local-max-sampled;
denser graphs' rollouts are all local-max, differing by the env's random features: there the policy's log-odds lie
close together and the sampled ranking's noise outweighs them (measured by ``bench/default_quality.py``)"""
MAX_ROLLOUTS = 4096
"""the most rollouts ``--rollouts K`` may ask for: each is a whole decoding of the graph"""
MAX_PASSES = 1_000_000
"""the most policy passes ``--max-passes`` may allow per graph (a pass is one policy evaluation of the whole graph)"""
MAX_DRAW_NODES = 3000
"""``predict --draw`` refuses larger graphs: the layout is quadratic, and more nodes draw a blot"""
SEED_LIMIT = 2**32
"""seeds are below this: numpy's and gymnasium's seeding take 32-bit unsigned seeds"""


def setting(
    default: Any = MISSING,
    help: str = "",
    *,
    low: float | None = None,
    high: float | None = None,
    cli: str = "",
    aliases: tuple[str, ...] = (),
    factory=None,
    open_low: bool = False,
    metavar: str = "",
):
    """A dataclass field with its help text, its inclusive range ``low..high`` (``open_low``: above
    ``low``, not equal to it) and its command-line option: named as the field (``--total-timesteps``
    for ``total_timesteps``, the YAML key and SB3's argument), ``aliases`` the older names it also
    takes (``--steps``). ``cli`` renames the option of a parameter object's field whose keyword
    elsewhere differs (``--decoding`` for :attr:`Decoding.method`, ``predict(decoding=...)``); no
    setting of a :class:`RunConfig` has one."""
    metadata = {"help": help, "low": low, "high": high, "cli": cli, "aliases": aliases, "open_low": open_low, "metavar": metavar}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass
class ModelConfig:
    conv: Conv | str = setting(
        "sage",
        "message-passing layer: sage (GraphSAGE), gcn, gin, gatv2, gine (reads edge_attr), transformer, or your own PyG "
        "MessagePassing class as package.module:Class (its model then loads only with --conv package.module:Class again)",
        metavar="LAYER",
    )
    num_layers: int = setting(3, "message-passing layers; a node sees this many hops", low=1, high=32, aliases=("layers",))
    width: int = setting(64, "hidden channels of the GNN", low=1, high=2048)
    aggr: Aggr = setting("max", "GraphSAGE neighbourhood aggregation: max, mean, sum or min")
    head_width: int = setting(64, "hidden width of the node head and the value head", low=1, high=2048)
    project_input: bool = setting(
        True,
        "true: a linear projection of the node features to width comes first and every layer is residual; false: the first "
        "layer reads the raw node features, as the plain recipe's GCN does, and aggregates them before projecting (at 250k "
        "nodes with 2 features a tenth of a width-64 layer's cost)",
    )


RUNTIME_IN_PPO = ("threads", "device", "max_nodes_per_batch", "mixed_precision", "vec_env", "ray_address")
"""the runtime settings that config files written before :class:`Runtime` existed hold in ``ppo``"""


@dataclass
class PPOConfig:
    """PPO's settings, and those every algorithm shares (steps, envs, learning rate, gamma, seed;
    A2C also reads n_steps, gae_lambda and ent_coef). How the run computes is :class:`Runtime`."""

    total_timesteps: int = setting(30_000, "env steps to train for (summed over parallel envs)", low=1, high=10**12, aliases=("steps",))
    n_envs: int = setting(8, "parallel copies of the env, each sampling its own graphs", low=1, high=4096)
    n_steps: int = setting(
        32, "steps per env between updates; more than fit in memory are refused with a count that fits", low=1, high=10**8
    )
    batch_size: int = setting(64, "observations per minibatch", low=1, high=10**8)
    n_epochs: int = setting(4, "passes over each rollout", low=1, high=10**4, aliases=("epochs",))
    learning_rate: float | str = setting(3e-4, "a number, or 'lin_<start>': linear decay from start to 0 over the run")
    gamma: float = setting(0.99, "discount factor", low=0.0, high=1.0)
    gae_lambda: float = setting(0.95, "GAE's lambda", low=0.0, high=1.0)
    clip_range: float | str = setting(0.2, "a number, or 'lin_<start>' like learning_rate")
    ent_coef: float = setting(0.0, "entropy bonus, per real node (size-invariant)", low=0.0)
    target_kl: float | None = setting(None, "stop an update's epochs early once the KL to the old policy exceeds this", low=0.0)
    seed: int = setting(0, "random seed (tune: of every trial's training and of the sampler)", low=0, high=SEED_LIMIT - 1)


@dataclass
class DQNConfig:
    """DQN's own settings (``--algo dqn``); the learning rate, gamma, batch size, seed, envs and
    steps come from the ``ppo`` section, which holds what every algorithm shares."""

    buffer_size: int = setting(
        10_000, "transitions the replay buffer holds; each keeps one observation trimmed to its real nodes and edges", low=1, high=10**9
    )
    learning_starts: int = setting(500, "env steps of uniformly random valid actions before the first update", low=0)
    train_freq: int = setting(1, "env steps per env between updates", low=1, high=10**6)
    gradient_steps: int = setting(1, "gradient steps per update", low=1, high=10**4)
    target_update_interval: int = setting(500, "env steps between copies of the online Q-network into the target network", low=1)
    exploration_initial_eps: float = setting(1.0, "epsilon-greedy: the share of random valid actions at the start", low=0.0, high=1.0)
    exploration_final_eps: float = setting(0.05, "epsilon-greedy: the share of random valid actions at the end", low=0.0, high=1.0)
    exploration_fraction: float = setting(
        0.3, "share of the run over which epsilon falls from its initial to its final value", low=0.0, high=1.0
    )


@dataclass
class LogConfig:
    """What a training run writes besides its model, all inside the run folder."""

    stdout: bool = setting(False, "print SB3's table of training statistics after every rollout", aliases=("verbose",))
    tensorboard: bool = setting(False, "also write TensorBoard event files to tensorboard/ (pip install 'graphtransfer[tensorboard]')")
    eval_graphs: str | None = setting(
        None,
        "held-out graphs (set name, file or folder) to evaluate on; the best model goes to best/ (tune: each trial's "
        "score, default the training graphs)",
    )
    eval_every: int = setting(0, "evaluate every this many env steps (0: only once training ends; tune: a fifth of a trial)", low=0)
    checkpoint_every: int = setting(0, "save a resumable checkpoint to checkpoints/step-<N>/ every this many env steps (0: none)", low=0)


@dataclass(frozen=True)
class Runtime:
    """How a policy computes, not what it computes: threads, device, node budget, precision, the
    vector env and the Ray cluster. Training saves it in its config (``runtime``, so that a run
    repeats as it ran); predict, eval and transfer take it from their options, never from the
    model folder. Checked on construction (:func:`check_fields`), a bad value is a
    :class:`UsageError`.

    Model folders written before this section carry these settings in ``ppo``; they load into
    ``runtime`` (:data:`RUNTIME_IN_PPO`), and ``--set ppo.threads=2`` still sets ``runtime.threads``."""

    threads: int | None = setting(
        None,
        "torch CPU threads (default: train and each tune trial 1; predict, eval, transfer and export one per core no other "
        "process holds, 1 on graphs of fewer than 10,000 nodes)",
        low=1,
        high=1024,
    )
    device: Device = setting(
        "cpu",
        "where the policy runs: cpu (the default of every command: the same results on any machine), cuda (an error where "
        "torch sees no GPU) or auto (cuda where torch sees a GPU, else cpu); predict's decoding around it runs on the CPU",
    )
    max_nodes_per_batch: int | None = setting(
        None,
        "most graph nodes one pass of the GNN spans; larger batches and graphs run in chunks with the same results, in less "
        "memory (e.g. --max-nodes-per-batch 50000); default: no limit (CPU updates split minibatches over 32,768 nodes)",
        low=1,
    )
    mixed_precision: bool = setting(
        False,
        "bfloat16 autocast of the GNN's message passing on CUDA (predict, eval and transfer refuse it on the CPU; train ignores it there)",
    )
    vec_env: VecEnvKind = setting(
        "auto",
        "training: batched (the envs stepped as one batch: same episodes, faster; where the env declares one), dummy (one "
        "by one), subproc (a process per env), ray (a Ray actor per env); auto: batched where declared (2+ envs), else dummy",
    )
    ray_address: str | None = setting(
        None, "the Ray cluster of --vec-env ray ('auto', host:port; default: RAY_ADDRESS, else a local instance)"
    )

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class Decoding:
    """How a policy decodes a graph into a solution: the decoding, its patience, how actions are
    drawn, the rollouts, the pass limit and the node order. Built once where a call comes in (the
    command line's options, or the keyword arguments of ``graphtransfer.predict`` and
    ``graphtransfer.evaluate``) and passed down whole; checked on construction
    (:func:`check_fields`), a bad value is a :class:`UsageError`.

    ``method`` and ``commit_fraction`` compose with ``rollouts``: left out, the env's default
    decoding alternates with ``local-max-sampled`` from rollout to rollout
    (:func:`graphtransfer.solve.rollouts.rollout_plan`); a ``method`` given is kept by every rollout."""

    method: DecodingName | None = setting(
        None,
        "mis and mvc: local-max (default; each pass the surest nodes that outrank their undecided neighbours commit), drawn "
        "(nodes act as the policy draws) or local-max-sampled (local-max on a seeded, noisy ranking). Other tasks: drawn. "
        "See docs/guide/decoding.md",
        cli="decoding",
    )
    commit_fraction: float | None = setting(
        None,
        "candidates one pass may commit, as a share of the graph's nodes, most confident first; smaller: larger sets in more "
        "passes. Default: mis and mvc local-max, a share of the graph's Caro-Wei bound that follows its degree; other "
        f"node-choice tasks {DEFAULT_COMMIT_FRACTION}; mis drawn 1 (every node). See docs/guide/decoding.md",
        low=0.0,
        high=1.0,
        open_low=True,
    )
    deterministic: bool | None = setting(
        None,
        "--decoding drawn: take the most likely actions (--deterministic) or sample them, seeded (--no-deterministic); "
        "default: the task's, the most likely moves for path, samples for the others",
    )
    seed: int = setting(0, "seed of the first rollout; rollout i takes seed + i", low=0, high=SEED_LIMIT - 1)
    rollouts: int | Literal["auto"] = setting(
        AUTO_ROLLOUTS,
        "run the policy K times (seeds --seed, --seed + 1, ...) and keep the best solution; still the policy alone, no search. "
        f"auto: as many as a work budget allows, 1 to {MAX_AUTO_ROLLOUTS}, fewer on larger and denser graphs (counted after the "
        "exact rules); the output says how many ran. See docs/guide/decoding.md",
        low=1,
        high=MAX_ROLLOUTS,
    )
    max_passes: int | None = setting(None, "policy passes per graph before stopping (default: the task's)", low=1, high=MAX_PASSES)
    node_order: NodeOrder = setting(
        "auto",
        f"auto: mis and mvc renumber graphs of {RENUMBER_FROM_NODES:,} nodes or more so that neighbours sit close in memory "
        "(reverse Cuthill-McKee); the solution keeps the graph's own order and ids. given: the file's order",
    )

    reductions: bool = setting(
        True,
        "mis and mvc: exact rules decide what some optimal solution decides anyway (the graph shrunk to its kernel before and "
        "between passes; nearly bipartite graphs also solved as bipartite). --no-reductions: the policy alone. See "
        "docs/guide/decoding.md",
    )

    kernel_every: int = setting(
        KERNEL_EVERY,
        "mis and mvc, with --reductions: shrink the undecided graph to its kernel again every this many passes (sooner when "
        "many of its nodes have degree 2 or less). 0: only before the first pass. See docs/guide/decoding.md",
        low=0,
        high=MAX_PASSES,
    )

    def __post_init__(self) -> None:
        check_fields(self)


SamplerName = Literal["tpe", "random", "cmaes"]
SAMPLERS: tuple[str, ...] = typing.get_args(SamplerName)
"""tpe: Optuna's default, its first 5 trials drawn at random; random; cmaes: CMA-ES on the numeric
settings (learning rate, epochs, layers) and random draws for the others (the ``cmaes`` package, in ``graphtransfer[tune]``)"""
PrunerName = Literal["median", "halving", "none"]
PRUNERS: tuple[str, ...] = typing.get_args(PrunerName)
"""median: stop a trial below the median of earlier trials at the same step; halving: successive
halving; none: every trial runs its whole budget"""
DEFAULT_STUDY = "graphtransfer"
STUDY_NAME_MAX = 512  # Optuna's column for it


@dataclass(frozen=True)
class Search:
    """How a hyperparameter search runs (``graphtransfer tune``,
    :func:`graphtransfer.training.tuning.tune`), beside what each trial trains (the
    :class:`RunConfig`). Checked on construction (:func:`check_fields`, then against this
    machine's cores unless the jobs run on a Ray cluster), a bad value is a :class:`UsageError`."""

    n_trials: int = setting(
        20,
        "stop once the study holds this many finished (completed or pruned) trials, counted over every process that "
        "shares it; a process starts no trial once finished and running ones reach it (0: none, e.g. with --plot)",
        low=0,
    )
    timeout: float | None = setting(None, "stop starting trials after this many seconds (default: no limit)", low=0, open_low=True)
    storage: str | None = setting(
        None,
        "keep the study in this Optuna RDB storage instead of OUT/study.db, e.g. sqlite:///studies.db or "
        "postgresql://user@host/db (its driver installed); tune processes on several machines that name the same "
        "--storage and --study-name share the study",
    )
    study_name: str = setting(DEFAULT_STUDY, f"the study's name in the storage, 1 to {STUDY_NAME_MAX} printable characters")
    n_jobs: int = setting(
        1,
        "trials at once, each in a worker process of its own with runtime.threads torch threads (--n-jobs x runtime.threads "
        "at most the cores), or with --ray-address that many Ray tasks on the cluster, runtime.threads CPUs each",
        low=1,
    )
    ray_address: str | None = setting(
        None,
        "run the --n-jobs workers as tasks on this Ray cluster ('auto', 'local' or host:port; graphtransfer installed on "
        "every node). They reach the study through its storage (OUT/study.db on shared files, else --storage). See "
        "docs/sb3.md",
    )
    sampler: SamplerName = setting(
        "tpe",
        "how trials draw settings: tpe (its first 5 trials at random), random, or cmaes (CMA-ES on the numeric settings, "
        "random draws for the choices). Each trial's draw is seeded by --seed and its number",
    )
    pruner: PrunerName = setting(
        "median",
        "which trials stop early at an evaluation: median (below the median of earlier trials at that step), halving "
        "(successive halving), none",
    )

    def __post_init__(self) -> None:
        check_fields(self)
        cores = allowed_cores()
        if self.n_jobs > cores and self.ray_address is None:  # a cluster's CPUs are Ray's to count
            raise UsageError(
                f"--n-jobs {self.n_jobs} must be a whole number from 1 to {cores} (the cores this process may use): "
                "each job trains in a process of its own; more run on a Ray cluster (--ray-address)"
            )
        if not self.study_name or len(self.study_name) > STUDY_NAME_MAX or not self.study_name.isprintable():
            raise UsageError(
                f"--study-name {self.study_name!r} must be 1 to {STUDY_NAME_MAX} printable characters, e.g. --study-name mis-small"
            )


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
    if not task or not re.fullmatch(r"[a-z0-9_]+", task):
        return {}
    file = resources.files("graphtransfer") / "hyperparams" / f"{task}.yml"
    if not file.is_file():
        return {}
    return yaml.safe_load(file.read_text()) or {}


def ppo_for_task(task: str, **values: Any) -> PPOConfig:
    """PPO settings for ``task``: its defaults from :func:`task_defaults`, then ``values``."""
    return PPOConfig(**{**task_defaults(task).get("ppo", {}), **values})


@dataclass
class RunConfig:
    task: str = setting("mis", "built-in task name (see 'graphtransfer tasks'); ignored when env is set")
    graphs: str = setting("small", "sample set name, graph file or folder of graphs to train on")
    horizon: int | None = setting(None, "env steps before an episode is cut off (None: the task's default)", low=1, high=10**9)
    env: str | None = setting(None, "the user's env instead of a task: 'package.module:Class' or a gymnasium id")
    env_kwargs: dict[str, Any] = setting(
        help="extra keyword arguments for the env's constructor (on the command line a JSON object, e.g. '{\"horizon\": 16}')",
        factory=dict,
    )
    head: HeadName = setting(
        "", "policy head, filled in from the env at training time: node-wise, node-choice, edge-wise, edge-choice or graph-level"
    )
    algo: Algo = setting(
        "ppo",
        "RL algorithm: ppo (every head), a2c (every head) or dqn (node-choice and edge-choice heads: a Q-value per node or edge; "
        "its own settings are the dqn section, e.g. --set dqn.buffer_size=20000); a config without it reads as ppo",
    )
    model: ModelConfig = field(default_factory=ModelConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    dqn: DQNConfig = field(default_factory=DQNConfig)
    log: LogConfig = field(default_factory=LogConfig)
    runtime: Runtime = field(default_factory=Runtime)

    def __post_init__(self) -> None:
        self.head = typing.cast(HeadName, str(self.head))  # a Head enum member is stored as its plain value

    @property
    def name(self) -> str:
        """The task name, or the user env's class or id, lower case: a run folder's first part."""
        return self.task if self.env is None else self.env.rpartition(":")[2].replace("/", "-").lower()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def check(self, source: str = "RunConfig") -> None:
        """Validate a config built in Python as YAML, ``--set`` and config.json are validated: a value
        of the wrong type, out of range or not one of its choices is a :class:`UsageError` naming
        the dotted key (``RunConfig: ppo.n_steps: 0 is below 1 ...``)."""
        check_layer(source, self.to_dict())

    def to_yaml(self) -> str:
        """The whole config as YAML that ``train --config`` reads back to the same config."""
        header = "# graphtransfer run config: 'graphtransfer train --config THIS_FILE' repeats the run\n"
        return header + yaml.safe_dump(self.to_dict(), sort_keys=False)

    @classmethod
    def from_dict(cls, data: Any, source: str = "config") -> RunConfig:
        """Inverse of :meth:`to_dict`, validated like every layer: a key that is unknown, of the
        wrong type, out of range or not one of its choices is a :class:`CheckpointError` naming it."""
        if not isinstance(data, dict):
            raise CheckpointError(f"{source}: expected a mapping of settings, found {type(data).__name__}")
        try:
            checked = check_layer(source, data)
        except UsageError as err:
            raise CheckpointError(f"{err}; the model folder is damaged or was edited, retrain or restore it") from None
        sections = {name: kind(**checked.pop(name, {})) for name, kind in SECTIONS.items()}
        return cls(**checked, **sections)


SECTIONS: dict[str, type] = {"model": ModelConfig, "ppo": PPOConfig, "dqn": DQNConfig, "log": LogConfig, "runtime": Runtime}
"""RunConfig's nested sections, by key"""


def declaration(dotted: str) -> tuple[Field, Any]:
    """The field declared for a dotted key such as ``ppo.n_steps``, and its type hint."""
    section, _, name = dotted.rpartition(".")
    return field_of(SECTIONS[section] if section else RunConfig, name)


def field_of(kind: type, name: str) -> tuple[Field, Any]:
    """The field ``name`` of the dataclass ``kind`` (a section, :class:`Decoding`, :class:`Runtime`), and its type hint."""
    return next(f for f in fields(kind) if f.name == name), _type_hints(kind)[name]


def help_of(dotted: str) -> str:
    """The help text declared for a dotted key such as ``ppo.n_steps``."""
    return declaration(dotted)[0].metadata["help"]


def check_setting(where: str, dotted: str, value: Any) -> Any:
    """``value`` converted to the type declared for ``dotted`` and checked against its range or
    choices, as every layer is; a bad one is a :class:`UsageError` that starts with ``where``
    (the key and its option, say: ``ppo.n_envs (--n-envs): 0 must be at least 1``)."""
    section, _, name = dotted.rpartition(".")
    return check_field(where, SECTIONS[section] if section else RunConfig, name, value)


def check_field(where: str, kind: type, name: str, value: Any) -> Any:
    """``value`` converted to the type of the field ``name`` of ``kind`` and checked against its
    range or choices (:func:`check_setting`). A value that is not None is checked against the
    declared type without None: an option's text is never null."""
    declared, hint = field_of(kind, name)
    options = typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) else (hint,)
    if value is not None and type(None) in options:
        hint = Union[tuple(option for option in options if option is not type(None))]  # noqa: UP007 (a tuple of types)
    key = next((f"{section}.{name}" for section, section_kind in SECTIONS.items() if section_kind is kind), name)
    return _check_value(where, key, value, hint, declared.metadata)


def cli_keys() -> dict[str, str]:
    """Command-line option name (as a Python parameter: the field's, ``total_timesteps``) -> dotted
    key (``ppo.total_timesteps``), for every setting; the option's aliases are :func:`option_aliases`."""
    keys = {}
    for section, kind in (("", RunConfig), *SECTIONS.items()):
        for f in fields(kind):
            if f.metadata:
                keys[f.metadata["cli"] or f.name] = f"{section}.{f.name}" if section else f.name
    return keys


def option_aliases(kind: type, name: str) -> tuple[str, ...]:
    """The older flags that the field ``name`` of ``kind`` also takes on the command line, as flags
    (``("--steps",)`` for :attr:`PPOConfig.total_timesteps`)."""
    return tuple("--" + alias.replace("_", "-") for alias in field_of(kind, name)[0].metadata.get("aliases", ()))


def check_layer(source: str, data: dict[str, Any]) -> dict[str, Any]:
    """The layer with its values checked and converted to the fields' types; a bad key or value
    raises a :class:`UsageError` naming ``source`` and the dotted key. Runtime settings written in
    ``ppo`` (files from before :class:`Runtime`) are checked under their own name and moved to
    ``runtime``, where a value given in ``runtime`` itself wins."""
    checked: dict[str, Any] = {}
    declared = _declared(RunConfig)
    for key, value in data.items():
        if not isinstance(key, str):
            raise UsageError(f"{source}: key {key!r} is not a setting name; known keys are {', '.join(sorted(declared))}")
        if key in SECTIONS:
            if not isinstance(value, dict):
                raise UsageError(f"{source}: {key}: expected a mapping of {key} settings, found {value!r}")
            checked[key] = _check_section(source, key, value)
        elif key in declared:
            checked[key] = _check_value(f"{source}: {key}", key, value, *declared[key])
        else:
            raise UsageError(f"{source}: unknown key {key}; known keys are {', '.join(sorted(declared))}")
    moved = {name: checked["ppo"].pop(name) for name in RUNTIME_IN_PPO if name in checked.get("ppo", {})}
    if moved:
        checked["runtime"] = moved | checked.get("runtime", {})
        if not checked["ppo"]:
            del checked["ppo"]
    return checked


def check_fields(params: Any) -> None:
    """Check every field of a frozen parameter object (:class:`Runtime`, :class:`Decoding`) against
    its declaration, as :func:`check_layer` checks a layer, and keep it converted (``"8"`` is 8,
    as in YAML); a bad value raises a :class:`UsageError` that names the field and its option:
    ``Decoding.seed (--seed): -1 must be 0 or more``."""
    kind = type(params)
    for name, (hint, metadata) in _declared(kind).items():
        where = f"{kind.__name__}.{name} (--{(metadata['cli'] or name).replace('_', '-')})"
        object.__setattr__(params, name, _check_value(where, name, getattr(params, name), hint, metadata))


@functools.cache
def _type_hints(kind: type) -> dict[str, Any]:
    """The fields' type hints of the dataclass ``kind``, evaluated once: the annotations are strings
    (``from __future__ import annotations``), and evaluating them is most of building the command line's options."""
    return typing.get_type_hints(kind)


def _declared(kind: type) -> dict[str, tuple[Any, Mapping[str, Any]]]:
    """Each field's type hint and metadata, by name."""
    hints = _type_hints(kind)
    return {f.name: (hints[f.name], f.metadata) for f in fields(kind)}


def _check_section(source: str, section: str, values: dict[str, Any]) -> dict[str, Any]:
    own = _declared(SECTIONS[section])
    declared = own
    if section == "ppo":  # files from before the runtime section: checked here, moved by check_layer
        declared = own | {name: _declared(Runtime)[name] for name in RUNTIME_IN_PPO}
    checked = {}
    for key, value in values.items():
        if key not in declared:
            raise UsageError(f"{source}: unknown key {section}.{key}; {section} has {', '.join(own)}")
        checked[key] = _check_value(f"{source}: {section}.{key}", f"{section}.{key}", value, *declared[key])
    return checked


def _check_value(where: str, key: str, value: Any, hint: Any, metadata: Mapping[str, Any]) -> Any:
    """``value`` converted to ``hint``'s type and checked against the key's range or choices;
    ``where`` begins any error message (the source and the key)."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) else (hint,)
    converted = _convert(value, options)
    choices = [choice for option in options if typing.get_origin(option) is Literal for choice in typing.get_args(option)]
    only_choices = not any(option in (int, float) for option in options)
    if converted is _BAD and choices and only_choices and isinstance(value, str):
        raise UsageError(f"{where}: {value!r} is not one of {', '.join(choice for choice in choices if choice)}")
    if converted is _BAD:
        names = " or ".join(_type_name(option) for option in options)
        raise UsageError(f"{where}: expected {names}, got {value!r}")
    if isinstance(converted, str) and key in ("ppo.learning_rate", "ppo.clip_range"):
        _check_schedule(where, converted)
    if key == "model.conv" and converted not in CONVS and not USER_CONV.match(converted):
        raise UsageError(f"{where}: {value!r} is not one of {', '.join(CONVS)}, nor a layer of yours as package.module:Class")
    problem = _out_of_range(converted, metadata.get("low"), metadata.get("high"), metadata.get("open_low", False))
    if problem:
        raise UsageError(f"{where}: {converted!r} {problem}")
    return converted


def _check_schedule(where: str, value: str) -> None:
    try:
        start = schedule_start(value)
    except ValueError:
        raise UsageError(
            f"{where}: {value!r} is not a number or a schedule; write e.g. 3e-4, or lin_3e-4 for a linear decay to 0"
        ) from None
    if start <= 0:
        raise UsageError(f"{where}: {value!r} must start above 0")


def _out_of_range(value: Any, low: float | None, high: float | None, open_low: bool = False) -> str:
    if value is None or isinstance(value, (bool, str, dict)):
        return ""
    if low is not None and open_low and value <= low:
        return f"must be above {_bound(low)}"
    if low is not None and value < low:
        return f"must be at least {_bound(low)}" if low else "must be 0 or more"
    if high is not None and value > high:
        return f"must be at most {_bound(high)}"
    return ""


def _bound(value: float) -> str:
    """A range's end as a message shows it: 4,294,967,295 (not 4.29497e+09), 0.5."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


_BAD = object()
_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", type(None): "null", dict: "a mapping"}
_WHOLE = re.compile(r"^[+-]?\d+(?:_\d+)*$")
_NUMBER = re.compile(r"^[+-]?(?:\d+(?:_\d+)*\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")  # 50_000 as Python and YAML read it


def _type_name(option: Any) -> str:
    if typing.get_origin(option) is Literal:
        return "one of " + ", ".join(repr(choice) for choice in typing.get_args(option))
    return _TYPE_NAMES.get(option, _TYPE_NAMES.get(typing.get_origin(option), getattr(option, "__name__", str(option))))


def _convert(value: Any, options: tuple) -> Any:
    """The first of ``options`` that ``value`` is, or converts to without loss; else ``_BAD``.

    Numbers written as strings are taken as numbers ('3e-4': YAML 1.1 reads an exponent without
    a dot as a string), and whole numbers as integers (1e5 for an integer setting)."""
    for option in options:
        if option is type(None) and value is None:
            return None
        if option is bool and isinstance(value, bool):
            return value
        if isinstance(value, bool) or value is None:
            continue
        if typing.get_origin(option) is Literal:
            if value in typing.get_args(option):
                return value
            continue
        if option in (int, float):
            number = _number(value)
            if number is None or number != number or number in (float("inf"), float("-inf")):
                continue
            if option is float:
                return float(number)
            if float(number).is_integer():
                return int(number)
        if option is str and isinstance(value, str):
            return value
        if typing.get_origin(option) is dict and isinstance(value, dict) and all(isinstance(k, str) for k in value):
            return value
    return _BAD


def _number(value: Any) -> int | float | None:
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and _NUMBER.match(value.strip()):
        return int(value) if _WHOLE.match(value.strip()) else float(value)  # a whole number exactly, however long
    return None


MAX_BUDGET_SECONDS = 7 * 24 * 3600.0
"""the longest time budget an option takes (--adapt, --polish): a week"""


def check_budget_seconds(seconds: object, what: str, example: int) -> float:
    """``seconds`` as a time budget for ``what``: a positive finite number, at most a week."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise UsageError(f"{what} seconds {seconds!r} must be a number of seconds, e.g. {example}")
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_BUDGET_SECONDS):
        raise UsageError(f"{what} seconds {seconds!r} must be more than 0 and at most {MAX_BUDGET_SECONDS:.0f} (a week), e.g. {example}")
    return float(seconds)
