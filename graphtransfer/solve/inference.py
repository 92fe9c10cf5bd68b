"""Running a policy on one graph until the task is solved: no gradients, no SB3 predict detour.

Each head decodes differently: node-wise policies with commit and defer actions (MIS) and
node-choice policies with ``step_many`` commit, by default, the surest nodes that the policy
ranks above all their active neighbours (``local-max``), and covering ones (MVC) leave out of the
cover the nodes it ranks below all their active neighbours, whose neighbours join; under ``drawn`` node-wise
policies act on every active node as drawn (with a commit fraction below 1 only the most
confident ones commit) and node-choice policies commit the top-scoring valid nodes; other
node-wise policies act as drawn; edge-wise policies act on every observed edge at once;
edge-choice policies commit the top-scoring valid edges of each pass (a fraction of them, for
envs with ``step_many``); graph-level policies take one action per step
from the pooled embedding.
"""

from __future__ import annotations

import functools
import math
import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import cast

import gymnasium as gym
import numpy as np
import torch
from torch_geometric.data import Batch, Data

from graphtransfer.config import (
    DECODINGS,
    DEFAULT_COMMIT_FRACTION,
    LEAVE_OUT_PATIENCE,
    LOCAL_MAX_DENSE_PATIENCE,
    LOCAL_MAX_PATIENCE,
    LOCAL_MAX_SPARSE_DEGREE,
    ORDER_NOISE,
)
from graphtransfer.envs.base import GraphEnv
from graphtransfer.envs.contract import EDGE_ATTR
from graphtransfer.envs.protocol import EnvFeatures, Head, features_of
from graphtransfer.envs.transforms import FinishedSet
from graphtransfer.envs.user_task import UserTask
from graphtransfer.errors import UsageError
from graphtransfer.nn.batching import pyg_to_padded
from graphtransfer.nn.local_max import LOGIT_EPS, Until, local_max_commits, with_gumbel_noise
from graphtransfer.solve.device import device_passes, runs_on_device, whole_graph


@dataclass(frozen=True)
class NearBipartiteRival:
    """A set found without the policy that competed with the policy's own on a nearly bipartite
    graph (:mod:`graphtransfer.tasks.mis.near_bipartite`, :func:`graphtransfer.solve.predict.predict_graph`).

    Attributes:
        odd_edges: the edges inside a colour of its two-colouring, of ``edges``.
        edges: the edges of the graph solved.
        margin: how much better its objective was than the policy's (negative: worse; nodes, for
            MVC nodes fewer in the cover).
        taken: whether it is the answer (it was better).
        seconds: what finding it took.
    """

    odd_edges: int
    edges: int
    margin: float
    taken: bool
    seconds: float


@dataclass
class Solution:
    """A policy's answer on one graph."""

    solution: np.ndarray  # the task's solution rows, e.g. (num_nodes,) per-node decisions
    objective: float
    feasible: bool
    passes: int  # policy forward passes (env steps) it took
    seconds: float
    peak_rss_mib: float  # the process's peak resident memory so far
    finished: FinishedSet | None = None  # what the finishing rule added, when one ran (the task's finish)
    seed: int = 0  # of the rollout that gave it
    decoding: str = ""  # the decoding that gave it: local-max or drawn
    rollouts: int = 1  # how many rollouts it is the best of (see graphtransfer.solve.rollouts); seconds count them all
    expert: int = 0  # the weight set that gave it: 0 the model's own, k its k-th expert (graphtransfer.checkpoint.Checkpoint.experts)
    weight_sets: int = 1  # how many weight sets took turns in the rollouts: 1 + the model's experts
    renumbered: bool = False  # solved with the nodes renumbered in locality order (graphtransfer.solve.ordering), rows put back
    reduced: int = 0  # nodes the kernel's rules decided before the policy ran (graphtransfer.tasks.mis.kernel)
    reduced_seconds: float = 0.0  # what the kernel took, counted in seconds too
    kernels: int = 0  # kernels of the undecided graph taken between passes that decided something (graphtransfer.solve.residual_kernels)
    rival: NearBipartiteRival | None = None  # a nearly bipartite graph's set found without the policy, where one was sought
    advice: str = ""  # what the env could declare to decode better (graphtransfer.envs.protocol.declaration_advice)


def objective_text(value: float) -> str:
    """An objective as a user reads it: a whole number in full (a set of 3,458,476 nodes, not
    3.45848e+06), any other to six significant digits."""
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.6g}"


def obs_to_tensors(obs: dict[str, np.ndarray], device: torch.device) -> dict[str, torch.Tensor]:
    """One observation as a batch of one; ``from_numpy`` shares memory, so no copy on the CPU."""
    return {key: torch.from_numpy(np.ascontiguousarray(value)).unsqueeze(0).to(device) for key, value in obs.items()}


