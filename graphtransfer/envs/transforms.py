"""What a task's declared helpers hand the generic solve: a kernel and the way back from it, a
finishing rule's completed set, a rival solve's set. The rules that make them live with their task
(:mod:`graphtransfer.tasks.mis`); the solve reads only these types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from graphtransfer.graphs import Graph


class KernelRule(Protocol):
    """A task's kernel rule (:attr:`graphtransfer.envs.base.GraphEnv.kernel`, e.g. :func:`mis_kernel`):
    ``lp=False`` leaves rule 5 out."""

    def __call__(self, graph: Graph, lp: bool = True) -> MISKernel | None: ...


@dataclass(frozen=True)
class MISKernel:
    """A graph's kernel and the way from a kernel's independent set back to the graph's.

    Attributes:
        graph: the kernel, its nodes numbered ``0..k-1`` in the given graph's order; at least one
            node (a graph the rules decide whole keeps one of the nodes they put in the set, an
            isolated node, which any decoding takes).
        nodes: ``(k,)`` int64, the position in the given graph of each kernel node (a folded
            node is named by one of the two nodes it merged).
        included: ``(i,)`` int64, positions the rules put in the set (possibly folded nodes).
        folds: ``(f, 3)`` int64, each fold's ``(v, kept, merged)`` in the order made: ``kept``
            names the folded node, ``merged`` the neighbour merged into it.
        given: the graph it is the kernel of.
        covers: the solutions are vertex covers (MVC), the complements of the independent sets.
    """

    graph: Graph
    nodes: np.ndarray
    included: np.ndarray
    folds: np.ndarray
    given: Graph
    covers: bool = False

    @property
    def decided(self) -> int:
        """The given graph's nodes the rules decided before anything ran on the kernel."""
        return self.given.num_nodes - self.nodes.size

    def measure(self, lifted: np.ndarray) -> tuple[float, bool]:
        """A lifted solution's size and whether it is feasible in the given graph (independent, or
        for covers covering every edge)."""
        src, dst = self.given.edge_index
        feasible = (lifted[src] | lifted[dst]).all() if self.covers else not (lifted[src] & lifted[dst]).any()
        return float(lifted.sum()), bool(feasible)

    def lift(self, chosen: np.ndarray) -> np.ndarray:
        """``(num_nodes,)`` bool, the given graph's set of the kernel's set ``chosen`` (``(k,)``
        bool): independent when ``chosen`` is, maximal when it is, and larger by the number of
        rule-1/2 joins and folds. For covers, the given graph's cover of the kernel's cover
        ``chosen``: a cover when ``chosen`` is, minimal when it is."""
        return self.lifting.lift(chosen)

    @property
    def lifting(self) -> KernelLift:
        """What :meth:`lift` reads, without the two graphs' edges: a decoding that keeps the kernels
        of its residual graphs until the end keeps these (:mod:`graphtransfer.solve.residual_kernels`)."""
        return KernelLift(self.given.num_nodes, self.nodes, self.included, self.folds, self.covers)


@dataclass(frozen=True)
class KernelLift:
    """The way from a kernel's set back to its graph's (:meth:`MISKernel.lift`), and nothing else:
    the 57 kernels of a random geometric graph of 10^5 nodes and average degree 200, kept whole with
    their graphs' edges until the set was lifted, held 8.7 GiB at the solve's peak (3.9 GiB without them)."""

    num_nodes: int
    """the given graph's nodes"""
    nodes: np.ndarray
    included: np.ndarray
    folds: np.ndarray
    covers: bool = False
    """as :class:`MISKernel`'s fields of these names"""

    def lift(self, chosen: np.ndarray) -> np.ndarray:
        """:meth:`MISKernel.lift`."""
        chosen = np.asarray(chosen, dtype=bool)
        if self.covers:
            return ~self._lift_set(~chosen)
        return self._lift_set(chosen)

    def _lift_set(self, chosen: np.ndarray) -> np.ndarray:
        lifted = np.zeros(self.num_nodes, dtype=bool)
        lifted[self.nodes[chosen]] = True
        lifted[self.included] = True
        # a later fold may have merged an earlier folded node: last first. Read as three lists of ints, not a list per
        # fold: 38,000 folds' lists made the collector's full pass run inside a solve (0.22 s of the 250k graph's 1.2 s)
        for v, kept, merged in zip(*self.folds[::-1].T.tolist(), strict=True):
            if lifted[kept]:
                lifted[merged] = True
            else:
                lifted[v] = True
        return lifted


@dataclass(frozen=True)
class FinishedSet:
    """A finished independent set and where its nodes came from.

    Attributes:
        solution: ``(num_nodes,)`` bool, a maximal independent set.
        by_policy: nodes the policy put in the set.
        undecided: nodes the policy left undecided (decoding stopped at its pass limit).
        by_rule: of those, how many step 1 of the rule put in the set.
        for_maximality: nodes the policy excluded that the final pass added.
    """

    solution: np.ndarray
    by_policy: int
    undecided: int
    by_rule: int
    for_maximality: int

    def pass_limit_warning(self, passes: int) -> str | None:
        """The line to print after ``warning:`` when decoding stopped with nodes undecided, else None."""
        if not self.undecided:
            return None
        return (
            f"the pass limit ({passes} passes) was reached with {self.undecided:,} of {self.solution.size:,} nodes undecided; "
            f"greedy minimum degree completed them ({self.by_rule:,} joined the set); raise --max-passes to let the policy decide them"
        )


@dataclass(frozen=True)
class NearBipartiteSet:
    """An independent set of the graph less a cover of its odd edges, solved as bipartite.

    Attributes:
        solution: ``(num_nodes,)`` bool, a maximal independent set of the graph.
        odd_edges: the graph's edges inside a colour of the two-colouring.
        edges: the graph's edges.
        bound: no independent set of the graph is larger (König's set of the rest plus the cover;
            ``None`` above :data:`EXACT_NODES` nodes, where the better side stood in for it).
    """

    solution: np.ndarray
    odd_edges: int
    edges: int
    bound: int | None
