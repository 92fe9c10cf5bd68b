"""The MIS kernel (graphtransfer.tasks.mis.kernel): exact against brute force, lifted sets
independent and maximal, lifted covers smallest, and the solve paths that use it (predict)."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pytest

from graphtransfer import Decoding
from graphtransfer.graphs import Graph
from graphtransfer.graphs.generators import barabasi_albert, erdos_renyi, random_geometric
from graphtransfer.graphs.graph import from_edges
from graphtransfer.solve.predict import predict, predict_graph
from graphtransfer.tasks.mis import kernel as mis_kernel_module
from graphtransfer.tasks.mis.baselines import greedy_min_degree
from graphtransfer.tasks.mis.env import is_independent_set
from graphtransfer.tasks.mis.kernel import RULE_DEGREE, half_integral_cover, low_degree_rounds, mis_kernel, mvc_kernel
from graphtransfer.tasks.mvc.env import MVCEnv, WeightedMVCEnv

BUILT_IN = "mis"
"""the packaged MIS model (graphtransfer/zoo/mis): no training needed"""


def graph_of(edges: list[tuple[int, int]], num_nodes: int) -> Graph:
    pairs = np.array(edges, dtype=np.int64).reshape(-1, 2)
    return from_edges(pairs[:, 0], pairs[:, 1], num_nodes)[0]


def maximum_set(graph: Graph) -> np.ndarray:
    """A largest independent set by trying every subset (graphs of at most 14 nodes)."""
    src, dst = graph.edge_index
    best = np.zeros(graph.num_nodes, dtype=bool)
    for bits in itertools.product([False, True], repeat=graph.num_nodes):
        chosen = np.array(bits)
        if chosen.sum() > best.sum() and not (chosen[src] & chosen[dst]).any():
            best = chosen
    return best


def is_maximal(graph: Graph, chosen: np.ndarray) -> bool:
    covered = chosen.copy()
    covered[graph.edge_index[1, chosen[graph.edge_index[0]]]] = True
    return bool(covered.all())


def sparse_tiny_graphs() -> list[Graph]:
    """Tiny graphs with many nodes of degree 1 and 2: random sparse ones, paths, cycles, a star, two triangles joined."""
    graphs = [erdos_renyi(n, degree, seed) for seed, (n, degree) in enumerate(itertools.product(range(4, 14, 3), (1.5, 2.5, 3.5, 5.0)))]
    graphs += [random_geometric(12, degree, seed) for seed, degree in enumerate((3.0, 4.5, 6.0))]
    graphs += [graph_of([(i, i + 1) for i in range(n - 1)], n) for n in (2, 5, 8)]
    graphs += [graph_of([(i, (i + 1) % n) for i in range(n)], n) for n in (3, 4, 7, 10)]
    graphs += [graph_of([(0, i) for i in range(1, 7)], 7), graph_of([(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (4, 5), (3, 5)], 6)]
    return [graph for graph in graphs if graph.degrees().min() <= 2]


def crowned_tiny_graphs() -> list[Graph]:
    """Tiny graphs of minimum degree 3 where rule 5 (the LP) decides: Barabási–Albert m = 3,
    complete bipartite graphs with a short side, and such a graph with edges inside its long side."""
    graphs = [barabasi_albert(n, 3, seed) for n, seed in ((9, 5), (10, 4), (11, 1), (12, 2), (13, 5), (14, 5))]
    graphs += [graph_of([(i, j) for i in range(3) for j in range(3, n)], n) for n in (7, 10)]
    graphs += [graph_of([(i, j) for i in range(3) for j in range(3, 11)] + [(3, 4), (5, 6)], 11)]
    return graphs


@pytest.mark.parametrize("graph", sparse_tiny_graphs(), ids=lambda g: f"{g.num_nodes}n{g.num_edges}e")
def test_a_largest_set_of_the_kernel_lifts_to_a_largest_set_of_the_graph(graph):
    kernel = mis_kernel(graph)
    assert kernel is not None  # every graph here has a node of degree at most 2, which a rule decides
    lifted = kernel.lift(maximum_set(kernel.graph))
    assert is_independent_set(graph, lifted)
    assert lifted.sum() == maximum_set(graph).sum()
    assert kernel.measure(lifted) == (float(lifted.sum()), True)


@pytest.mark.parametrize("graph", sparse_tiny_graphs()[:12], ids=lambda g: f"{g.num_nodes}n{g.num_edges}e")
def test_any_maximal_set_of_the_kernel_lifts_to_a_maximal_independent_set(graph):
    kernel = mis_kernel(graph)
    chosen = greedy_min_degree(kernel.graph)
    lifted = kernel.lift(chosen)
    assert is_independent_set(graph, lifted) and is_maximal(graph, lifted)
    assert lifted.sum() == chosen.sum() + kernel.included.size + len(kernel.folds)


@pytest.mark.parametrize("matching", ["scipy", "flow"])
@pytest.mark.parametrize("graph", crowned_tiny_graphs(), ids=lambda g: f"{g.num_nodes}n{g.num_edges}e")
def test_the_lp_rule_keeps_a_largest_set(graph, matching, monkeypatch):
    """With either maximum matching of the double cover (the flow where the graph is deep)."""
    monkeypatch.setattr(mis_kernel_module, "FLOW_MATCHING_DEPTH", 10**9 if matching == "scipy" else -1)
    joining, leaving = half_integral_cover(graph.csr())
    assert joining.size + leaving.size > 0  # the LP decides on every graph here
    value = np.full(graph.num_nodes, 0.5)
    value[joining], value[leaving] = 0.0, 1.0
    src, dst = graph.edge_index
    assert (value[src] + value[dst] >= 1).all()  # a cover of the LP ...
    assert 2 * value.sum() == double_cover_matching(graph)  # ... of the matching's size: an optimum (LP duality)
    largest = maximum_set(graph)
    kernel = mis_kernel(graph)
    lifted = kernel.lift(maximum_set(kernel.graph))
    assert is_independent_set(graph, lifted) and lifted.sum() == largest.sum()


def double_cover_matching(graph: Graph) -> int:
    """The size of a maximum matching of ``graph``'s bipartite double cover, by augmenting paths."""
    neighbours = [set() for _ in range(graph.num_nodes)]
    for u, v in graph.edge_index.T.tolist():
        neighbours[u].add(v)
    matched_to: dict[int, int] = {}

    def augment(u: int, seen: set[int]) -> bool:
        for v in neighbours[u] - seen:
            seen.add(v)
            if v not in matched_to or augment(matched_to[v], seen):
                matched_to[v] = u
                return True
        return False

    return sum(augment(u, set()) for u in range(graph.num_nodes))