def solve(
    policy,
    env: gym.Env,
    deterministic: bool | None = None,
    seed: int = 0,
    commit_fraction: float | None = None,
    finish=None,
    decoding: str | None = None,
    patience: float = 1.0,
    reductions: bool = True,
    until: Until | None = None,
) -> Solution:
    """Run ``policy`` on the env's single graph until the episode ends (solved or horizon), or
    until ``until``, asked after every pass, says to stop.

    Where actions are drawn, ``deterministic`` takes the most likely ones and ``False`` samples
    them, seeded by ``seed`` so a run repeats exactly; ``None`` (the default) is the env's
    ``inference_deterministic`` (:mod:`graphtransfer.envs.protocol`): the most likely moves for
    path, samples for the other tasks. Node-wise policies learn to break ties between look-alike
    neighbours by chance; taking each node's most likely action can leave such pairs rolling back
    until the pass limit (see the README's decoding table). The ``local-max`` decoding samples nothing:
    ``deterministic`` changes nothing there, and ``seed`` only seeds the env's random features;
    ``local-max-sampled`` draws its ranking from ``seed`` too.

    Args:
        decoding: node-wise envs with commit and defer actions (MIS): ``local-max`` (the default;
            see :func:`local_max_commits`) or ``drawn`` (every node acts as drawn, or patiently
            with a ``commit_fraction`` below 1, see :func:`patient_actions`). Node-choice envs
            with ``step_many``: ``local-max`` (the default: the top-scoring valid nodes that
            outscore every valid neighbour; for envs that declare ``covers`` (MVC), the
            neighbours of the lowest-scoring nodes that score below every neighbour, see
            :func:`leave_out_joins`) or ``drawn`` (the top-scoring valid nodes, Gumbel top-k when
            sampling). ``local-max-sampled``, for both: local-max on the
            policy's scores (MIS: the log-odds of including) plus Gumbel noise of scale
            :data:`graphtransfer.config.ORDER_NOISE`, a ranking drawn near the policy's, so that
            seeded rollouts differ. Other envs decode as drawn; naming ``local-max`` or
            ``local-max-sampled`` for them is a usage error.
        commit_fraction: the share of the nodes that one pass may commit, most confident first
            (at least one); ``None`` is the default of the head and decoding. Node- and edge-choice
            heads: the share of the valid units committed, or under local-max the candidates as
            a share of the graph's nodes (default :data:`DEFAULT_COMMIT_FRACTION`; covering envs:
            the candidates to stay out, default from :func:`leave_out_candidates`). Node-wise
            local-max: the candidates of a pass, as a share of the graph's nodes (default: a share
            of the graph's Caro-Wei bound instead, see :func:`local_max_candidates`). Drawn, on
            node-wise tasks that name a ``commit_action`` and a ``defer_action`` (MIS: include and defer): only the active
            nodes with the highest probability of the commit action may take it, everyone else
            defers (default 1.0: every node acts as drawn).
        patience: node-wise local-max without a ``commit_fraction`` (MIS): how many times more
            patient than the default to be, below 1 hastier (see :func:`local_max_patience`);
            ``--rollouts auto`` raises it where one rollout runs
            (:func:`graphtransfer.solve.rollouts.rollout_patience`).
        reductions: node-wise local-max decodings of envs that name ``exact_actions`` (MIS):
            apply them every pass beside the policy's commits (:func:`with_exact_actions`);
            ``False``: the policy alone decides.
        until: asked after every pass as ``until(undecided, degree)`` (:data:`~graphtransfer.nn.local_max.Until`:
            the env's :meth:`~graphtransfer.envs.base.GraphEnv.active_nodes` and
            ``residual_degree()``, or the device passes' own tensors); true ends the episode there,
            the set as the passes left it (:mod:`graphtransfer.solve.residual_kernels` ends a
            stretch of passes early this way when the kernel has much to decide).
        finish: the task's finishing rule (:data:`graphtransfer.tasks.mis.completion.FINISH`),
            called as ``finish(graph, solution, undecided)`` once the policy stops; what it
            added is reported apart, in :attr:`Solution.finished`.
    """
    started = time.perf_counter()
    policy.set_training_mode(False)
    generator = torch.Generator(device=policy.device).manual_seed(seed)
    features = features_of(env)
    deterministic = features.inference_deterministic if deterministic is None else deterministic
    decoding = check_decoding(env, features, decoding)
    on_device = decoding in LOCAL_MAX_DECODINGS and runs_on_device(env, policy)
    reads_real_rows = not on_device and features.head is Head.NODE_WISE and decoding in LOCAL_MAX_DECODINGS
    with unpadded(env, reads_real_rows):  # the passes read the real rows and columns only (GraphEnv.padded)
        obs = whole_graph(env) if on_device else env.reset(seed=seed)[0]
        given_fraction = commit_fraction
        commit_fraction = check_commit_fraction(env, features, commit_fraction, decoding)
        run_pass = STEPS[features.head]
        if decoding in LOCAL_MAX_DECODINGS:
            candidates = local_max_candidates(obs, features.head, given_fraction, patience)
            step = LOCAL_MAX_STEPS[features.head]
            if features.covers:  # MVC: decide who stays out of the cover (see leave_out_candidates)
                candidates, step = leave_out_candidates(obs, given_fraction, patience), _leave_out_step
            noise = ORDER_NOISE if decoding == LOCAL_MAX_SAMPLED else 0.0
            run_pass = functools.partial(step, candidates=candidates, order_noise=noise)
            if features.head is Head.NODE_WISE:
                run_pass = functools.partial(run_pass, exact=features.exact_actions if reductions else None)
        done, rewards = on_device, []
        with torch.random.fork_rng(devices=[policy.device] if policy.device.type == "cuda" else []), torch.inference_mode():
            # SB3's distributions sample from torch's global generator; the caller's state comes back after
            seed_sampling(seed, policy.device)
            if on_device:  # MIS on a GPU: the whole episode there (see graphtransfer.tasks.mis.device)
                rewards = device_passes(policy, env, seed, candidates, noise, generator, reductions, until)
            while not done:
                obs, reward, terminated, truncated, _ = run_pass(policy, env, features, obs, deterministic, generator, commit_fraction)
                done = terminated or truncated or (until is not None and _asked(until, env))
                rewards.append(reward)
    passes = len(rewards)
    finished = None
    task = features.answering
    if task is not None:
        graph = task.graph
        solution = task.solution()
        if finish is not None:
            if features.active_nodes is None:
                raise UsageError(f"{type(task).__name__} has no active_nodes(); a finishing rule completes the nodes it names as undecided")
            finished = finish(graph, solution, features.active_nodes())
            solution = finished.solution
        objective, feasible = task.objective(graph, solution), task.feasible(graph, solution)
    else:  # a user env without a solution of its own: report the episode's rewards
        solution, objective, feasible = np.column_stack([np.arange(len(rewards)), rewards]), float(np.sum(rewards)), True
    seconds = time.perf_counter() - started
    return Solution(solution, objective, feasible, passes, seconds, peak_rss_mib(), finished, seed, decoding)


