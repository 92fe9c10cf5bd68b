"""The best of several seeded rollouts of a policy on one graph: patience where a rollout is cheap.

On graphs of up to some ten thousand nodes one rollout is cheap and one node is a visible share of
the objective, so ``--rollouts auto`` (the default) decodes them several times and keeps the best,
as many times as a work budget allows (:func:`rollout_count`); graphs of 15,001 nodes or more, and
dense ones from 2,000,001 directed edges on, get one rollout. Below a size the local-max
decodings (MIS's and MVC's) are patient too (:func:`rollout_patience`), which on sparse graphs
finds more than further rollouts do; their passes count against the rollouts' budget. Every
rollout is the policy's own decisions, seeded (``seed``, ``seed + 1``, ...): no search. A model
with experts (:attr:`graphtransfer.checkpoint.Checkpoint.experts`: further weight sets of its
network) decodes its rollouts in turns, each weight set as it would alone (:func:`best_of_rollouts`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace

import gymnasium as gym
import torch

from graphtransfer.checkpoint import load_strict, state_tensors
from graphtransfer.config import (
    AUTO_PATIENCE,
    AUTO_ROLLOUTS,
    HASTY_FROM_NODES,
    HASTY_PATIENCE,
    MAX_AUTO_ROLLOUTS,
    MAX_ROLLOUTS,
    PATIENT_BELOW_NODES,
    ROLLOUT_EDGE_BUDGET,
    ROLLOUT_NODE_BUDGET,
    ROLLOUT_PASS_BUDGET,
    SAMPLED_ROLLOUT_DEGREE,
    SEED_LIMIT,
    Decoding,
)
from graphtransfer.envs.protocol import features_of
from graphtransfer.envs.transforms import KernelRule
from graphtransfer.errors import UsageError
from graphtransfer.solve.inference import LOCAL_MAX, LOCAL_MAX_SAMPLED, Solution, check_decoding, observed_degree, solve
from graphtransfer.solve.residual_kernels import solve_in_kernels

DEFAULT_DECODING = Decoding()
"""every decoding setting at its default"""
ONE_ROLLOUT = Decoding(rollouts=1)
"""the default decoding, one rollout: what a training run's evaluations take"""