def lattice(side: int) -> Graph:
    """The ``side`` x ``side`` grid (4-neighbour lattice): triangle-free, bipartite and deep."""
    cells = np.arange(side * side).reshape(side, side)
    src = np.concatenate([cells[:, :-1].ravel(), cells[:-1, :].ravel()])
    dst = np.concatenate([cells[:, 1:].ravel(), cells[1:, :].ravel()])
    return from_edges(src, dst, side * side, f"grid-{side}")[0]


@pytest.mark.parametrize("graph", [lattice(12), erdos_renyi(1500, 3.0, seed=2), barabasi_albert(1500, 3, seed=1)], ids=lambda g: g.name)
def test_the_flow_matching_is_a_maximum_matching_of_the_double_cover(graph):
    indptr, indices = graph.csr()
    adjacency = mis_kernel_module.csr_array((np.ones(indices.size, dtype=np.int8), indices, indptr), shape=(graph.num_nodes,) * 2)
    right_of = mis_kernel_module._flow_matching(adjacency)
    matched = np.flatnonzero(right_of >= 0)
    assert np.unique(right_of[matched]).size == matched.size  # each right copy at most once
    assert all(right_of[u] in indices[indptr[u] : indptr[u + 1]] for u in matched)  # along edges
    assert matched.size == double_cover_matching(graph)