@contextmanager
def unpadded(env: gym.Env, wanted: bool) -> Iterator[None]:
    """The env's observations without padding (:attr:`~graphtransfer.envs.base.GraphEnv.padded` off) inside the
    block, where ``wanted`` and the env is a :class:`~graphtransfer.envs.base.GraphEnv`; padded again after it."""
    task = env.unwrapped
    if not (wanted and isinstance(task, (GraphEnv, UserTask))):
        yield
        return
    task.padded = False
    try:
        yield
    finally:
        task.padded = True


def _asked(until: Until, env: gym.Env) -> bool:
    """``until`` of the env's residual graph now: its undecided nodes and their degrees."""
    task = cast(GraphEnv, env.unwrapped)
    return until(task.active_nodes(), task.residual_degree())


def seed_sampling(seed: int, device: torch.device) -> None:
    """Seed torch's global generator on ``device``, the one SB3's distributions draw from there:
    the CPU's, and on a GPU that GPU's too. ``torch.manual_seed`` seeds every GPU, and on a machine
    where CUDA is not initialised it records a stack trace for later each call (1 ms: a fifth of a
    rollout on small graphs, whose kernels each start a decoding)."""
    torch.random.default_generator.manual_seed(seed)
    if device.type == "cuda":
        with torch.cuda.device(device):
            torch.cuda.manual_seed(seed)


LOCAL_MAX, DRAWN, LOCAL_MAX_SAMPLED = DECODINGS
LOCAL_MAX_DECODINGS = (LOCAL_MAX, LOCAL_MAX_SAMPLED)


def check_decoding(env: gym.Env, features: EnvFeatures, decoding: str | None) -> str:
    """The decoding to run: ``decoding``, else ``local-max`` where it applies (node-wise envs with
    commit and defer actions, node-choice envs with ``step_many``) and ``drawn`` elsewhere;
    ``local-max`` where it cannot apply is a usage error."""
    applies = features.patient or (features.head is Head.NODE_CHOICE and features.step_many is not None)
    if decoding is None:
        return LOCAL_MAX if applies else DRAWN
    if decoding not in DECODINGS:
        raise UsageError(f"decoding {decoding!r} is not one of {', '.join(DECODINGS)}")
    if decoding in LOCAL_MAX_DECODINGS and not applies:
        raise UsageError(
            f"{type(env.unwrapped).__name__} names neither commit_action and defer_action (node-wise) nor step_many (node "
            f"choice), so the {decoding} decoding cannot apply to it; use --decoding drawn"
        )
    return decoding


