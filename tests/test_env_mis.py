import itertools

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from graphtransfer.graphs import barabasi_albert, delaunay, erdos_renyi, load_graphs, random_geometric
from graphtransfer.tasks.mis.constants import DEFER, EXCLUDE, IN_SET, INCLUDE, OUT, UNDECIDED
from graphtransfer.tasks.mis.domination import closes_wedges, neighbourhood_masks, pendant_dominated
from graphtransfer.tasks.mis.env import MISEnv, dominated, is_independent_set, reduction_actions
from graphtransfer.tasks.mis.step import by_destination, mis_step

from .brute_force import TINY_GRAPHS, max_independent_set_size
from .conftest import graph_from_pairs


def reference_step(graph, status, action):
    """The rules of MISEnv written as plain loops, one node and one edge at a time."""
    neighbours = {v: set() for v in range(graph.num_nodes)}
    for u, v in graph.edge_index.T.tolist():
        neighbours[u].add(v)
    wants = [status[v] == UNDECIDED and action[v] == INCLUDE for v in range(graph.num_nodes)]
    joins = [wants[v] and not any(wants[u] for u in neighbours[v]) for v in range(graph.num_nodes)]
    new = list(status)
    for v in range(graph.num_nodes):
        if joins[v]:
            new[v] = IN_SET
    for v in range(graph.num_nodes):
        if joins[v]:
            for u in neighbours[v]:
                if new[u] == UNDECIDED:
                    new[u] = OUT
    for v in range(graph.num_nodes):
        if action[v] == EXCLUDE and new[v] == UNDECIDED:
            new[v] = OUT
    return np.array(new, dtype=np.int8), sum(joins)


@pytest.mark.parametrize("seed", range(30))
def test_vectorized_step_matches_reference(seed):
    rng = np.random.default_rng(seed)
    graph = erdos_renyi(int(rng.integers(3, 9)), 2.5, seed)
    status = rng.choice([UNDECIDED, UNDECIDED, IN_SET, OUT], graph.num_nodes).astype(np.int8)
    action = rng.integers(0, 3, graph.num_nodes)
    expected, expected_added = reference_step(graph, status, action)
    got, added = mis_step(graph.edge_index, status, action)
    assert np.array_equal(got, expected)
    assert added == expected_added


def test_adjacent_includes_roll_back(path5):
    status = np.zeros(5, dtype=np.int8)
    got, added = mis_step(path5.edge_index, status, np.array([INCLUDE, INCLUDE, DEFER, DEFER, INCLUDE]))
    assert added == 1
    assert got.tolist() == [UNDECIDED, UNDECIDED, UNDECIDED, OUT, IN_SET]


def test_every_episode_ends_with_an_independent_set_and_rewards_sum_to_its_fraction():
    graph = barabasi_albert(40, 2, seed=0)
    env = MISEnv([graph], horizon=50)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    total, done = 0.0, False
    while not done:
        _, reward, terminated, truncated, _ = env.step(rng.integers(0, 3, env.max_nodes))
        total += reward
        done = terminated or truncated
    assert is_independent_set(graph, env.solution())
    assert total == pytest.approx(env.solution().sum() / graph.num_nodes)


def test_observation_is_padded_to_the_largest_graph():
    small, large = graph_from_pairs([(0, 1)], 2), erdos_renyi(30, 3.0, 0)
    env = MISEnv([small, large])
    for seed in range(10):
        obs, _ = env.reset(seed=seed)
        n, e = int(obs["num_nodes"][0]), int(obs["num_edges"][0])
        assert obs["x"].shape == (30, MISEnv.num_features)
        assert obs["edge_index"].shape == (2, large.edge_index.shape[1])
        assert obs["edge_index"].dtype == np.int64
        assert not obs["x"][n:].any()
        assert obs["edge_index"][:, :e].max() < n


def test_features_track_live_degree(star5):
    env = MISEnv([star5])
    obs, _ = env.reset(seed=0)
    draw = obs["x"][:, 4]
    assert ((draw >= 0) & (draw < 1)).all()
    assert obs["x"][:, 3].tolist() == pytest.approx((np.log1p([4, 1, 1, 1, 1]) + 0.3 * draw).tolist())
    obs, *_ = env.step(np.array([DEFER, INCLUDE, DEFER, DEFER, DEFER]))
    assert obs["x"][:, 1].tolist() == [0, 1, 0, 0, 0]  # leaf 1 is in the set
    live_degree = obs["x"][:, 3] - 0.3 * obs["x"][:, 4]
    assert live_degree.tolist() == pytest.approx([0, 0, 0, 0, 0], abs=1e-6)  # centre excluded, leaves isolated
    assert int(obs["num_edges"][0]) == 0  # the residual graph has no edges left


