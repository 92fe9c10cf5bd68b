"""Classical maximum-weight-matching solvers to measure policies against. Solutions are
``(num_nodes,)`` int64, each node's mate (its position) and -1 where unmatched, weighted by
:func:`graphtransfer.graphs.edge_weights`, as :class:`~graphtransfer.tasks.matching.env.MatchingEnv` scores them."""

from __future__ import annotations

import numpy as np

from graphtransfer.baselines.exact import ExactSolution, check_size
from graphtransfer.errors import UsageError
from graphtransfer.graphs import Graph, edge_weights
from graphtransfer.tasks.matching.rules import PRICE_ROUNDS, gains, locally_heaviest, twin_edges

MILP_MAX_NODES = 100_000
"""Largest graph :func:`exact_milp` accepts by default: HiGHS proved the optimum of 10,000-node
Erdős–Rényi, Barabási–Albert and random geometric graphs in 1.2, 2.2 and 9.8 s on 2 shared cores."""

DEFAULT_MILP_SECONDS = 30.0
"""seconds :func:`optimum` gives HiGHS: at load 6 on 2 cores, 10 s did not prove the optimum of
10,000-node Barabási–Albert and random geometric graphs"""

EXACT_MAX_NODES = 3000
"""Largest graph :func:`exact_blossom` accepts by default: networkx's blossom algorithm is pure
Python, cubic in the worst case; at 3,000 nodes it took 47 s (Erdős–Rényi, degree 4) and 69 s
(Barabási–Albert, m = 4) on 2 shared cores."""


def greedy_by_weight(graph: Graph) -> np.ndarray:
    """Heaviest edge first, skipping edges at matched nodes: a 1/2-approximation.

    Computed in vectorized rounds: every edge that is the heaviest remaining edge at both its
    endpoints joins (ties to the lower edge id), then the edges at matched nodes leave. Each
    round takes exactly the edges a sequential scan in that order takes, so the result is the
    sequential greedy's; rounds are few on random weights.
    """
    weights = edge_weights(graph)
    return _join_local_maxima(graph, np.flatnonzero(graph.edge_index[0] < graph.edge_index[1]), lambda live: weights)


def greedy_by_gain(graph: Graph, rounds: int = PRICE_ROUNDS) -> np.ndarray:
    """Greedy on gains instead of weights: in each round every live edge whose gain
    (:func:`~graphtransfer.tasks.matching.env.gains`, its weight less what its endpoints could get
    elsewhere) is the highest at both its endpoints joins (ties to the lower edge id), then the
    edges at matched nodes leave and the gains are recomputed on what is left. The rule the
    matching env's gain features point at, here without a policy, so that a policy's figure can
    be told apart from its features'.
    """
    weights, twin = edge_weights(graph), twin_edges(graph)

    def scores(live: np.ndarray) -> np.ndarray:
        score = np.full(weights.size, -np.inf)
        score[live] = gains(graph, weights, twin, live, rounds)
        return score

    return _join_local_maxima(graph, np.arange(graph.edge_index.shape[1]), scores, twin)


def _join_local_maxima(graph: Graph, live: np.ndarray, scores, twin: np.ndarray | None = None) -> np.ndarray:
    """Rounds in which every ``live`` edge whose score (``scores(live)``, one per directed edge)
    is the highest at both its endpoints joins, until no edge between unmatched nodes is left;
    the mate of each node, -1 where it has none."""
    twin = twin_edges(graph) if twin is None else twin
    mate = np.full(graph.num_nodes, -1, dtype=np.int64)
    while live.size:
        joined = locally_heaviest(graph, scores(live), twin, live)
        src, dst = graph.edge_index[:, joined]
        mate[src] = dst
        src, dst = graph.edge_index[:, live]
        live = live[(mate[src] < 0) & (mate[dst] < 0)]
    return mate


def path_growing(graph: Graph) -> np.ndarray:
    """Drake and Hougardy's path-growing 1/2-approximation, in linear time.

    From any node with edges left, walk along the heaviest remaining edge, deleting each node
    as it is left, and give the walk's edges alternately to two matchings; repeat until no
    edge is left and return the heavier matching. A Python loop over nodes (one walk step each):
    about a second per 100,000 nodes.
    """
    weights = edge_weights(graph)
    order = np.lexsort((-weights, graph.edge_index[0]))  # each node's edges, heaviest first
    starts = np.zeros(graph.num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(graph.edge_index[0], minlength=graph.num_nodes), out=starts[1:])
    neighbours, neighbour_weights = graph.edge_index[1, order].tolist(), weights[order].tolist()
    starts_list, deleted = starts.tolist(), [False] * graph.num_nodes
    mates = (np.full(graph.num_nodes, -1, dtype=np.int64), np.full(graph.num_nodes, -1, dtype=np.int64))
    totals = [0.0, 0.0]
    for start in range(graph.num_nodes):
        node, side = start, 0
        while not deleted[node]:
            deleted[node] = True
            nxt = next((k for k in range(starts_list[node], starts_list[node + 1]) if not deleted[neighbours[k]]), None)
            if nxt is None:
                break
            other = neighbours[nxt]
            if mates[side][node] < 0 and mates[side][other] < 0:
                mates[side][node], mates[side][other] = other, node
                totals[side] += neighbour_weights[nxt]
            node, side = other, 1 - side
    return mates[0] if totals[0] >= totals[1] else mates[1]