def check_commit_fraction(env: gym.Env, features: EnvFeatures, commit_fraction: float | None, decoding: str = DRAWN) -> float:
    """The fraction to decode with: ``commit_fraction`` or the default of the head and decoding
    (node and edge choice :data:`DEFAULT_COMMIT_FRACTION`, otherwise 1; node-wise local-max takes
    its candidates from :func:`local_max_candidates` instead); a fraction below 1 for a node-wise
    env that names no commit and defer actions is a usage error."""
    if commit_fraction is None:
        return DEFAULT_COMMIT_FRACTION if features.head.chooses else 1.0
    if not 0 < commit_fraction <= 1:
        raise UsageError(f"commit fraction {commit_fraction} must be in (0, 1]")
    ignored = _why_no_fraction(features)
    if ignored:  # refused rather than silently ignored
        raise UsageError(
            f"{type(env.unwrapped).__name__} ({features.head} head) {ignored}; --commit-fraction has no effect on it, leave it out"
        )
    if features.head is Head.NODE_WISE and commit_fraction < 1 and not features.patient:
        raise UsageError(
            f"{type(env.unwrapped).__name__} names no commit_action and defer_action, so a node-wise commit fraction below 1 "
            "has no meaning for it; leave --commit-fraction at its default"
        )
    return commit_fraction


def _why_no_fraction(features: EnvFeatures) -> str | None:
    """Why a commit fraction cannot change how an env decodes, or None where it can."""
    if features.head is Head.GRAPH_LEVEL:
        return "takes one action for the whole graph per pass"
    if features.head is Head.EDGE_WISE:
        return "decides every edge in each pass"
    if features.head.chooses and features.step_many is None:
        return f"names no step_many, so it chooses one {'node' if features.head is Head.NODE_CHOICE else 'edge'} per pass"
    return None


def _node_wise_step(policy, env, features, obs, deterministic, generator, commit_fraction):
    active = _active_nodes(features, obs)
    actions = np.zeros(obs["x"].shape[0], dtype=np.int64)
    if active.size:
        compact = obs_to_tensors(active_subgraph(obs, active), policy.device)
        if features.patient:
            distribution = policy.get_distribution(compact)
            drawn = distribution.get_actions(deterministic=deterministic)[0]
            confidence = distribution.probs[0, :, features.commit_action]
            commit, defer = features.commit_action, features.defer_action
            if commit_fraction < 1:
                drawn = patient_actions(drawn, confidence, commit_fraction, commit, defer)
            chosen = settle_clashes(drawn, confidence, compact["edge_index"][0], commit, defer)
        else:
            chosen = policy._predict(compact, deterministic=deterministic)[0]
        actions[active] = chosen.cpu().numpy()
    return env.step(actions)


def local_max_candidates(obs: dict[str, np.ndarray], head: Head, commit_fraction: float | None, patience: float = 1.0) -> int:
    """How many of the surest undecided nodes are candidates in every pass of the local-max
    decoding, from the episode's first observation (the whole graph).

    Given a ``commit_fraction``, that share of the graph's nodes; node choice without one,
    :data:`DEFAULT_COMMIT_FRACTION` of them. Node-wise (MIS) without one, the patience follows
    the graph: :func:`local_max_patience` (of ``patience``) × the graph's Caro-Wei bound, the sum over its nodes of
    ``1 / (degree + 1)``, which a greedy pass in random order is expected to find at least (each
    node that comes before all its neighbours joins). On graphs of average degree 8 the
    candidates are about 2% of the nodes, on graphs of average degree 128 about 0.04%, so the few
    nodes of a dense graph's set are decided over dozens of passes, each seeing the last one's
    choices, instead of in two or three. The count is fixed for the episode, so the passes do not
    grow with the graph's size (see :func:`local_max_commits`).
    """
    num_nodes = int(obs["num_nodes"][0])
    if commit_fraction is not None or head is not Head.NODE_WISE:
        return max(1, math.ceil((commit_fraction or DEFAULT_COMMIT_FRACTION) * num_nodes))
    return max(1, math.ceil(local_max_patience(obs, patience) * caro_wei_bound(obs)))


