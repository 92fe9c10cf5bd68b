"""The env interface, declared once: what every graph env must provide and what it may.

A user's env needs only gymnasium's ``reset``/``step`` and spaces that follow the observation
contract (:mod:`graphtransfer.envs.contract`). Every other member is optional, and each one
switches something on; :class:`EnvFeatures` reads them once, in one place, so no other module
probes an env with ``hasattr``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, Protocol, cast, runtime_checkable

import gymnasium as gym
import numpy as np

from graphtransfer.config.schema import HeadName
from graphtransfer.envs.contract import check_contract, infer_head
from graphtransfer.errors import UsageError


class Head(str, Enum):
    """Which policy head acts; the value is what config.json stores."""

    _value_: HeadName

    NODE_WISE = "node-wise"
    """``MultiDiscrete([k] * max_nodes)``: every node acts at once"""
    NODE_CHOICE = "node-choice"
    """``Discrete(max_nodes)``: one node per step, invalid ones masked (MaskablePPO)"""
    EDGE_WISE = "edge-wise"
    """``MultiDiscrete([k] * max_edges)``: every edge acts at once"""
    EDGE_CHOICE = "edge-choice"
    """``Discrete(max_edges)``: one edge per step, invalid ones masked (MaskablePPO)"""
    GRAPH_LEVEL = "graph-level"
    """any other action space: one action for the whole graph, from the pooled embedding"""

    def __str__(self) -> str:
        return self.value

    @property
    def chooses(self) -> bool:
        """Whether the head picks one node or edge per step from a masked categorical (MaskablePPO)."""
        return self in (Head.NODE_CHOICE, Head.EDGE_CHOICE)


@runtime_checkable
class GraphEnvProtocol(Protocol):
    """What graphtransfer requires of an env: gymnasium's interface with contract spaces, built
    as ``factory(graphs=[Graph, ...], **env_kwargs)``.

    Optional members (none is required; each enables what its line says):

    - ``head: Head | str`` -- the policy head; otherwise inferred from the spaces.
    - ``sense: "max" | "min"`` -- whether eval's objective is maximised (default) or minimised.
    - ``solution() -> np.ndarray`` with static ``objective(graph, solution) -> float`` and
      ``feasible(graph, solution) -> bool`` (static, or a method where feasibility depends on
      the env's settings, as path's query does) -- predict writes the solution and eval reports
      the objective; without them, the episode's rewards are the solution.
    - ``solution_header: str`` -- the solution CSV's header (default ``node,decision``, or
      ``step,reward`` without ``solution``).
    - ``graph: Graph`` -- the graph of the current episode.
    - ``graphs: list[Graph]`` -- the graphs episodes sample from (sizes the rollout-buffer probe).
    - ``active_nodes() -> (num_nodes,) bool`` -- nodes that can still act; inference runs the
      policy on them alone (they must have no observed edge to inactive nodes).
    - ``action_masks() -> (max_nodes,) bool`` -- valid node choices; required by the node-choice
      head (``(max_edges,)``, valid edge choices, for the edge-choice head). A mask that allows
      only the neighbours of a current node makes a node choice a move along an edge (the
      ``path`` task).
    - ``step_many(nodes) -> step result`` -- node choice: commit several nodes in one pass (the
      local-max decoding commits the surest valid nodes at least three hops apart).
    - ``open_nodes() -> (num_nodes,) bool`` -- node choice with ``step_many``: the nodes a pick
      can still change (not yet dominated, covered, reached); two picks of one pass interact only
      through such a node, so picks around settled nodes go together (without it: the valid ones).
    - ``commit_action: int`` and ``defer_action: int`` -- node-wise: patient decoding
      (``--commit-fraction`` below 1) lets only the surest nodes commit, the rest defer.
    - ``exact_actions(edge_index, num_nodes) -> (num_nodes,) int`` -- node-wise with commit
      and defer actions: the action of each node of the residual graph (the active nodes'
      observed edges, renumbered ``0..num_nodes-1``) that some optimal solution agrees with,
      ``defer_action`` where none is known; the local-max decoding applies them in every pass
      beside the policy's commits (MIS: isolated and pendant nodes join, dominated ones leave).
    - ``covers: bool`` -- node choice with ``step_many``: the task is a vertex cover (every
      observed edge needs a chosen endpoint; the valid nodes are the active ones), so the
      local-max decoding decides which nodes stay out and chooses their neighbours.
    - ``inference_horizon: int`` -- the episode length at inference (default: training's).
    - ``inference_deterministic: bool`` -- where actions are drawn, inference takes the most
      likely ones unless sampling is asked for (``--no-deterministic``); default False: sampled.
    - ``horizon: int`` -- a settable episode length; set to the inference horizon when an env is
      built for inference.
    - ``rules: Rules`` -- the problem's rules (:class:`Rules`; the MIS task's own as
      ``graphtransfer.tasks.independent_set``): exact rules in every local-max pass, the kernel
      before and between passes, a finishing rule, the searches of ``--polish``, baselines.

    Declaring ``active_nodes`` gives the policy the graph the active nodes span: observed edges
    that touch an inactive node are dropped, in training and at inference
    (:class:`graphtransfer.envs.user_task.UserTask`), so an env may observe its static graph.
    """

    observation_space: gym.spaces.Dict
    action_space: gym.spaces.Space

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict[str, np.ndarray], dict]: ...

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict]: ...


WAIT, JOIN, LEAVE = 2, 1, -1
"""what :attr:`Rules.exact_actions` says of a node: undecided by the rules, in some optimal
solution, or out of one (a node left out is dropped from the residual view; the env waits there)"""


@dataclass(frozen=True)
class Rules:
    """What is true of a problem whatever the env's actions, declared on an env as ``rules``.

    Every member is optional; each switches on what its line says.

    Attributes:
        exact_actions: ``exact_actions(edge_index, num_nodes, active, memo) -> (num_nodes,) int``
            on a residual graph (``active``, ``(N,)`` bool over the episode's graph: its nodes,
            renumbered in order): :data:`JOIN`, :data:`LEAVE` or :data:`WAIT` per node, what some
            optimal solution does; applied beside the policy in every local-max pass (needs
            ``commit_action``, ``defer_action`` and ``active_nodes``). ``memo`` is a dict kept for
            the episode's graph across passes and episodes (emptied when the graph changes), where
            the rule may keep what it learned of the graph.
        kernel, finish, improve, search, rival, baselines, renumberable: as the env class's own
            members of those names (:class:`TaskMembers`), which win where both are declared:
            the kernel before and between passes (``solution()`` a ``(num_nodes,)`` bool set), the
            finishing rule (needs ``active_nodes``), eval's and predict's ``--polish``, a rival
            solve, eval's baselines, renumbering of large graphs.
    """

    exact_actions: Callable[[np.ndarray, int, np.ndarray, dict], np.ndarray] | None = None
    kernel: Callable[..., Any] | None = None
    finish: Callable[[Any, np.ndarray, np.ndarray], Any] | None = None
    improve: Callable[[Any, np.ndarray], np.ndarray] | None = None
    search: Callable[..., Any] | None = None
    rival: Callable[[Any], Any] | None = None
    baselines: dict[str, Callable[[Any], np.ndarray]] | None = None
    renumberable: bool = False


@dataclass(frozen=True)
class PartRules:
    """What a node-wise task's local-max decoding reads of the task on one part of a graph, declared
    on an env class as ``partitioned_solve`` (``predict --partitions``,
    :mod:`graphtransfer.solve.partitioned_mis`). A part holds its own nodes ``0..n-1``, its halo
    ``n..n+h-1`` (the other parts' neighbours of its nodes) and the edges into its own nodes, local
    ids, ordered by destination (:class:`graphtransfer.graphs.partition.Part`); each rule reads no
    more than that, so every part applies it to its own nodes alone.

    Attributes:
        undecided, joined, left: a node's status codes (int8): not decided yet, in the solution, out of it.
        commit: the policy output whose probability ranks the undecided nodes (the env's ``commit_action``).
        features: ``features(edge_index, degree, status, draw) -> (n, F) float32``, the observation's
            node features of the part's own nodes, from the residual edges into them (both ends
            undecided), every local node's residual degree over the whole graph ``(n + h,)``, and its
            own nodes' status and uniform draws ``(n,)``.
        settle: ``settle(edge_index, status, joined) -> (n,)``, the own nodes' status ``(n,)`` after the
            nodes ``joined`` ``(n + h,)`` bool (no two adjacent) join: the step's rule (MIS: their
            undecided neighbours leave).
        check: ``check(edge_index, status, n) -> str | None``, what is wrong with the finished
            solution at the part's ``n`` own nodes (``status`` ``(n + h,)``, ``edge_index`` every
            edge into them), ``None`` where nothing is: every edge is some part's, so the parts'
            answers check the whole solution.
        exact_actions: ``exact_actions(edge_index, degree, ids, n) -> (n,)`` of :data:`JOIN`,
            :data:`LEAVE`, :data:`WAIT`: what some optimal solution does with each own undecided
            node, read from its neighbourhood alone (the residual edges, ``degree`` as for
            ``features``, ``ids`` ``(n + h,)`` the nodes' global ids for ties); applied beside the
            policy's commits every pass, as a single process applies ``Rules.exact_actions``.
    """

    undecided: int
    joined: int
    left: int
    commit: int
    features: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    settle: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    check: Callable[[np.ndarray, np.ndarray, int], str | None]
    exact_actions: Callable[[np.ndarray, np.ndarray, np.ndarray, int], np.ndarray] | None = None


class AnsweringEnv(Protocol):
    """An env with an answer of its own: :class:`GraphEnvProtocol`'s ``solution`` with the
    ``objective`` and ``feasible`` that judge it on the episode's ``graph``."""

    graph: Any

    def solution(self) -> np.ndarray: ...

    def objective(self, graph: Any, solution: np.ndarray, /) -> float: ...

    def feasible(self, graph: Any, solution: np.ndarray, /) -> bool: ...


class SettableHorizon(Protocol):
    """An env with :class:`GraphEnvProtocol`'s optional ``horizon``, the episode length."""

    horizon: int


class TaskMembers(Protocol):
    """What an env's class may declare about its task, read once into a
    :class:`graphtransfer.tasks.Task` (built-in or the user's alike): class attributes, functions as
    ``staticmethod(fn)``. None is required; each enables what its line says, for any env that
    declares it, and an option that needs a missing member is refused in one line.

    - ``kernel(graph, lp=True) -> MISKernel | None`` -- exact rules that shrink the graph before
      and between passes (:class:`graphtransfer.envs.transforms.KernelRule`); the decoding's
      ``reductions`` and ``--kernel-every`` apply it.
    - ``renumberable: bool`` -- the task reads the edges alone, so inference may renumber the nodes.
    - ``reads_weights: tuple[str, ...]`` -- which of the graph's weights the task reads ("edge", "node").
    - ``finish(graph, solution, undecided) -> FinishedSet`` -- completes what the policy left
      undecided and makes the solution maximal, after every decoding.
    - ``improve(graph, solution) -> solution`` -- eval's ``--polish``: a search applied alike to the
      policy's solution and the baselines'.
    - ``search(graph, solution, seconds, seed, kernel) -> (solution, iterations)`` -- predict's
      ``--polish``: a search from the policy's solution on the kernel the policy solved (``kernel``
      the graph's kernel, ``None`` where the rules decided nothing, or ``"make"``).
    - ``teacher(graph, iterations, seed) -> (num_nodes,) bool`` -- the sets a search finds, for
      learning from a search (:mod:`graphtransfer.training.imitation`; node-wise with ``commit_action``).
    - ``rival(graph) -> NearBipartiteSet | None`` -- a set found without the policy that competes
      with the policy's own on graphs with a kernel (the near-bipartite solve).
    - ``baselines: dict[str, fn]`` and ``exact: dict[str, fn]`` -- eval's fast baselines
      (``fn(graph) -> solution``) and the exact solvers of small graphs (``-> ExactSolution``).
    - ``optional_baselines: dict[str, fn]`` -- baselines that need an optional package, run when
      asked (``eval --chils``): ``fn()`` checks the package and returns the baseline.
    - ``device_passes(policy, env, seed, candidates, noise, generator, reductions, until)`` -- a whole
      local-max episode on the policy's GPU; read from the class that declares it, never inherited
      (a subclass may change the features or rules the passes copy).
    - ``partitioned_solve: PartRules`` -- ``--partitions`` solves the task part by part on Ray
      with these statuses, features, step rule and exact rules (:class:`PartRules`); the kernel
      first, where the task declares one and one process holds the graph.
    - ``takes_query: bool`` -- the constructor takes ``query=(source, target)`` positions
      (``--source`` and ``--target``).
    - ``decision_labels: dict[int, str]``, ``decision_colours: tuple[str, ...]`` and
      ``action_names: tuple[str, ...]`` -- how a drawing labels and colours each node's decision,
      and how a graph-level episode's actions are named.
    - ``standing: str`` -- one line on how the policy stands against the task's anchor (its
      strongest baseline), printed by ``graphtransfer tasks``; where it cannot compete, say so.
    """


@dataclass(frozen=True)
class EnvFeatures:
    """The optional members of one env (see :class:`GraphEnvProtocol`), read once; ``None`` where absent."""

    head: Head
    sense: str
    answering: AnsweringEnv | None
    """the env itself where it has ``solution``, ``objective`` and ``feasible``; ``None`` where
    the episode's rewards are its answer"""
    solution_header: str
    active_nodes: Callable[[], np.ndarray] | None
    action_masks: Callable[[], np.ndarray] | None
    step_many: Callable[[np.ndarray], tuple] | None
    open_nodes: Callable[[], np.ndarray] | None
    commit_action: int | None
    defer_action: int | None
    exact_actions: Callable[[np.ndarray, int], np.ndarray] | None
    covers: bool | None
    inference_horizon: int | None
    rules: Rules | None
    num_graphs: int
    inference_deterministic: bool = False

    OPTIONAL: ClassVar[tuple[str, ...]] = (
        "active_nodes",
        "action_masks",
        "step_many",
        "open_nodes",
        "commit_action",
        "defer_action",
        "exact_actions",
        "covers",
        "inference_horizon",
        "rules",
    )

    @property
    def patient(self) -> bool:
        """Whether patient decoding applies: a node-wise env that names commit and defer actions."""
        return self.head is Head.NODE_WISE and self.commit_action is not None and self.defer_action is not None


def declaration_advice(features: EnvFeatures) -> str:
    """One line on what the env could declare to decode as the built-in tasks do, naming each
    member and what it enables; empty where it declares them."""
    advice = []
    if features.head is Head.NODE_WISE and not features.patient:
        advice.append("commit_action and defer_action with active_nodes() for the local-max decoding")
    if features.head is Head.NODE_CHOICE and features.step_many is None:
        advice.append("step_many(nodes) to commit several nodes a pass")
    if features.head in (Head.NODE_WISE, Head.NODE_CHOICE) and features.rules is None:
        advice.append("rules (graphtransfer.tasks.independent_set) for exact rules, the kernel, a finishing rule and --polish")
    return "declare " + "; ".join(advice) + " (docs: Make your env transfer well)" if advice else ""


def features_of(env: gym.Env) -> EnvFeatures:
    """The optional members of ``env`` (or of the env it wraps), the one place that looks for them;
    a member of the wrong kind is a :class:`UsageError` that names it."""
    task = env.unwrapped
    members = {name: getattr(task, name, None) for name in ("solution", *EnvFeatures.OPTIONAL)}
    _check_members(type(task).__name__, task, members)
    has_solution = members.pop("solution") is not None
    head = head_of(env)
    if members["covers"] and head is not Head.NODE_CHOICE:
        raise UsageError(f"{type(task).__name__}.covers is True but its head is {head}; covers applies to node choice, leave it out")
    return EnvFeatures(
        head=head,
        sense=getattr(task, "sense", "max"),
        answering=cast(AnsweringEnv, task) if has_solution else None,  # _check_members made sure all three are methods
        solution_header=getattr(task, "solution_header", "node,decision") if has_solution else "step,reward",
        num_graphs=len(getattr(task, "graphs", ())) or 1,
        inference_deterministic=getattr(task, "inference_deterministic", False),
        **members,
    )


def head_of(env: gym.Env) -> Head:
    """The env's declared ``head``, or the one its spaces imply."""
    declared = getattr(env.unwrapped, "head", None)
    if declared and declared not in set(Head):
        choices = ", ".join(head.value for head in Head)
        raise UsageError(f"{type(env.unwrapped).__name__}.head is {declared!r}; declare one of {choices}, or leave it out to infer it")
    return Head(declared or infer_head(check_contract(env.observation_space), env.action_space))


def _check_members(name: str, task: Any, members: dict[str, Any]) -> None:
    """Refuse optional members that could not work, naming the member and the fix."""
    sense = getattr(task, "sense", "max")
    if sense not in ("max", "min"):
        raise UsageError(f"{name}.sense is {sense!r}; declare 'max' or 'min' (whether eval's objective is maximised)")
    if not isinstance(getattr(task, "inference_deterministic", False), bool):
        raise UsageError(f"{name}.inference_deterministic is {task.inference_deterministic!r}; declare True or False, or leave it out")
    if (members["commit_action"] is None) != (members["defer_action"] is None):
        raise UsageError(f"{name} declares only one of commit_action and defer_action; patient decoding needs both, or neither")
    if members["commit_action"] is not None and members["active_nodes"] is None:
        raise UsageError(
            f"{name} declares commit_action and defer_action but no active_nodes(); the local-max decoding needs the nodes "
            "still undecided: add active_nodes() (the policy then sees the graph they span), or leave both actions out"
        )
    rules = members["rules"]
    if rules is not None and not isinstance(rules, Rules):
        raise UsageError(f"{name}.rules is {type(rules).__name__}; declare a Rules, e.g. graphtransfer.tasks.independent_set")
    if rules is not None and rules.exact_actions is not None and members["commit_action"] is None:
        raise UsageError(f"{name}.rules has exact_actions, which need commit_action and defer_action beside them; add them")
    if rules is not None and rules.finish is not None and members["active_nodes"] is None:
        raise UsageError(f"{name}.rules has a finishing rule, which completes the nodes active_nodes() names; add active_nodes()")
    if members["exact_actions"] is not None and members["commit_action"] is None:
        raise UsageError(f"{name}.exact_actions needs commit_action and defer_action beside it; add them, or leave it out")
    covers = members["covers"]
    if covers is not None and (not isinstance(covers, bool) or (covers and members["step_many"] is None)):
        raise UsageError(f"{name}.covers is {covers!r}; declare True only beside a step_many method (a cover task), or leave it out")
    if members["open_nodes"] is not None and members["step_many"] is None:
        raise UsageError(f"{name}.open_nodes needs step_many(nodes) beside it: it says which picks of one pass interact; add step_many")
    for member in ("solution", "active_nodes", "action_masks", "step_many", "open_nodes", "exact_actions"):
        if members[member] is not None and not callable(members[member]):
            raise UsageError(f"{name}.{member} is not a method; see graphtransfer.envs.protocol for what it must be")
    if members["solution"] is not None and not (callable(getattr(task, "objective", None)) and callable(getattr(task, "feasible", None))):
        raise UsageError(f"{name} has solution() but no objective(graph, solution) and feasible(graph, solution); add both")


def batch_masks(batch: object) -> Callable[[], np.ndarray] | None:
    """A batch's ``action_masks`` (its episodes' masks, ``(K, max_nodes or max_edges)``), which a
    choice env's batch has (:class:`~graphtransfer.envs.batched.Batch`); None for other batches."""
    masks = getattr(batch, "action_masks", None)
    return masks if callable(masks) else None