def rollout_count(rollouts: int | str, num_nodes: int, directed_edges: int) -> int:
    """How many rollouts ``rollouts`` (a count, or ``"auto"``) means on a graph of ``num_nodes``
    and ``directed_edges`` (both directions of every edge).

    ``auto`` is the work budget: as many rollouts as fit both ``ROLLOUT_NODE_BUDGET`` nodes and
    ``ROLLOUT_EDGE_BUDGET`` directed edges decoded in all, at least 1, at most
    ``MAX_AUTO_ROLLOUTS``; the passes are counted once the first rollout has run
    (:func:`rollouts_within_passes`). The nodes bound what a pass costs whatever the density, the edges the
    message passing of dense graphs: 64 rollouts up to 468 nodes, 30 at 1,000 nodes (20 at
    average degree 200), 3 at 10,000 (2 at degree 200), one from 15,001 nodes on. A budget in edges
    alone would give graphs of 10^5 nodes and degree 4 several rollouts too (``bench/default_quality.py``).
    A graph without edges (a kernel the exact rules left isolated nodes of) gets one: every rollout would give the same answer.
    """
    if rollouts == AUTO_ROLLOUTS:
        if directed_edges == 0:
            return 1
        fits = min(ROLLOUT_NODE_BUDGET // max(num_nodes, 1), ROLLOUT_EDGE_BUDGET // max(directed_edges, 1))
        return min(max(fits, 1), MAX_AUTO_ROLLOUTS)
    if isinstance(rollouts, bool) or not isinstance(rollouts, int) or not 1 <= rollouts <= MAX_ROLLOUTS:
        raise UsageError(f"rollouts {rollouts!r} must be {AUTO_ROLLOUTS!r} or a whole number from 1 (a single rollout) to {MAX_ROLLOUTS}")
    return rollouts


def rollouts_within_passes(count: int, first_passes: int) -> int:
    """Of ``count`` rollouts (:func:`rollout_count`'s ``auto``), how many fit
    ``ROLLOUT_PASS_BUDGET`` policy passes in all, each taking the first rollout's
    ``first_passes``: at least 1 (the first has run), at most ``count``.

    The node and edge budgets cannot see the passes, and a dense graph is decided over many
    (one candidate per pass on 1,000 nodes of average degree 64: 86 passes, against 14 at
    average degree 4), where each pass costs a few milliseconds whatever its size; so on small
    dense graphs the passes are the work: 17 rollouts at degree 64, 11 at Barabási–Albert degree
    143, sparse ones keep their 30 (``bench/default_quality.py``).
    """
    return max(1, min(count, ROLLOUT_PASS_BUDGET // max(first_passes, 1)))


def rollout_patience(rollouts: int | str, num_nodes: int) -> float:
    """How many times more patient than their defaults the local-max decodings are (MIS's,
    :func:`~graphtransfer.solve.inference.local_max_patience`; MVC's,
    :func:`~graphtransfer.solve.inference.leave_out_candidates`) when
    ``rollouts`` (a count, or ``"auto"``) decodes a graph of ``num_nodes``: under ``auto`` on
    fewer than :data:`PATIENT_BELOW_NODES` nodes :data:`AUTO_PATIENCE`; from
    :data:`HASTY_FROM_NODES` nodes on, whatever ``rollouts`` says, :data:`HASTY_PATIENCE` (below 1:
    MIS takes more candidates per pass); everywhere else 1, the default's (``--rollouts K``
    included: the default decoding, as many times as asked).

    Haste on the largest graphs: on Erdős–Rényi graphs of average degree 8 of 3 x 10^6 and 10^7 nodes
    (the built-in MIS model) about half the passes and three quarters of the
    seconds for a set a fifth of a percent smaller. At 10^6 the same haste took a
    Barabási–Albert graph (m = 3) below greedy's set, so it starts above the sizes of the quality
    tables.

    Patience before rollouts: 0.02 of the Caro-Wei bound as candidates per pass (the default's
    0.15 / 7.5 on sparse graphs; dense graphs keep their floor, see
    :func:`~graphtransfer.solve.inference.local_max_patience`) found larger sets than the default's
    three rollouts on every sparse family at 10^4 nodes (Erdős–Rényi degree 4-16, Barabási–Albert
    m = 4, random geometric degree 16, Delaunay: +0.15-2%; random geometric degree 8, decided mostly
    by the kernel, level) and than its one rollout at 10^5 (up to +0.6%), in about 3x the seconds at
    10^4 and 1.5x at 10^5; the pass budget
    (:func:`rollouts_within_passes`) then runs fewer rollouts on small graphs (``bench/default_quality.py``).
    Larger graphs keep the default: on make demo's 250,000-node graph a third of the share added little
    in nearly three times the passes, and the one rollout of a 10^6-node graph should stay fast.
    """
    if num_nodes >= HASTY_FROM_NODES:
        return HASTY_PATIENCE
    if rollouts != AUTO_ROLLOUTS or num_nodes >= PATIENT_BELOW_NODES:
        return 1.0
    return AUTO_PATIENCE


def rollout_plan(decoding: Decoding, count: int, default: str, degree: float = 0.0, weight_sets: int = 1) -> list[Decoding]:
    """The decoding of each of ``count`` rollouts: seeds ``seed, seed + 1, ...``, one rollout each.
    With ``weight_sets`` taking turns (a model's own weights and its experts: rollout ``i`` decoded
    by weight set ``i % weight_sets``, :func:`best_of_rollouts`), each weight set's rollouts follow
    this plan on their own: rollout ``i`` is the plan's rollout ``i // weight_sets``, so a weight set
    decodes exactly as it would alone.

    Where no ``method`` is given, the env's ``default`` decoding is local-max and the graph's
    average ``degree`` is at most :data:`~graphtransfer.config.SAMPLED_ROLLOUT_DEGREE`, every other
    rollout is ``local-max-sampled`` instead, with the same ``commit_fraction`` (both decodings
    take their candidates from it): local-max samples nothing, so its rollouts differ only by the
    env's random features, and a ranking drawn near the policy's finds sets that no local-max
    rollout finds (rgg-n100-d8.0-s0: 28 nodes, the optimum, against 27 for every local-max
    rollout). On denser graphs the sampled ranking's noise outweighs the policy's, so every
    rollout there is local-max. Rollout 0 is always the default decoding itself, so one rollout is the decoding of
    before, and more can only find a better one. A ``method`` given is kept by every rollout.
    """
    mixes = decoding.method is None and default == LOCAL_MAX and degree <= SAMPLED_ROLLOUT_DEGREE
    plan = []
    for turn in (i // weight_sets for i in range(count)):
        method = LOCAL_MAX_SAMPLED if mixes and turn % 2 else decoding.method
        plan.append(replace(decoding, seed=(decoding.seed + turn) % SEED_LIMIT, method=method, rollouts=1))
    return plan


def solve_one(policy, env: gym.Env, one: Decoding, finish=None, patience: float = 1.0, kernel: KernelRule | None = None) -> Solution:
    """One rollout: :func:`graphtransfer.solve.inference.solve` with ``one``'s settings and
    ``patience``; given the task's ``kernel`` rule (MIS, MVC), with reductions and
    ``one.kernel_every``, the residual graph shrunk to its kernel between passes
    (:func:`~graphtransfer.solve.residual_kernels.solve_in_kernels`)."""
    if kernel is not None and one.reductions and one.kernel_every:
        return solve_in_kernels(policy, env, one, kernel, finish, patience)
    return solve(policy, env, one.deterministic, one.seed, one.commit_fraction, finish, one.method, patience, one.reductions)


def best_of_rollouts(
    policy,
    env: gym.Env,
    count: int = 1,
    decoding: Decoding = DEFAULT_DECODING,
    finish=None,
    patience: float = 1.0,
    kernel: KernelRule | None = None,
    experts: Sequence[dict[str, torch.Tensor]] = (),
) -> Solution:
    """The best of ``count`` runs of :func:`graphtransfer.solve.inference.solve` on the env's
    graph (see :func:`rollout_plan`): feasible before infeasible, then by objective, ties going
    to the earliest rollout. Its ``seconds`` are those of every rollout together, its ``seed`` and
    ``decoding`` those of the rollout that gave it, its ``rollouts`` how many ran: ``count``, or
    under ``decoding.rollouts`` ``auto`` as many of them as fit the pass budget once the first
    has run (:func:`rollouts_within_passes`). Every rollout decodes with ``patience``
    (:func:`rollout_patience`: above 1 only under ``auto`` below a size; a given
    ``commit_fraction`` overrides it).

    Where ``decoding.deterministic`` is not given and the env takes the most likely actions by
    default (``inference_deterministic``, path), rollout 0 takes them and the others sample: the
    most likely actions would repeat the same solution, so one rollout is the default decoding
    itself and more can only find a better one.

    Args:
        count: how many, at least 1 (:func:`rollout_count` turns ``decoding.rollouts`` into a count
            for a graph).
        finish: the task's finishing rule, as for ``solve``.
        patience: as for ``solve`` (:func:`rollout_patience` gives it for a graph).
        kernel: the task's kernel rule, for the kernels between passes (see :func:`solve_one`).
        experts: further weight sets of the policy's network (a model's
            :attr:`~graphtransfer.checkpoint.Checkpoint.experts`): the rollouts take turns, rollout
            ``i`` decoded by the policy's own weights where ``i % (1 + len(experts))`` is 0, else by
            that expert's, each weight set's rollouts seeded and decoded as it would be alone
            (:func:`rollout_plan`), within the same ``count``; one rollout is the policy's own.
            The policy holds its own weights again afterwards.
    """
    features = features_of(env)
    turns = 1 + len(experts)
    default = check_decoding(env, features, decoding.method)
    if decoding.deterministic is not None and default in (LOCAL_MAX, LOCAL_MAX_SAMPLED):  # refused, never ignored
        flag = "--deterministic" if decoding.deterministic else "--no-deterministic"
        why = f"{flag} chooses how drawn actions are taken; the {default} decoding draws none"
        raise UsageError(f"{why}, leave it out (or add --decoding drawn)")
    plan = rollout_plan(decoding, count, default, average_degree(env) if count > 1 else 0.0, turns)
    if decoding.deterministic is None and features.inference_deterministic:
        # the most likely moves repeat themselves exactly: each weight set's first rollout takes them, the others sample (seeded)
        plan = [replace(one, deterministic=index < turns) for index, one in enumerate(plan)]
    runs = [solve_one(policy, env, plan[0], finish, patience, kernel)]
    if decoding.rollouts == AUTO_ROLLOUTS:
        plan = plan[: rollouts_within_passes(count, runs[0].passes)]
    with taking_turns(policy, experts) as use_weights:
        for index, one in enumerate(plan[1:], 1):
            use_weights(index)
            runs.append(replace(solve_one(policy, env, one, finish, patience, kernel), expert=index % turns))
    sign = 1 if features.sense == "max" else -1
    best = max(runs, key=lambda run: (run.feasible, sign * run.objective))
    seconds = sum(run.seconds for run in runs)
    return replace(best, rollouts=len(runs), seconds=seconds, peak_rss_mib=runs[-1].peak_rss_mib, weight_sets=min(turns, len(runs)))


@contextmanager
def taking_turns(policy: torch.nn.Module, experts: Sequence[dict[str, torch.Tensor]]) -> Iterator[Callable[[int], None]]:
    """``use_weights(index)``: puts weight set ``index % (1 + len(experts))`` into ``policy`` (0:
    its own weights, kept aside here; else that expert's); the policy's own weights are put back
    on the way out, however it is left."""
    own = {name: tensor.detach().clone() for name, tensor in state_tensors(policy).items()} if experts else {}
    weight_sets = [own, *experts]
    held = 0

    def use_weights(index: int) -> None:
        nonlocal held
        turn = index % len(weight_sets)
        if turn != held:
            load_strict(policy, weight_sets[turn])
            held = turn

    try:
        yield use_weights
    finally:
        if held:
            load_strict(policy, own)


def average_degree(env: gym.Env) -> float:
    """The average degree of the env's graph (directed edges per node), from its first observation."""
    obs, _ = env.reset()
    return observed_degree(obs)