def local_max_patience(obs: dict[str, np.ndarray], patience: float = 1.0) -> float:
    """The share of the Caro-Wei bound that the MIS local-max decoding takes as candidates per
    pass: :data:`LOCAL_MAX_PATIENCE` on graphs of average degree up to
    :data:`LOCAL_MAX_SPARSE_DEGREE`, shrinking in proportion to the degree above it, and never below
    :data:`LOCAL_MAX_DENSE_PATIENCE`. Dense graphs' sets are the ones that patience helps (a third
    of the share added 1.5-1.6% on Erdős–Rényi graphs of 10^4 nodes and average degree 64-200, in
    three times the passes); sparse graphs keep their candidates and passes (``bench/default_quality.py``).
    A ``patience`` above 1 divides that share (one below 1, the haste of the largest graphs, multiplies it), down to a floor that
    follows the degree: :data:`LOCAL_MAX_DENSE_PATIENCE` from :data:`LOCAL_MAX_SPARSE_DEGREE` on,
    falling with the square of the degree below it (a sparse graph's set is a smaller multiple of
    its Caro-Wei bound, so the same share decides it in fewer passes: at 0.02, 115 passes at
    average degree 8 against 211 at 64). At ``patience`` 1 or 3 the floor never binds below
    degree 16, so those shares are what they were before the floor followed the degree."""
    degree = observed_degree(obs)
    share = LOCAL_MAX_PATIENCE * min(1.0, LOCAL_MAX_SPARSE_DEGREE / max(degree, 1e-9))
    return max(patience_floor(degree), share / patience)


def observed_degree(obs: dict[str, np.ndarray]) -> float:
    """The observation's directed edges (both directions are stored) per node."""
    return int(obs["num_edges"][0]) / max(int(obs["num_nodes"][0]), 1)


def patience_floor(degree: float, dense_share: float = LOCAL_MAX_DENSE_PATIENCE) -> float:
    """The least share of the Caro-Wei bound a patient local-max decoding takes as candidates per
    pass on a graph of average ``degree``: the task's share on dense graphs, ``dense_share``, from
    :data:`LOCAL_MAX_SPARSE_DEGREE` on, falling with the square of the degree below it."""
    return dense_share * min(1.0, degree / LOCAL_MAX_SPARSE_DEGREE) ** 2


def caro_wei_bound(obs: dict[str, np.ndarray]) -> float:
    """The sum over the observation's nodes of ``1 / (degree + 1)``, degrees counted on its edges:
    a lower bound on the largest independent set (Caro 1979, Wei 1981). Counted by destination (both
    directions are stored), the order the env's residual edges come in."""
    num_nodes, num_edges = int(obs["num_nodes"][0]), int(obs["num_edges"][0])
    degree = np.bincount(obs["edge_index"][1, :num_edges], minlength=num_nodes)
    return float(np.sum(1.0 / (degree + 1.0)))


def _local_max_step(policy, env, features, obs, deterministic, generator, commit_fraction, candidates, order_noise=0.0, exact=None):
    """One local-max pass of a node-wise env: the policy's commits (:func:`local_max_commits`),
    and given the env's ``exact`` actions (MIS: :meth:`graphtransfer.tasks.mis.env.MISEnv.exact_actions`),
    the nodes they decide besides (:func:`with_exact_actions`)."""
    active = _active_nodes(features, obs)
    actions = np.full(obs["x"].shape[0], features.defer_action, dtype=np.int64)
    if active.size:
        residual = active_subgraph(obs, active)
        compact = obs_to_tensors(residual, policy.device)
        confidence = policy.get_distribution(compact).probs[0, :, features.commit_action]
        if order_noise:
            confidence = with_gumbel_noise(torch.logit(confidence, eps=LOGIT_EPS), order_noise, generator)
        commits = local_max_commits(confidence, compact["edge_index"][0], candidates).cpu().numpy()
        chosen = np.where(commits, features.commit_action, features.defer_action)
        if exact is not None:
            edges = residual["edge_index"][:, : int(residual["num_edges"][0])]
            decided = np.asarray(exact(edges, active.size))
            chosen = with_exact_actions(chosen, decided, edges, features.commit_action, features.defer_action)
        actions[active] = chosen
        del compact, residual
    release(obs)
    return env.step(actions)


def with_exact_actions(chosen: np.ndarray, exact: np.ndarray, edge_index: np.ndarray, commit: int, defer: int) -> np.ndarray:
    """A pass's actions ``chosen`` by the policy, overruled where the env's ``exact_actions``
    decide a node (anything but ``defer``); a policy commit next to an exact commit defers, so
    that the two never clash. In MIS the exact rules take isolated and pendant nodes and leave
    out dominated ones (:func:`graphtransfer.tasks.mis.env.reduction_actions`): the residual graph the
    policy ranks next holds no node that some largest set decides anyway.

    Shapes:
        chosen, exact: ``(N,)`` over the active nodes; edge_index: ``(2, E)`` their edges (both
        directions); returns ``(N,)``.
    """
    decided = exact != defer
    beside = np.zeros(chosen.size, dtype=bool)
    # both directions are stored, so a node beside a commit is the source of an edge into one; read by destination, the
    # order the env's residual edges come in, the lookup runs along the flags (ER, 10^7 nodes: 0.09 s, against 1.0 s
    # looking up each edge's source)
    beside[edge_index[0][(exact == commit)[edge_index[1]]]] = True
    return np.where(decided, exact, np.where(beside, defer, chosen))