def test_the_caro_wei_cost_follows_the_residual_graph(path5):
    """0 - 1 - 2 - 3 - 4: a node's cost is 1 / (d + 1) summed over itself and its neighbours."""
    env = MISEnv([path5])
    obs, _ = env.reset(seed=0)
    ends, inner = 1 / 2 + 1 / 3, 1 / 3 + 1 / 2 + 1 / 3
    assert obs["x"][:, 5].tolist() == pytest.approx(np.log([ends, inner, 1.0, inner, ends]).tolist())
    obs, *_ = env.step(np.array([INCLUDE, DEFER, DEFER, DEFER, DEFER]))  # 0 joins, 1 leaves: 2 - 3 - 4 is left
    assert obs["x"][:, 5].tolist() == pytest.approx([0, 0, np.log(1 / 2 + 1 / 3), np.log(1 / 3 + 1), np.log(1 / 2 + 1 / 3)])


def test_the_caro_wei_cost_keeps_its_scale_on_dense_graphs():
    """About 1 on a random graph of any density, while log(1 + degree) grows with it."""
    for degree in (4.0, 64.0):
        obs, _ = MISEnv([erdos_renyi(2000, degree, 0)]).reset(seed=0)
        assert abs(float(np.median(obs["x"][:2000, 5]))) < 0.1, degree


def test_passes_sb3_and_gymnasium_checkers():
    graphs = [erdos_renyi(n, 3.0, n) for n in (10, 20)]
    sb3_check_env(MISEnv(graphs), warn=False)
    gym_check_env(MISEnv(graphs))


def test_all_actions_on_a_triangle_give_independent_sets():
    triangle = graph_from_pairs([(0, 1), (1, 2), (0, 2)], 3)
    for action in itertools.product(range(3), repeat=3):
        status, _ = mis_step(triangle.edge_index, np.zeros(3, dtype=np.int8), np.array(action))
        assert is_independent_set(triangle, status == IN_SET)


def test_observation_shows_only_edges_between_undecided_nodes(path5):
    env = MISEnv([path5])
    env.reset(seed=0)
    obs, *_ = env.step(np.array([INCLUDE, DEFER, DEFER, DEFER, DEFER]))
    # 0 in the set, 1 excluded: 2 - 3 - 4 remain, both directions of two edges.
    edges = obs["edge_index"][:, : int(obs["num_edges"][0])]
    assert {tuple(e) for e in edges.T.tolist()} == {(2, 3), (3, 2), (3, 4), (4, 3)}
    assert env.active_nodes().tolist() == [False, False, True, True, True]


def test_gymnasium_make_without_graphs_samples_the_small_set():
    import gymnasium

    env = gymnasium.make("graphtransfer/MIS-v0")
    assert len(env.unwrapped.graphs) == len(load_graphs("small"))
    named = gymnasium.make("graphtransfer/MVC-v0", graphs="small")
    assert named.unwrapped.max_nodes == env.unwrapped.max_nodes


@pytest.mark.parametrize(
    ("script", "env_id"),
    [
        ("import gymnasium, graphtransfer", "graphtransfer/MIS-v0"),
        ("import graphtransfer, gymnasium", "graphtransfer.tasks:graphtransfer/MIS-v0"),
    ],
)
def test_gymnasium_finds_the_ids_after_import_graphtransfer(script, env_id):
    import subprocess
    import sys

    probe = f"{script}; env = gymnasium.make({env_id!r}); print(env.unwrapped.max_nodes)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == 60  # the small sample set's largest graph


def test_isolated_nodes_join_and_dominated_nodes_leave(path5, star5):
    assert reduction_actions(path5.edge_index, 5).tolist() == [DEFER, EXCLUDE, DEFER, EXCLUDE, DEFER]  # a pendant's neighbour
    assert reduction_actions(star5.edge_index, 5).tolist() == [EXCLUDE] + [DEFER] * 4  # the leaves join next pass, all of them
    edge_and_loner = graph_from_pairs([(0, 1)], 3)
    assert reduction_actions(edge_and_loner.edge_index, 3).tolist() == [DEFER, EXCLUDE, INCLUDE]  # an isolated edge: the lower id stays
    triangle = graph_from_pairs([(0, 1), (1, 2), (0, 2)], 3)
    assert reduction_actions(triangle.edge_index, 3).tolist() == [DEFER, EXCLUDE, EXCLUDE]  # equal neighbourhoods: the lowest id stays