@pytest.mark.parametrize("shape", [(40, 40), (30, 55), (55, 30)])
def test_the_alternating_paths_reach_what_a_search_step_by_step_reaches(shape):
    """Z of König's construction: from the unmatched rows, any edge to a column, a column's matched
    edge back; against a plain breadth-first search in Python."""
    rng = np.random.default_rng(sum(shape))
    rows, cols = rng.integers(0, shape[0], 70), rng.integers(0, shape[1], 70)
    between = mis_kernel_module.csr_array((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=shape)
    between.sum_duplicates()
    right_of = mis_kernel_module.maximum_bipartite_matching(between, perm_type="column").astype(np.int64)
    left_reached, right_reached = mis_kernel_module._alternating_reach(between.indptr, between.indices, right_of, shape[1])
    partner = {int(r): u for u, r in enumerate(right_of) if r >= 0}
    seen_left, seen_right = {u for u in range(shape[0]) if right_of[u] < 0}, set()
    queue = list(seen_left)
    while queue:
        u = queue.pop()
        for r in between.indices[between.indptr[u] : between.indptr[u + 1]].tolist():
            if r not in seen_right:
                seen_right.add(r)
                if r in partner and partner[r] not in seen_left:
                    seen_left.add(partner[r])
                    queue.append(partner[r])
    assert set(np.flatnonzero(left_reached).tolist()) == seen_left and set(np.flatnonzero(right_reached).tolist()) == seen_right
    assert 0 < len(seen_right) < shape[1]


@pytest.mark.parametrize("shape", [(300, 500), (500, 300)])
def test_the_flow_matching_matches_rows_into_columns_as_scipy_does(shape):
    """The two sides of a bipartite graph, of different sizes (the kernel matches a bipartite graph's
    sides directly, not its double cover)."""
    rng = np.random.default_rng(shape[0])
    rows, cols = rng.integers(0, shape[0], 900), rng.integers(0, shape[1], 900)
    between = mis_kernel_module.csr_array((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=shape)
    between.sum_duplicates()
    right_of = mis_kernel_module._flow_matching(between)
    matched = np.flatnonzero(right_of >= 0)
    assert np.unique(right_of[matched]).size == matched.size
    assert all(right_of[u] in between.indices[between.indptr[u] : between.indptr[u + 1]] for u in matched)
    assert matched.size == np.count_nonzero(mis_kernel_module.maximum_bipartite_matching(between, perm_type="column") >= 0)


@pytest.mark.parametrize("graph", [lattice(30), erdos_renyi(4000, 3.0, seed=1), barabasi_albert(4000, 2, seed=0)], ids=lambda g: g.name)
def test_the_levels_by_pointer_jumping_are_the_breadth_first_distances(graph):
    """From the node of highest degree (in the largest component on these graphs): the unweighted
    distances, as scipy's shortest paths give them; an odd cycle found on the random graphs, none
    on the grid."""
    from scipy.sparse.csgraph import shortest_path

    indptr, indices = graph.csr()
    adjacency = mis_kernel_module.csr_array((np.ones(indices.size, dtype=np.int8), indices, indptr), shape=(graph.num_nodes,) * 2)
    distances = shortest_path(adjacency, directed=False, unweighted=True, indices=int(np.argmax(np.diff(indptr))))
    levels, components = mis_kernel_module.breadth_first_levels(adjacency)
    src, dst = graph.edge_index
    assert (levels >= 0).all() and (np.abs(levels[src] - levels[dst]) <= 1).all()  # breadth-first levels in every component
    if components is None:  # connected: searched from that node
        assert np.array_equal(levels, distances)
    else:  # one start per component
        assert np.array_equal(np.sort(components[levels == 0]), np.arange(components.max() + 1))
    sides = mis_kernel_module._bipartite_sides(levels, components, indptr, indices)
    hub = int(np.argmax(np.diff(indptr)))  # in the random graphs' giant component, which has odd cycles
    assert (sides >= 0).all() if graph.name == "grid-30" else sides[hub] < 0
    assert ((sides >= 0) == (sides[hub] >= 0)).all() or components is not None  # a connected graph is bipartite or not as a whole


def test_a_lattice_beside_a_larger_random_part_is_matched_by_the_flow_and_decided_whole(monkeypatch):
    """The depth of every component counts: a 60 x 60 grid beside a Barabási–Albert graph of 8,000
    nodes (the largest component, shallow) made scipy's matching search for minutes; the flow takes
    it, the grid's sides come from its own levels and it is decided whole, the other part not."""
    chosen = []
    flow = mis_kernel_module._flow_matching
    monkeypatch.setattr(mis_kernel_module, "_flow_matching", lambda adjacency: chosen.append(adjacency.shape[0]) or flow(adjacency))
    random_part, grid = barabasi_albert(8000, 4, seed=0), lattice(60)
    src = np.concatenate([random_part.edge_index[0], grid.edge_index[0] + 8000])
    dst = np.concatenate([random_part.edge_index[1], grid.edge_index[1] + 8000])
    graph = from_edges(src, dst, 8000 + 3600)[0]
    indptr, indices = graph.csr()
    adjacency = mis_kernel_module.csr_array((np.ones(indices.size, dtype=np.int8), indices, indptr), shape=(graph.num_nodes,) * 2)
    levels, components = mis_kernel_module.breadth_first_levels(adjacency)
    assert components is not None and levels[8000:].max() >= 59  # the grid searched from a corner or beyond: deep
    sides = mis_kernel_module._bipartite_sides(levels, components, indptr, indices)
    assert (sides[8000:] >= 0).all() and (sides[:8000] < 0).all()
    kernel = mis_kernel(graph)
    assert chosen
    lifted = kernel.lift(np.ones(kernel.graph.num_nodes, dtype=bool) & False)
    assert lifted[8000:].sum() == 1800 and is_independent_set(graph, lifted)


@pytest.mark.parametrize("side", [99, 100])
def test_a_lattice_is_decided_whole_by_a_flow_matching(side, monkeypatch):
    """scipy's bipartite matching searched for minutes on a 100 x 100 grid once the rules had folded
    its corners (augmenting paths are long on lattices); the kernel matches deep graphs by a maximum
    flow, and a grid, bipartite, is decided whole by König's theorem: a largest set, half the nodes
    (rounded up), where the LP alone is 1/2 everywhere. Shallow graphs keep scipy's matching."""
    chosen = []
    flow = mis_kernel_module._flow_matching
    monkeypatch.setattr(mis_kernel_module, "_flow_matching", lambda adjacency: chosen.append(adjacency.shape[0]) or flow(adjacency))
    graph = lattice(side)
    kernel = mis_kernel(graph)
    assert chosen and kernel.decided == graph.num_nodes - 1
    lifted = kernel.lift(np.ones(1, dtype=bool))
    assert is_independent_set(graph, lifted) and lifted.sum() == (side * side + 1) // 2
    chosen.clear()
    assert mis_kernel(barabasi_albert(3000, 3, seed=5)).decided > 2900 and not chosen


def random_bipartite(left: int, right: int, edges: int, seed: int) -> Graph:
    rng = np.random.default_rng(seed)
    return from_edges(rng.integers(0, left, edges), left + rng.integers(0, right, edges), left + right, "bipartite")[0]


def test_the_ball_finds_odd_cycles_and_only_among_the_nodes_left():
    def near(graph: Graph, alive: np.ndarray | None = None) -> bool:
        indptr, indices = graph.csr()
        alive = np.ones(graph.num_nodes, dtype=bool) if alive is None else alive
        return mis_kernel_module.odd_cycle_near((indptr, indices), alive, np.diff(indptr))

    five, six = (graph_of([(i, (i + 1) % n) for i in range(n)], n) for n in (5, 6))
    assert near(five) and not near(six)
    assert not near(five, np.arange(5) != 3)  # a 5-cycle less one node is a path
    assert not near(lattice(40)) and not near(random_bipartite(300, 500, 2400, seed=1))
    assert near(erdos_renyi(20_000, 4.0, seed=1)) and near(barabasi_albert(20_000, 3, seed=1))


def test_the_ball_answers_for_itself_only(monkeypatch):
    """A grid with one diagonal far from the search's start: an odd cycle the ball does not reach."""
    grid = lattice(60)
    src, dst = grid.edge_index
    graph = from_edges(np.append(src, 0), np.append(dst, 61), grid.num_nodes)[0]  # a triangle at one corner
    indptr, indices = graph.csr()
    degree = np.diff(indptr).copy()
    degree[60 * 60 - 1] = 99  # the search starts at the far corner
    alive = np.ones(graph.num_nodes, dtype=bool)
    assert mis_kernel_module.odd_cycle_near((indptr, indices), alive, degree)
    monkeypatch.setattr(mis_kernel_module, "ODD_CYCLE_BALL", 100)
    assert not mis_kernel_module.odd_cycle_near((indptr, indices), alive, degree)


@pytest.mark.parametrize("graph", [lattice(41), random_bipartite(700, 900, 4000, seed=2)], ids=["grid-41", "bipartite"])
def test_bipartite_graphs_above_the_lp_limit_are_decided_whole_with_a_largest_set(graph, monkeypatch):
    """Above :data:`LP_NODES` the LP's step runs where the ball finds no odd cycle: a bipartite graph is then
    decided whole, its largest set (König: the nodes less a maximum matching, counted here by scipy on the
    bipartite graph itself, not on the double cover the kernel matches)."""
    monkeypatch.setattr(mis_kernel_module, "LP_NODES", 100)
    kernel = mis_kernel(graph)
    assert kernel.decided == graph.num_nodes - 1
    lifted = kernel.lift(np.ones(1, dtype=bool))
    indptr, indices = graph.csr()
    adjacency = mis_kernel_module.csr_array((np.ones(indices.size, dtype=np.int8), indices, indptr), shape=(graph.num_nodes,) * 2)
    levels, _ = mis_kernel_module.breadth_first_levels(adjacency)
    matched = mis_kernel_module.maximum_bipartite_matching(adjacency[levels % 2 == 0][:, levels % 2 == 1], perm_type="column")
    assert is_independent_set(graph, lifted) and is_maximal(graph, lifted)
    assert lifted.sum() == graph.num_nodes - np.count_nonzero(matched >= 0)


@pytest.mark.parametrize("limit", [1 << 17, 100], ids=["below-the-limit", "above-it"])
def test_a_bipartite_graph_is_matched_by_the_flow_even_where_a_hub_makes_a_lattice_shallow(limit, monkeypatch):
    """A grid with one node joined to every tenth node of one side: 6 levels deep from the hub, where
    scipy's matching took 6 s at 1.3 x 10^5 nodes and minutes at 10^6; the flow matches it, below
    the LP's limit and above it."""
    chosen = []
    flow = mis_kernel_module._flow_matching
    monkeypatch.setattr(mis_kernel_module, "_flow_matching", lambda adjacency: chosen.append(adjacency.shape[0]) or flow(adjacency))
    monkeypatch.setattr(mis_kernel_module, "LP_NODES", limit)
    grid = lattice(40)
    cells = np.arange(1600)
    spokes = cells[((cells // 40 + cells % 40) % 2 == 0)][::10]
    graph = from_edges(np.append(grid.edge_index[0], np.full(spokes.size, 1600)), np.append(grid.edge_index[1], spokes), 1601)[0]
    kernel = mis_kernel(graph)
    assert chosen and kernel.decided == graph.num_nodes - 1
    lifted = kernel.lift(np.ones(1, dtype=bool))
    assert is_independent_set(graph, lifted) and lifted.sum() == 801  # the side the hub misses, and the hub


def test_graphs_with_odd_cycles_above_the_lp_limit_skip_the_lp(monkeypatch):
    calls = []
    cover = mis_kernel_module.half_integral_cover
    monkeypatch.setattr(mis_kernel_module, "half_integral_cover", lambda csr: calls.append(csr[0].size) or cover(csr))
    graph = erdos_renyi(3000, 3.0, seed=4)  # triangle-free enough for the LP's step, not bipartite
    mis_kernel(graph)
    assert calls  # below the limit the LP runs
    calls.clear()
    monkeypatch.setattr(mis_kernel_module, "LP_NODES", 100)
    kernel = mis_kernel(graph)
    assert not calls and 0 < kernel.decided < graph.num_nodes - 1


def test_predict_decides_a_grid_above_the_lp_limit_whole(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from graphtransfer.cli import app
    from graphtransfer.graphs import write_edge_list

    monkeypatch.setattr(mis_kernel_module, "LP_NODES", 100)
    write_edge_list(lattice(45), tmp_path / "grid.txt")
    out = tmp_path / "s.csv"
    result = CliRunner().invoke(app, ["predict", "--model", BUILT_IN, "--graph", str(tmp_path / "grid.txt"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert re.search(r"objective 1013 in 1 passes", result.output), result.output  # (45 * 45 + 1) / 2
    assert "exact reductions decided 2,024 of 2,025 nodes" in result.output


def bipartite_tiny_graphs() -> list[Graph]:
    """Tiny bipartite graphs without a node of degree 1 everywhere: random ones between two sides,
    even cycles, small grids, and one with an isolated node."""
    rng = np.random.default_rng(3)
    graphs = []
    for n, p in itertools.product((8, 11, 14), (0.35, 0.6)):
        half = n // 2
        pairs = [(i, j) for i in range(half) for j in range(half, n) if rng.random() < p]
        graphs.append(graph_of(pairs, n))
    graphs += [graph_of([(i, (i + 1) % n) for i in range(n)], n) for n in (6, 10)]
    graphs += [lattice(3), graph_of([(0, 1), (1, 2), (2, 3), (3, 0), (0, 4), (4, 2)], 6)]
    return graphs


@pytest.mark.parametrize("graph", bipartite_tiny_graphs(), ids=lambda g: f"{g.num_nodes}n{g.num_edges}e")
def test_the_lp_step_decides_a_bipartite_graph_whole_with_a_largest_set(graph):
    """Matched side to side by the flow, whatever the depth (:func:`largest_bipartite_set`)."""
    joining, leaving = half_integral_cover(graph.csr())
    assert joining.size + leaving.size == graph.num_nodes
    chosen = np.zeros(graph.num_nodes, dtype=bool)
    chosen[joining] = True
    assert is_independent_set(graph, chosen) and chosen.sum() == maximum_set(graph).sum()


def test_only_the_bipartite_component_is_decided_whole_beside_an_odd_cycle():
    """A 5-cycle (not bipartite: 1/2 everywhere) beside a 6-cycle (bipartite: 3 join, 3 leave)."""
    graph = graph_of([(i, (i + 1) % 5) for i in range(5)] + [(5 + i, 5 + (i + 1) % 6) for i in range(6)], 11)
    joining, leaving = half_integral_cover(graph.csr())
    assert set(joining.tolist()) | set(leaving.tolist()) == set(range(5, 11)) and joining.size == 3


def test_the_lp_rule_and_the_others_decide_barabasi_albert_m3_whole(monkeypatch):
    graph = barabasi_albert(3000, 3, seed=5)
    kernel = mis_kernel(graph)
    with monkeypatch.context() as patched:
        patched.setattr("graphtransfer.tasks.mis.kernel.LP_NODES", 0)
        assert mis_kernel(graph).decided < 30  # rules 1-4 alone: a few of the first nodes
    assert kernel.decided == graph.num_nodes - 1
    lifted = kernel.lift(np.ones(1, dtype=bool))
    assert is_independent_set(graph, lifted) and is_maximal(graph, lifted)
    assert lifted.sum() >= greedy_min_degree(graph).sum()


def test_folds_solve_cycles_and_paths_whole():
    for n in (9, 10, 101):
        cycle = mis_kernel(graph_of([(i, (i + 1) % n) for i in range(n)], n))
        path = mis_kernel(graph_of([(i, i + 1) for i in range(n - 1)], n))
        for kernel, largest in ((cycle, n // 2), (path, (n + 1) // 2)):
            assert kernel.graph.num_nodes == 1 and kernel.graph.num_edges == 0  # one isolated node kept for the decoding
            assert kernel.lift(np.ones(1, dtype=bool)).sum() == largest


def largest_in_tree(graph: Graph) -> int:
    """A forest's independence number by the leaf-up recurrence (in or out at every node)."""
    neighbours = [[] for _ in range(graph.num_nodes)]
    for a, b in graph.edge_index.T.tolist():
        neighbours[a].append(b)
    seen, total = np.zeros(graph.num_nodes, dtype=bool), 0
    for root in range(graph.num_nodes):
        if seen[root]:
            continue
        order, parent, stack = [], {root: -1}, [root]
        seen[root] = True
        while stack:
            v = stack.pop()
            order.append(v)
            for u in neighbours[v]:
                if not seen[u]:
                    seen[u], parent[u] = True, v
                    stack.append(u)
        inside, outside = {}, {}
        for v in reversed(order):
            children = [u for u in neighbours[v] if parent.get(u) == v]
            inside[v] = 1 + sum(outside[u] for u in children)
            outside[v] = sum(max(inside[u], outside[u]) for u in children)
        total += max(inside[root], outside[root])
    return total


@pytest.mark.parametrize("seed", range(4))
def test_the_pendant_passes_decide_a_forest_whole_with_a_largest_set(seed):
    """A tree (Barabasi-Albert with m = 1) beside isolated nodes and a lone edge: the array rounds
    alone decide every node, and the set is independent and as large as the tree recurrence says."""
    tree = barabasi_albert(2_000, 1, seed)
    n = tree.num_nodes
    lone_edge = np.array([[n + 3, n + 4], [n + 4, n + 3]])
    graph = Graph(np.concatenate([tree.edge_index, lone_edge], axis=1), n + 5)  # n, n+1, n+2 isolated
    rounds = low_degree_rounds(graph)
    assert rounds.rest.num_nodes == 0 and not rounds.folds.size and np.unique(rounds.joined).size == rounds.joined.size
    chosen = np.zeros(graph.num_nodes, dtype=bool)
    chosen[rounds.joined] = True
    assert is_independent_set(graph, chosen) and is_maximal(graph, chosen)
    assert chosen.sum() == largest_in_tree(graph) and chosen[[n, n + 1, n + 2, n + 3]].all() and not chosen[n + 4]
    kernel = mis_kernel(graph)
    assert kernel.graph.num_nodes == 1 and kernel.lift(np.ones(1, dtype=bool)).sum() == chosen.sum()


@pytest.mark.parametrize("tail", [1, 2, 3])
def test_the_peeled_pendants_and_the_rules_after_them_make_one_exact_kernel(tail):
    """A 5-clique with a 7-cycle hanging off one node and a path of ``tail`` nodes off another (15
    nodes at most): the rounds peel the path and fold in the cycle, the rules dominate in the
    clique; the kernel's names are the given graph's, and its largest set lifts to a largest set."""
    edges = list(itertools.combinations(range(5), 2)) + [(5 + i, 5 + (i + 1) % 7) for i in range(7)] + [(0, 5)]
    edges += [(1, 12)] + [(12 + i, 13 + i) for i in range(tail - 1)]
    graph = graph_of(edges, 12 + tail)
    rounds = low_degree_rounds(graph)
    assert rounds.joined.size and rounds.folds.size and rounds.rest.num_nodes < graph.num_nodes
    kernel = mis_kernel(graph)
    assert set(rounds.joined.tolist()) <= set(kernel.included.tolist())
    assert kernel.nodes.max(initial=0) < graph.num_nodes and kernel.folds.max(initial=0) < graph.num_nodes
    lifted = kernel.lift(maximum_set(kernel.graph))
    assert is_independent_set(graph, lifted) and lifted.sum() == maximum_set(graph).sum()


def subdivided(graph: Graph, seed: int) -> Graph:
    """``graph`` with each edge replaced by a path through 1-4 new nodes (chains of degree-2 nodes)."""
    rng = np.random.default_rng(seed)
    src, dst = graph.edge_index
    edges, count = [], graph.num_nodes
    for a, b in zip(src[src < dst].tolist(), dst[src < dst].tolist(), strict=True):
        inner = list(range(count, count + int(rng.integers(1, 5))))
        count += len(inner)
        path = [a, *inner, b]
        edges += list(zip(path[:-1], path[1:], strict=True))
    return graph_of(edges, count)


@pytest.mark.parametrize("seed", range(4))
def test_the_degree_two_rounds_decide_chains_as_the_rules_one_by_one_do(seed, monkeypatch):
    """Chains of degree-2 nodes between the nodes of a small graph of minimum degree 3 (50-90 nodes): the
    array rounds fold and join them, and the kernel, its largest set lifted, keeps the largest set
    the rules node by node keep (with the rounds off)."""
    ladder = [(i, (i + 1) % 10) for i in range(10)] + [(i, i + 5) for i in range(5)]  # the Möbius ladder: degree 3
    extra = np.random.default_rng(seed).choice(10, size=(2, 2), replace=False).tolist()
    graph = subdivided(graph_of(ladder + [tuple(pair) for pair in extra], 10), seed)
    rounds = low_degree_rounds(graph)
    assert rounds is not None and rounds.folds.size
    kernel = mis_kernel(graph)
    monkeypatch.setattr(mis_kernel_module, "FOLD_SHARE", float("inf"))
    monkeypatch.setattr(mis_kernel_module, "PEEL_SHARE", float("inf"))
    one_by_one = mis_kernel(graph)
    assert kernel.graph.num_nodes <= 14 and one_by_one.graph.num_nodes <= 14
    lifted = kernel.lift(maximum_set(kernel.graph))
    assert is_independent_set(graph, lifted) and is_maximal(graph, lifted)
    assert lifted.sum() == one_by_one.lift(maximum_set(one_by_one.graph)).sum()


@pytest.mark.parametrize(
    ("graph", "refolded"),
    [
        (erdos_renyi(400, 3.0, 0), True),
        (erdos_renyi(400, 4.0, 1), True),
        (barabasi_albert(400, 2, 3), True),
        (random_geometric(400, 5.0, 2), False),
    ],
    ids=lambda value: value.name if isinstance(value, Graph) else None,
)
def test_the_rules_count_and_read_each_nodes_neighbours_as_the_kernels_edges_have_them(graph, refolded):
    """The rules make a node's set of neighbours only when they read it (a merged neighbour read
    as the node it was folded into, through folds of folds) and count every node's neighbours
    meanwhile: on graphs of many folds (``refolded``: some folded node folded again; the geometric
    graph's triangles turn rule 4 on) both agree with the kernel's edges, node by node."""
    rules = mis_kernel_module._Rules(graph, lp=False)
    rules.run()
    assert len(rules.folds) >= 10
    assert any(kept in rules.merged_into for _, kept, _ in rules.folds) == refolded
    nodes, edges = rules.current()
    kernel = Graph(edges, int(nodes.size))
    indptr, indices = kernel.csr()
    for position, node in enumerate(nodes.tolist()):
        around = set(nodes[indices[indptr[position] : indptr[position + 1]]].tolist())
        assert rules.neighbours(node) == around and rules.degree[node] == len(around)


def test_graphs_without_low_degree_nodes_or_nested_neighbourhoods_have_no_kernel():
    outer, spokes = [(i, (i + 1) % 5) for i in range(5)], [(i, i + 5) for i in range(5)]
    inner = [(5 + i, 5 + (i + 2) % 5) for i in range(5)]
    petersen = graph_of(outer + spokes + inner, 10)  # degree 3, no triangle, not bipartite: the LP is 1/2 everywhere
    dense = erdos_renyi(400, 40, seed=0)
    assert dense.degrees().min() > 2
    assert mis_kernel(petersen) is None and mis_kernel(dense) is None
    complete_bipartite = graph_of([(i, j) for i in range(5) for j in range(5, 10)], 10)
    assert mis_kernel(complete_bipartite).decided == 9  # bipartite: decided whole (König), one side


def test_domination_leaves_one_node_of_a_clique():
    complete = graph_of(list(itertools.combinations(range(RULE_DEGREE + 2), 2)), RULE_DEGREE + 2)
    kernel = mis_kernel(complete)
    assert kernel.decided == RULE_DEGREE + 1 and kernel.lift(np.ones(1, dtype=bool)).sum() == 1


def test_domination_decides_a_clique_around_a_low_degree_node():
    # node 0's neighbours 1-4 form a clique with it; 5-9 hang off the clique: 1-4 leave, 0 joins
    edges = list(itertools.combinations(range(5), 2)) + [(1, 5), (2, 6), (3, 7), (4, 8), (4, 9), (8, 9)]
    graph = graph_of(edges, 10)
    kernel = mis_kernel(graph)
    lifted = kernel.lift(maximum_set(kernel.graph))
    assert lifted[0] and not lifted[1:5].any() and lifted.sum() == maximum_set(graph).sum()


def test_a_folded_node_is_named_by_a_merged_neighbour():
    # a 7-cycle, no neighbourhood inside another: node 0, the first looked at, folds 1 and 6 into one node
    graph = graph_of([(i, (i + 1) % 7) for i in range(7)], 7)
    kernel = mis_kernel(graph)
    assert kernel.folds.tolist()[0][0] == 0 and set(kernel.folds.tolist()[0][1:]) == {1, 6}
    assert kernel.lift(maximum_set(kernel.graph)).sum() == maximum_set(graph).sum() == 3


def test_predict_solves_barabasi_albert_m2_by_the_kernel_and_reports_it():
    graph = barabasi_albert(3000, 2, seed=5)
    _, reduced = predict(BUILT_IN, graph)
    _, plain = predict(BUILT_IN, graph, reductions=False)
    assert reduced.reduced == graph.num_nodes - 1 and plain.reduced == 0
    assert 0 < reduced.reduced_seconds <= reduced.seconds and plain.reduced_seconds == 0
    assert reduced.rollouts == 1  # a kernel without edges: one rollout says all
    assert reduced.feasible and is_independent_set(graph, reduced.solution) and is_maximal(graph, reduced.solution)
    assert reduced.objective == reduced.solution.sum() >= greedy_min_degree(graph).sum()
    assert reduced.objective >= plain.objective


def test_the_kernel_and_the_renumbering_together_give_rows_in_the_graphs_own_order():
    graph = erdos_renyi(60_000, 3, seed=3)  # above the renumbering threshold, a kernel of about half the nodes
    rng = np.random.default_rng(0)
    scrambled = rng.permutation(graph.num_nodes)
    shuffled = Graph(scrambled[graph.edge_index], graph.num_nodes)
    solution, _ = predict_graph(BUILT_IN, shuffled, Decoding(rollouts=1, max_passes=3))
    assert 0 < solution.reduced < shuffled.num_nodes
    assert solution.feasible and is_independent_set(shuffled, solution.solution)
    assert solution.objective == solution.solution.sum()


@pytest.mark.parametrize("graph", sparse_tiny_graphs()[::3], ids=lambda g: f"{g.num_nodes}n{g.num_edges}e")
def test_the_mvc_kernel_lifts_a_smallest_cover_of_the_kernel_to_a_smallest_cover_of_the_graph(graph):
    kernel = mvc_kernel(graph)
    cover = kernel.lift(~maximum_set(kernel.graph))
    src, dst = graph.edge_index
    assert (cover[src] | cover[dst]).all()
    assert cover.sum() == graph.num_nodes - maximum_set(graph).sum()
    assert kernel.measure(cover) == (float(cover.sum()), True)


def test_predict_mvc_uses_the_kernel_and_the_weighted_cover_does_not():
    graph = barabasi_albert(3000, 2, seed=6)
    _, cover = predict("mvc", graph)
    assert cover.reduced == graph.num_nodes - 1 and cover.feasible
    assert cover.objective == graph.num_nodes - mis_kernel(graph).lift(np.ones(1, dtype=bool)).sum()  # a smallest cover
    assert WeightedMVCEnv.kernel is None and MVCEnv.kernel is not None and MVCEnv.kernel(graph) is not None


def test_eval_reports_the_nodes_the_kernel_decided(tmp_path):
    from typer.testing import CliRunner

    from graphtransfer.cli import app
    from graphtransfer.graphs import write_edge_list

    graph = barabasi_albert(2000, 2, seed=7)
    write_edge_list(graph, tmp_path / "ba.txt")
    result = CliRunner().invoke(
        app, ["eval", "--model", BUILT_IN, "--graphs", str(tmp_path / "ba.txt"), "--json", str(tmp_path / "e.json")]
    )
    assert result.exit_code == 0, result.output
    row = json.loads((tmp_path / "e.json").read_text())[0]
    decoded = row["decodings"]["local-max"]
    assert decoded["reduced"] == graph.num_nodes - 1 and decoded["feasible"]
    assert 0 < decoded["reduced_seconds"] <= decoded["seconds"]
    greedy = row["baselines"]["greedy-min-degree"]["objective"]
    assert decoded["objective"] >= greedy  # the kernel decided the graph whole: a maximum set


def test_predict_prints_what_the_kernel_decided_and_its_seconds(tmp_path):
    from typer.testing import CliRunner

    from graphtransfer.cli import app
    from graphtransfer.graphs import write_edge_list

    write_edge_list(barabasi_albert(2000, 2, seed=7), tmp_path / "ba.txt")
    result = CliRunner().invoke(
        app, ["predict", "--model", BUILT_IN, "--graph", str(tmp_path / "ba.txt"), "--out", str(tmp_path / "s.csv")]
    )
    assert result.exit_code == 0, result.output
    assert re.search(r"exact reductions decided 1,999 of 2,000 nodes in \d+\.\d\d s before the policy ran", result.output), result.output


@pytest.mark.parametrize("block", [1, 5, 1 << 16])
def test_the_kernels_edges_are_renumbered_block_by_block_as_all_at_once(block, monkeypatch):
    # blocks smaller than the edges, one that does not divide them, and one larger than all of them
    rng = np.random.default_rng(3)
    edge_index = rng.integers(0, 50, size=(2, 203))
    kept = rng.random(203) > 0.3
    position = rng.permutation(50)
    new_src, new_dst = rng.integers(0, 50, size=7), rng.integers(0, 50, size=7)
    monkeypatch.setattr(mis_kernel_module, "RENUMBER_BLOCK", block)
    edges = mis_kernel_module._renumbered_edges(edge_index, kept, new_src, new_dst, position)
    expected = position[np.concatenate([edge_index[:, kept], np.stack([new_src, new_dst])], axis=1)]
    assert edges.dtype == np.int64 and np.array_equal(edges, expected)


@pytest.mark.parametrize("make", [lambda: erdos_renyi(3_000, 3.0, 5), lambda: random_geometric(2_000, 12.0, 5)])
def test_a_kernels_edges_come_by_destination_and_the_env_reads_them_without_a_copy(make):
    """Rounds only (sparse ER) or the rules too (geometric): the kernel's graph lists its edges by
    destination, every edge once each way, so the env's ``by_destination`` hands back its own array."""
    from graphtransfer.tasks.mis.step import by_destination

    graph = make()
    shuffled = graph.edge_index[:, np.random.default_rng(0).permutation(graph.edge_index.shape[1])]
    kernel = mis_kernel(type(graph)(shuffled, graph.num_nodes, graph.name))
    assert kernel is not None and kernel.graph.edge_index.shape[1]
    src, dst = kernel.graph.edge_index
    assert (np.diff(dst) >= 0).all()
    assert sorted(zip(src.tolist(), dst.tolist(), strict=True)) == sorted(zip(dst.tolist(), src.tolist(), strict=True))
    assert by_destination(kernel.graph) is kernel.graph.edge_index