def release(obs: dict[str, np.ndarray]) -> None:
    """Empty the observation a pass has decided on, so that its arrays (a copy of the residual
    graph's edges, padded to the whole graph's) are freed before the env builds the next one:
    :func:`solve` replaces it with the step's, and at 10^7 nodes each copy is 1.3 GB."""
    obs.clear()


def patient_actions(drawn: torch.Tensor, confidence: torch.Tensor, fraction: float, commit: int, defer: int) -> torch.Tensor:
    """Node-wise actions where only the ``fraction`` of nodes most likely to ``commit`` may do so.

    Those nodes keep a drawn ``commit``; every other node, and every other drawn action, becomes
    ``defer``, so nothing is decided by anything but a commit (in MIS a node leaves only when a
    neighbour joins). Deciding the surest nodes first and letting the rest see the result is what
    makes sequential greedy strong; the policy's own probabilities pick who goes first. If no
    allowed node drew ``commit``, the pass keeps every drawn action, so decoding never stalls.
    """
    count = max(1, math.ceil(fraction * drawn.numel()))
    allowed = torch.zeros_like(drawn, dtype=torch.bool)
    allowed[torch.topk(confidence, min(count, drawn.numel())).indices] = True
    commits = allowed & (drawn == commit)
    if not commits.any():
        return drawn
    return torch.where(commits, drawn, torch.full_like(drawn, defer))


def settle_clashes(drawn: torch.Tensor, confidence: torch.Tensor, edge_index: torch.Tensor, commit: int, defer: int) -> torch.Tensor:
    """Node-wise actions that decide at least one node: ``drawn`` itself whenever it does.

    A pass decides nothing when every ``commit`` clashes with a neighbour's (in MIS both are
    rolled back) and every other node defers: look-alike neighbours under deterministic decoding
    can keep doing that until the pass limit. Only then, where neighbours both drew ``commit``,
    the one the policy is surer of keeps it and the other defers (ties: the lower node id), and
    if nobody drew ``commit`` at all the surest node does. Passes that make progress are left as
    drawn: settling every clash at once decides nodes too early (measured with the demo model on
    10,000-node graphs: 0.92-0.94 of greedy instead of 0.97-0.98).

    Shapes:
        drawn, confidence: ``(N,)``; edge_index: ``(2, E)`` directed edges (both directions).
    """
    src, dst = edge_index
    commits = drawn == commit
    clash = commits[src] & commits[dst]
    clashing = torch.zeros_like(commits)
    clashing[src[clash]] = True
    if bool((commits & ~clashing).any()) or bool(((drawn != commit) & (drawn != defer)).any()):
        return drawn  # some node joins or leaves: the pass makes progress as drawn
    settled = drawn.clone()
    if bool(clash.any()):
        src, dst = src[clash], dst[clash]
        loses = (confidence[src] < confidence[dst]) | ((confidence[src] == confidence[dst]) & (src > dst))
        settled[src[loses]] = defer
    else:
        settled[torch.argmax(confidence)] = commit
    return settled


def _edge_wise_step(policy, env, features, obs, deterministic, generator, commit_fraction):
    """Every observed edge acts; the active subgraph keeps the observation's edges in order."""
    num_edges = int(obs["num_edges"][0])
    actions = np.zeros(obs["edge_index"].shape[1], dtype=np.int64)
    if num_edges:
        compact = obs_to_tensors(active_subgraph(obs, _active_nodes(features, obs)), policy.device)
        actions[:num_edges] = policy._predict(compact, deterministic=deterministic)[0, :num_edges].cpu().numpy()
    return env.step(actions)


def _choice_step(policy, env, features, obs, deterministic, generator, commit_fraction):
    """Node or edge choice: the top-scoring valid units of the pass (Gumbel top-k when sampling)."""
    active = _active_nodes(features, obs)
    units = np.arange(int(obs["num_edges"][0])) if features.head is Head.EDGE_CHOICE else active
    valid = np.ones(units.size, dtype=bool)
    if features.action_masks is not None:
        valid = np.asarray(features.action_masks(), dtype=bool)[units]
    candidates = units[valid]
    scores, _ = policy.node_scores(obs_to_tensors(active_subgraph(obs, active), policy.device), with_values=False)
    scores = scores[0][torch.from_numpy(np.flatnonzero(valid)).to(policy.device)]
    if not deterministic:  # Gumbel top-k: k draws without replacement from softmax(scores)
        scores = with_gumbel_noise(scores, 1.0, generator)
    step_many = features.step_many
    count = max(1, math.ceil(commit_fraction * candidates.size)) if step_many else 1
    chosen = candidates[torch.topk(scores, min(count, candidates.size)).indices.cpu().numpy()]
    return step_many(chosen) if step_many else env.step(int(chosen[0]))