def exact_blossom(graph: Graph, max_nodes: int = EXACT_MAX_NODES) -> ExactSolution:
    """The maximum-weight matching by networkx's blossom algorithm (always optimal).

    Raises:
        GraphTooLargeError: the graph has more than ``max_nodes`` nodes.
    """
    check_size(graph, max_nodes, "matching exact_blossom", "'greedy-by-weight'")
    import networkx as nx  # here: networkx is slow to import and only this solver needs it

    src, dst = graph.edge_index
    once = src < dst
    nx_graph = nx.Graph()
    nx_graph.add_nodes_from(range(graph.num_nodes))
    nx_graph.add_weighted_edges_from(
        zip(src[once].tolist(), dst[once].tolist(), edge_weights(graph)[once].astype(float).tolist(), strict=True)
    )
    mate = np.full(graph.num_nodes, -1, dtype=np.int64)
    for u, v in nx.max_weight_matching(nx_graph):
        mate[u], mate[v] = v, u
    return ExactSolution(mate, True)


def exact_milp(graph: Graph, time_limit: float = DEFAULT_MILP_SECONDS, max_nodes: int = MILP_MAX_NODES) -> ExactSolution:
    """The maximum-weight matching as a 0/1 integer program solved by HiGHS
    (:func:`scipy.optimize.milp`): maximise ``Σ w_e x_e`` subject to ``Σ_{e ∋ v} x_e ≤ 1`` at
    every node. The degree constraints alone leave half-integral odd cycles; HiGHS's cuts close
    them, and on random weights it proves the optimum 10-30 times faster than networkx's
    blossom (:func:`exact_blossom`, 2-3.5 s at 1,000 nodes against 0.03-0.3 s).

    When ``time_limit`` runs out first, the result is the heavier of HiGHS's best matching and
    :func:`greedy_by_weight`'s, with ``optimal=False``.

    Raises:
        GraphTooLargeError: the graph has more than ``max_nodes`` nodes.
    """
    check_size(graph, max_nodes, "matching exact_milp", "'greedy-by-weight'")
    if not time_limit > 0:
        raise UsageError(f"time_limit={time_limit} must be a positive number of seconds, e.g. {DEFAULT_MILP_SECONDS}")
    from scipy.optimize import Bounds, LinearConstraint, milp  # 0.1 s to import: only when asked
    from scipy.sparse import csr_array

    src, dst = graph.edge_index
    once = np.flatnonzero(src < dst)
    weights = edge_weights(graph)
    u, v, w = src[once], dst[once], weights[once].astype(np.float64)
    incidence = csr_array(
        (np.ones(2 * once.size), (np.concatenate([u, v]), np.tile(np.arange(once.size), 2))), shape=(graph.num_nodes, once.size)
    )  # (|V|, |E|)
    result = milp(
        c=-w,
        constraints=LinearConstraint(incidence, 0, 1),
        integrality=np.ones(once.size),
        bounds=Bounds(0, 1),
        options={"time_limit": float(time_limit)},
    )
    greedy = greedy_by_weight(graph)
    if result.x is None:
        return ExactSolution(greedy, False)
    taken = result.x > 0.5
    mate = np.full(graph.num_nodes, -1, dtype=np.int64)
    mate[u[taken]], mate[v[taken]] = v[taken], u[taken]
    if result.status == 0:
        return ExactSolution(mate, True)
    heavier = _matched_weight(graph, weights, mate) >= _matched_weight(graph, weights, greedy)
    return ExactSolution(mate if heavier else greedy, False)


def optimum(graph: Graph, time_limit: float = DEFAULT_MILP_SECONDS) -> np.ndarray:
    """The anchor baseline: :func:`exact_milp`'s matching within ``time_limit`` seconds, the
    optimum wherever HiGHS proves it in time (every graph of up to 10^4 nodes measured, on an idle
    machine); otherwise the heavier of HiGHS's best and greedy's; above :data:`MILP_MAX_NODES`
    nodes, :func:`greedy_by_weight`'s."""
    if graph.num_nodes > MILP_MAX_NODES:
        return greedy_by_weight(graph)
    return exact_milp(graph, time_limit).solution


def _matched_weight(graph: Graph, weights: np.ndarray, mate: np.ndarray) -> float:
    src, dst = graph.edge_index
    return float(weights[(mate[src] == dst) & (src < dst)].sum())