def reference_dominated(graph):
    closed = [{v} for v in range(graph.num_nodes)]
    for u, v in graph.edge_index.T.tolist():
        closed[u].add(v)
    out = np.zeros(graph.num_nodes, dtype=bool)
    for u, v in graph.edge_index.T.tolist():
        out[u] |= closed[v] < closed[u] or (closed[v] == closed[u] and v < u)
    return out


@pytest.mark.parametrize("words", [1, 3, None])
def test_domination_matches_the_neighbourhood_sets_whatever_the_masks_width(words):
    """One mask word on graphs of degree 8 sets most bits, so the exact check does the work; more
    words filter more; the answer must not change."""
    for seed in range(40):
        graph = erdos_renyi(14, (1.0, 3.0, 6.0, 9.0)[seed % 4], seed)
        shuffled = graph.edge_index[:, np.random.default_rng(seed).permutation(graph.edge_index.shape[1])]  # any edge order
        degree = np.bincount(shuffled[0], minlength=graph.num_nodes)
        assert np.array_equal(dominated(shuffled, degree, words), reference_dominated(graph)), seed


def triangle_free(graph) -> bool:
    neighbours = [set() for _ in range(graph.num_nodes)]
    for u, v in graph.edge_index.T.tolist():
        neighbours[u].add(v)
    return not any(neighbours[u] & neighbours[v] for u, v in graph.edge_index.T.tolist())


def test_on_graphs_without_triangles_the_pendants_dominate_every_dominated_node():
    """Trees, sparse random graphs without a triangle, an isolated edge: the pendant rule finds
    what the full check finds; with a triangle it finds less (a subset: still exact)."""
    rng = np.random.default_rng(0)
    checked = 0
    for seed in range(60):
        graph = erdos_renyi(30, (1.0, 2.0, 3.0)[seed % 3], seed)
        degree = np.bincount(graph.edge_index[0], minlength=graph.num_nodes)
        full, pendants = dominated(graph.edge_index, degree), pendant_dominated(graph.edge_index, degree)
        assert not (pendants & ~full).any(), seed  # never more than the full check
        assert np.array_equal(pendant_dominated(by_destination(graph), degree), pendants), seed  # the env's order: its own path
        if triangle_free(graph):
            checked += 1
            assert np.array_equal(pendants, full), seed
            shuffled = graph.edge_index[:, rng.permutation(graph.edge_index.shape[1])]
            assert np.array_equal(reduction_actions(shuffled, 30, triangles=False), reduction_actions(shuffled, 30)), seed
    assert checked >= 15
    edge = graph_from_pairs([(0, 1)], 2)
    assert pendant_dominated(edge.edge_index, np.array([1, 1])).tolist() == [False, True]  # the lower id stays


def test_wedges_close_on_geometric_graphs_and_meshes_not_on_random_ones():
    closes = {
        name: closes_wedges(g.edge_index, g.num_nodes)
        for name, g in [
            ("er", erdos_renyi(2000, 8.0, 0)),
            ("ba", barabasi_albert(2000, 4, 0)),
            ("rgg", random_geometric(2000, 8.0, 0)),
            ("dl", delaunay(2000, 0)),
        ]
    }
    assert closes == {"er": False, "ba": False, "rgg": True, "dl": True}


def test_an_env_reads_whether_each_of_its_graphs_has_triangles_once():
    env = MISEnv([random_geometric(300, 8.0, 1), erdos_renyi(300, 8.0, 1)])
    nothing = np.empty((2, 0), dtype=np.int64)
    env.reset(seed=0, options={"graph_index": 0})
    assert env.has_triangles(env.graphs[0].edge_index, 300) and env.has_triangles(nothing, 300)  # kept
    env.reset(seed=1, options={"graph_index": 1})
    assert not env.has_triangles(env.graphs[1].edge_index, 300)  # another graph reads its own
    env.reset(seed=2, options={"graph_index": 0})
    assert env.has_triangles(nothing, 300)  # and a graph read before is not read again


@pytest.mark.parametrize("words", [1, 2, 5])
def test_a_nodes_mask_is_the_or_of_its_closed_neighbourhoods_bits_in_blocks_as_whole(words, monkeypatch):
    graph = erdos_renyi(40, 6.0, seed=words)
    order = np.argsort(graph.edge_index[1], kind="stable")
    src, degree = graph.edge_index[0, order], graph.degrees()
    own = neighbourhood_masks(np.empty(0, dtype=np.int64), np.zeros(graph.num_nodes, dtype=np.int64), words)  # each node's bit alone
    assert all(sum(bin(int(word)).count("1") for word in row) == 1 for row in own)
    expected = own.copy()
    for u, v in graph.edge_index.T.tolist():
        expected[v] |= own[u]
    whole = neighbourhood_masks(src, degree, words)
    monkeypatch.setattr("graphtransfer.tasks.mis.domination.MASK_BLOCK_NODES", 7)
    assert np.array_equal(whole, expected) and np.array_equal(neighbourhood_masks(src, degree, words), expected)