CHOICE_HOPS = 2
"""a node choice's local-max pass commits the candidates that outscore every valid node within this many hops (along valid
nodes): a pick changes its neighbours' state (covered, dominated), which their own neighbours' scores read"""


def _local_max_choice_step(policy, env, features, obs, deterministic, generator, commit_fraction, candidates, order_noise=0.0):
    """Node choice with ``step_many``: of the ``candidates`` top-scoring valid nodes (see
    :func:`local_max_candidates`), those that outscore every valid node within :data:`CHOICE_HOPS`
    hops, along the env's ``open_nodes`` (else the valid ones), are committed together (see
    :func:`local_max_commits`): picks that far apart change disjoint neighbourhoods, as picks one
    at a time would have chosen them; a settled node no longer links its neighbours."""
    active = _active_nodes(features, obs)
    compact = obs_to_tensors(active_subgraph(obs, active), policy.device)
    scores, _ = policy.node_scores(compact, with_values=False)
    valid = np.ones(active.size, dtype=bool)
    if features.action_masks is not None:
        valid = np.asarray(features.action_masks(), dtype=bool)[active]
    valid_t = torch.from_numpy(valid).to(scores.device)
    scores = scores[0] if not order_noise else with_gumbel_noise(scores[0], order_noise, generator)
    scores = scores.masked_fill(~valid_t, float("-inf"))
    count = min(candidates, int(valid.sum()))
    through = valid_t if features.open_nodes is None else torch.from_numpy(np.asarray(features.open_nodes(), dtype=bool)[active])
    commits = local_max_commits(scores, compact["edge_index"][0], count, hops=CHOICE_HOPS, through=through.to(scores.device)) & valid_t
    return features.step_many(active[commits.cpu().numpy()])


def leave_out_candidates(obs: dict[str, np.ndarray], commit_fraction: float | None, patience: float = 1.0) -> int:
    """How many of the lowest-scoring active nodes are candidates to stay out of the cover in every
    pass of a covering env's local-max decoding (see :func:`_leave_out_step`), from the episode's
    first observation: ``commit_fraction`` of the graph's nodes if given, else
    :data:`LEAVE_OUT_PATIENCE` × the graph's Caro-Wei bound (:func:`caro_wei_bound`), divided by
    ``patience`` down to :func:`patience_floor` of :data:`LEAVE_OUT_PATIENCE`: from average degree
    16 on the default's share whatever the patience (an MVC pass costs twice an MIS pass, and on
    Erdős–Rényi graphs of degree 64 patience took 3x the seconds for a 0.05% smaller cover), 0.0375
    at degree 8, 0.02 at degree 4 (``bench/default_quality.py``).

    The nodes left out of a cover form an independent set, a few percent of a dense graph's nodes;
    sized by that set's expected size rather than by the cover's, the passes stay a few dozen at any
    density, as MIS's do (:func:`local_max_candidates`).
    """
    if commit_fraction is not None:
        return max(1, math.ceil(commit_fraction * int(obs["num_nodes"][0])))
    share = max(patience_floor(observed_degree(obs), LEAVE_OUT_PATIENCE), LEAVE_OUT_PATIENCE / max(patience, 1.0))
    return max(1, math.ceil(share * caro_wei_bound(obs)))


def _leave_out_step(policy, env, features, obs, deterministic, generator, commit_fraction, candidates, order_noise=0.0):
    """One local-max pass of a covering env (MVC): see :func:`leave_out_joins`."""
    active = _active_nodes(features, obs)
    compact = obs_to_tensors(active_subgraph(obs, active), policy.device)
    scores = policy.node_scores(compact, with_values=False)[0][0]
    if order_noise:
        scores = with_gumbel_noise(scores, order_noise, generator)
    joins = leave_out_joins(scores, compact["edge_index"][0], candidates)
    del compact
    release(obs)
    return features.step_many(active[joins.cpu().numpy()])


def leave_out_joins(scores: torch.Tensor, edge_index: torch.Tensor, candidates: int) -> torch.Tensor:
    """The nodes that join the cover in one pass of a covering env's local-max decoding, decided
    from the complement: the nodes left out of a cover form an independent set, so of the
    ``candidates`` active nodes with the lowest ``scores`` (the policy's, higher: surer to join),
    each one that scores below every neighbour stays out (:func:`local_max_commits` on the negated
    scores, ties to the lower id), and all of its neighbours join.

    Every node that joins has a neighbour left out, so none is redundant (the cover is minimal),
    and the lowest-scoring node always stays out, so every pass covers something. Committing the
    local maxima instead adds one independent set per pass while a dense graph's cover holds
    nearly all its nodes, so the passes grew with the density; the left-out set is a few percent
    of a dense graph's nodes, and with candidates from :func:`leave_out_candidates` it takes a few
    dozen passes at any density, as MIS does.

    Shapes:
        scores: ``(N,)`` over the active nodes; edge_index: ``(2, E)`` their edges (both
        directions); returns ``(N,)`` bool.
    """
    left_out = local_max_commits(-scores, edge_index, candidates)
    joins = torch.zeros_like(left_out)
    joins[edge_index[1, left_out[edge_index[0]]]] = True
    return joins


def _graph_level_step(policy, env, features, obs, deterministic, generator, commit_fraction):
    action = policy._predict(obs_to_tensors(obs, policy.device), deterministic=deterministic)[0]
    return env.step(action.cpu().numpy())


STEPS = {
    Head.NODE_WISE: _node_wise_step,
    Head.NODE_CHOICE: _choice_step,
    Head.EDGE_WISE: _edge_wise_step,
    Head.EDGE_CHOICE: _choice_step,
    Head.GRAPH_LEVEL: _graph_level_step,
}
"""one decoding pass of each head"""
LOCAL_MAX_STEPS = {Head.NODE_WISE: _local_max_step, Head.NODE_CHOICE: _local_max_choice_step}
"""one local-max decoding pass of each head it applies to (see :func:`check_decoding`)"""


def _active_nodes(features: EnvFeatures, obs: dict[str, np.ndarray]) -> np.ndarray:
    if features.active_nodes is not None:
        return np.flatnonzero(features.active_nodes())
    return np.arange(int(obs["num_nodes"][0]))


def active_subgraph(obs: dict[str, np.ndarray], active: np.ndarray) -> dict[str, np.ndarray]:
    """The observation restricted to the ``active`` node ids, renumbered ``0..len(active)-1``.

    Exact for the active nodes because no observed edge joins them to inactive ones (the
    :meth:`GraphEnv.active_nodes` contract); later passes shrink as nodes get decided.
    """
    num_nodes, num_edges = int(obs["num_nodes"][0]), int(obs["num_edges"][0])
    edge_attr = {EDGE_ATTR: obs[EDGE_ATTR][:num_edges]} if EDGE_ATTR in obs else {}  # the edges keep their order
    if active.size == num_nodes:
        return {**obs, "x": obs["x"][:num_nodes], "edge_index": obs["edge_index"][:, :num_edges], **edge_attr}
    new_id = np.full(num_nodes, -1, dtype=np.int64)
    new_id[active] = np.arange(active.size)
    edge_index = new_id[obs["edge_index"][:, :num_edges]]
    return {
        "x": obs["x"][active],
        "edge_index": edge_index,
        "num_nodes": np.array([active.size], dtype=np.int64),
        "num_edges": np.array([num_edges], dtype=np.int64),
        **edge_attr,
    }


def peak_rss_mib() -> float:
    """Peak resident set size of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def act(policy, obs: dict[str, torch.Tensor] | Data | Batch, deterministic: bool = False) -> torch.Tensor:
    """Actions for observations that are already torch tensors on the policy's device.

    The tensor-native path: no numpy round trip, no gradients (``torch.inference_mode``).

    Args:
        policy: a policy built by graphtransfer (any head).
        obs: a padded batch in the observation contract (every key with a leading batch
            dimension), or a PyG ``Data`` (one graph) or ``Batch`` (several) with ``x`` and
            ``edge_index``.
        deterministic: the most likely action instead of a sample.

    Returns:
        Node-wise heads: ``(B, max_nodes)`` actions, or ``(num_nodes,)`` for a ``Data``; edge-wise
        heads likewise per edge.
        Node-choice and graph-level heads: ``(B, ...)`` actions, one per graph.
    """
    single = isinstance(obs, Data) and not isinstance(obs, Batch)
    padded = pyg_to_padded(obs) if isinstance(obs, Data) else obs
    wrong = sorted(k for k, v in padded.items() if v.device != policy.device)
    if wrong:
        raise ValueError(
            f"observation keys {wrong} are on {padded[wrong[0]].device}, the policy on {policy.device}; move them with .to(policy.device)"
        )
    policy.set_training_mode(False)
    with torch.inference_mode():
        actions = policy._predict(padded, deterministic=deterministic)
    return actions[0] if single and actions.dim() > 1 else actions