def residual(edge_index: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The edges among the nodes ``keep`` marks, renumbered ``0..k-1`` in order, by destination (as the env shows them)."""
    src, dst = edge_index
    new_id = np.cumsum(keep) - 1
    kept = keep[src] & keep[dst]
    edges = np.stack([new_id[src[kept]], new_id[dst[kept]]])
    return edges[:, np.argsort(edges[1], kind="stable")]


@pytest.mark.parametrize("family", ["rgg", "delaunay", "er"])
def test_domination_around_the_touched_nodes_is_the_whole_graphs(family, monkeypatch):
    """A graph less its dominated nodes and some others: the pairs around the nodes that lost a
    neighbour find what a check of every pair finds, in one block of masks or several."""
    rng = np.random.default_rng(7)
    make = {
        "rgg": lambda s: random_geometric(400, 24.0, s),
        "delaunay": lambda s: delaunay(400, s),
        "er": lambda s: erdos_renyi(60, 20.0, s),
    }
    checked = 0
    for seed in range(12):
        graph = make[family](seed)
        edges = by_destination(graph)
        while edges.shape[1]:
            n = int(edges.max()) + 1
            degree = np.bincount(edges[1], minlength=n)
            before = dominated(edges, degree)
            gone = before | (rng.random(n) < 0.05)  # the dominated nodes leave, and a few others, as after a pass
            keep = ~gone
            edges = residual(edges, keep)
            if not keep.any():
                break
            left = np.bincount(edges[1], minlength=int(keep.sum()))
            touched = left < degree[keep]
            if seed % 2:
                monkeypatch.setattr("graphtransfer.tasks.mis.domination.MASK_BLOCK_NODES", 5)
            full = dominated(edges, left)
            assert np.array_equal(dominated(edges, left, touched=touched), full), (family, seed)
            monkeypatch.undo()
            checked += int(full.any())
    assert checked >= 5


def test_the_envs_domination_checks_after_the_first_read_only_the_touched_nodes_and_agree():
    """An episode of passes: each pass's exact actions equal a check of the whole residual graph,
    also where a caller did not apply the last check's exclusions (the env checks everything then)."""
    rng = np.random.default_rng(3)
    graph = random_geometric(600, 30.0, 1)
    env = MISEnv([graph], horizon=400)
    env.reset(seed=0)
    partial = 0
    while (env.status == UNDECIDED).any():
        undecided = env.status == UNDECIDED
        edges = residual(by_destination(graph), undecided)
        n = int(undecided.sum())
        before = env._last_check
        actions = env.exact_actions(edges, n)
        assert np.array_equal(actions, reduction_actions(edges, n)), env.steps
        partial += before is not None and not (env.status[before.leaving] == UNDECIDED).any()
        if env.steps % 5 == 4:  # a caller that ignores the exclusions: the next check must not trust this one
            actions[actions == EXCLUDE] = DEFER
        commit = rng.random(n) < 0.02
        actions[(actions == DEFER) & commit] = INCLUDE
        step = np.full(graph.num_nodes, DEFER, dtype=np.int64)
        step[np.flatnonzero(undecided)] = actions
        env.step(step)
    assert partial >= 5


def test_the_reductions_never_lose_the_largest_set():
    """On tiny graphs (brute force): the nodes the rules include, plus the largest set of what is
    left once they and their neighbours and the excluded nodes are gone, is a largest set."""
    for graph in TINY_GRAPHS + [erdos_renyi(12, (1.5, 2.5, 4.0)[seed % 3], 100 + seed) for seed in range(12)]:
        actions = reduction_actions(graph.edge_index, graph.num_nodes)
        include, src, dst = actions == INCLUDE, *graph.edge_index
        assert not (include[src] & include[dst]).any()
        gone = include | (actions == EXCLUDE)
        gone[dst[include[src]]] = True
        keep = np.flatnonzero(~gone)
        new_id = np.cumsum(~gone) - 1
        left = [(int(new_id[u]), int(new_id[v])) for u, v in zip(src, dst, strict=True) if u < v and not (gone[u] or gone[v])]
        rest = max_independent_set_size(graph_from_pairs(left, keep.size)) if keep.size else 0
        assert include.sum() + rest == max_independent_set_size(graph), graph.name
