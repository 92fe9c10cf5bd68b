import json
import pickle
import sys

import numpy as np
import pytest

from graphtransfer.errors import GraphInputError, GraphInputWarning
from graphtransfer.graphs import (
    Graph,
    barabasi_albert,
    delaunay,
    erdos_renyi,
    generate,
    load_graph,
    load_graphs,
    random_geometric,
    read_edge_list,
    read_graph,
    read_npz,
    spec_for,
    write_edge_list,
    write_npz,
)
from graphtransfer.graphs.graph import CSR_KEPT_BELOW, TORCH_SORT_FROM, _counting_order, from_edges, stable_order


def edge_set(graph):
    return {tuple(e) for e in graph.edge_index.T.tolist()}


def test_edge_list_remaps_ids_and_drops_loops_and_duplicates(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("# a comment\n% another\n100\t200\n200   300\n\n300,100\n100 100\n200 100\n")
    with pytest.warns(UserWarning, match="dropped 1 self-loop.*1 duplicate"):
        graph = read_edge_list(path)
    assert graph.num_nodes == 3
    assert edge_set(graph) == {(0, 1), (1, 0), (1, 2), (2, 1), (0, 2), (2, 0)}
    assert graph.edge_index.dtype == np.int64


def test_edge_list_ignores_a_weight_column(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("0 1 0.5\n1 2 3\n")
    assert read_edge_list(path).num_edges == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty"),
        ("# only comments\n", "no edge lines"),
        ("1 2\n3 x\n", "line 2: 'x' is not an integer"),
        ("1 2\n3 -4\n", "line 2: negative node id -4"),
    ],
)
def test_edge_list_errors_name_the_problem(tmp_path, text, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(GraphInputError, match=message):
        read_edge_list(path)


def test_npz_and_edge_list_round_trip(tmp_path):
    graph = barabasi_albert(200, 3, seed=3)  # no isolated nodes, which an edge list cannot hold
    write_npz(graph, tmp_path / "g.npz")
    write_edge_list(graph, tmp_path / "g.txt")
    assert edge_set(read_npz(tmp_path / "g.npz")) == edge_set(graph)
    assert edge_set(read_edge_list(tmp_path / "g.txt")) == edge_set(graph)


def test_npz_refuses_pickled_arrays(tmp_path):
    np.savez(tmp_path / "evil.npz", edge_index=np.array([object()], dtype=object))
    with pytest.raises(GraphInputError, match="holds Python objects"):
        read_npz(tmp_path / "evil.npz")


@pytest.mark.parametrize(
    "make",
    [
        lambda s: erdos_renyi(500, 6.0, s),
        lambda s: barabasi_albert(500, 3, s),
        lambda s: random_geometric(500, 6.0, s),
        lambda s: delaunay(500, s),
    ],
)
def test_generators_are_seeded_simple_and_undirected(make):
    a, b, c = make(1), make(1), make(2)
    assert np.array_equal(a.edge_index, b.edge_index)
    assert not np.array_equal(a.edge_index, c.edge_index)
    src, dst = a.edge_index
    assert (src != dst).all()
    assert edge_set(a) == {(v, u) for u, v in edge_set(a)}
    assert len(edge_set(a)) == a.edge_index.shape[1]
    assert 4.0 < a.degrees().mean() < 8.0


def test_delaunay_is_a_connected_planar_mesh():
    graph = generate(spec_for("delaunay", 2000, seed=3))
    assert graph.num_edges <= 3 * graph.num_nodes - 6  # planar
    assert graph.num_edges > 2.9 * graph.num_nodes - 100  # triangulated: only the hull's triangles are missing
    assert graph.degrees().min() >= 2
    with pytest.raises(GraphInputError, match="fixed density"):
        spec_for("delaunay", 100, seed=0, avg_degree=6.0)


def test_barabasi_albert_has_hubs():
    graph = barabasi_albert(5000, 3, seed=0)
    assert graph.degrees().max() > 20 * graph.degrees().mean() / 3


def test_million_edge_list_round_trips(tmp_path):
    """Correctness at the size the bulk parser is for; its speed is measured in bench/parse_speed.py."""
    graph = erdos_renyi(250_000, 8.0, seed=0)
    with pytest.warns(GraphInputWarning, match="81 isolated node"):
        write_edge_list(graph, tmp_path / "big.txt")
    parsed = read_edge_list(tmp_path / "big.txt")
    assert parsed.num_edges == 1_000_000 and parsed.num_nodes == 250_000 - 81


def test_sample_set_names_resolve():
    small = load_graphs("small")
    assert 16 <= len(small) <= 32
    assert all(20 <= g.num_nodes <= 60 for g in small)
    assert len({g.name.split("-")[0] for g in small}) >= 3  # families: er, ba, rgg


def test_generator_spec_is_cached(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"generator": "erdos_renyi", "num_nodes": 300, "avg_degree": 4.0, "seed": 1}))
    first = read_graph(spec)
    assert list((tmp_path / "cache").glob("spec-*.npz"))
    assert np.array_equal(read_graph(spec).edge_index, first.edge_index)


def test_unknown_names_and_missing_files_are_clear_errors(tmp_path):
    with pytest.raises(GraphInputError, match="no such file, folder or sample set.*small"):
        load_graphs("no-such-set")
    with pytest.raises(GraphInputError, match="holds no graph files"):
        load_graphs(tmp_path)
    with pytest.raises(GraphInputError, match="expected one"):
        load_graph("small")


@pytest.mark.parametrize(("size", "high"), [(0, 1), (1, 1), (7, 1), (5_000, 500), (200_000, 3_000_000), (1_000, 2**31 - 1)])
def test_stable_order_is_numpys_stable_argsort(size, high):
    values = np.random.default_rng(size).integers(0, high, size)  # ties below 2^16 and above (two radix passes)
    np.testing.assert_array_equal(stable_order(values), np.argsort(values, kind="stable"))


@pytest.mark.parametrize("in_order", [1.0, 0.9, 0.75, 0.5])
@pytest.mark.parametrize("size", [0, 1, 5_000, TORCH_SORT_FROM + 10])
def test_stable_order_of_values_partly_in_order_is_numpys_stable_argsort(in_order, size):
    """Values in order for their first ``in_order`` share (a kernel's edges by destination, then those
    its folds added): their own order, a merge with the rest sorted, or a sort; ties across the
    prefix and the rest keep their positions' order. With torch loaded, as in a solve."""
    import torch  # noqa: F401 (loaded: the rest's sort may be torch's)

    rng = np.random.default_rng(size)
    prefix = int(in_order * size)
    values = np.concatenate([np.sort(rng.integers(0, 1_000, prefix)), rng.integers(0, 1_000, size - prefix)])
    np.testing.assert_array_equal(stable_order(values), np.argsort(values, kind="stable"))


def test_stable_order_by_torchs_sort_is_numpys_stable_argsort():
    import torch  # loaded, as in a solve: stable_order takes torch's sort from TORCH_SORT_FROM values

    values = np.random.default_rng(0).integers(0, 10**8, TORCH_SORT_FROM)  # too wide a range for the counting sort
    assert "torch" in sys.modules and torch.get_num_threads() >= 1 and _counting_order(values) is None
    np.testing.assert_array_equal(stable_order(values), np.argsort(values, kind="stable"))


@pytest.mark.parametrize(("size", "high"), [(5_000, 3), (5_000, 19_999), (1 << 20, 250_000), (1 << 20, 1 << 16)])
def test_the_counting_sort_is_numpys_stable_argsort(size, high):
    """Node ids as a graph's edges hold them: many ties, a range below four times their count."""
    values = np.random.default_rng(size + high).integers(0, high, size)
    found = _counting_order(values)
    assert found is not None and found.dtype == np.int64
    np.testing.assert_array_equal(found, np.argsort(values, kind="stable"))
    np.testing.assert_array_equal(stable_order(values), found)


def test_edges_given_once_sorted_build_the_graph_that_any_order_with_repeats_builds():
    """write_npz's one-direction sorted edges skip the deduplicating sort; the graph is the one
    that the same edges in any order, in both directions, with repeats and a self-loop give."""

    graph = erdos_renyi(500, 6.0, 3)
    lo, hi = graph.edge_index[:, : graph.num_edges]
    fast, loops, repeats = from_edges(lo, hi, 500)
    rng = np.random.default_rng(0)
    src, dst = np.concatenate([hi, lo, lo[:40], [7]]), np.concatenate([lo, hi, hi[:40], [7]])
    order = rng.permutation(src.size)
    slow, slow_loops, slow_repeats = from_edges(src[order], dst[order], 500)
    assert (loops, repeats) == (0, 0) and (slow_loops, slow_repeats) == (1, graph.num_edges + 40)
    assert np.array_equal(fast.edge_index, slow.edge_index) and np.array_equal(fast.edge_index, graph.edge_index)
    looped, loops, _ = from_edges(np.append(lo, 9), np.append(hi, 9), 500)  # sorted but for a self-loop at the end
    assert loops == 1 and np.array_equal(looped.edge_index, graph.edge_index)


@pytest.mark.parametrize("order", ["as generated", "by source", "by destination"])
def test_the_adjacency_names_each_nodes_neighbours_whatever_the_edges_order(order):
    """Edges already ordered by source or by destination are read without a sort (both directions
    are stored, so the edges into a node name its neighbours); any order gives the same neighbours."""
    graph = erdos_renyi(300, 6.0, 4)
    rows = {"as generated": None, "by source": 0, "by destination": 1}[order]
    edges = graph.edge_index if rows is None else graph.edge_index[:, np.argsort(graph.edge_index[rows], kind="stable")]
    indptr, indices = Graph(edges, graph.num_nodes).csr()
    expected = [set() for _ in range(graph.num_nodes)]
    for a, b in graph.edge_index.T.tolist():
        expected[a].add(b)
    assert np.array_equal(np.diff(indptr), graph.degrees())
    assert [set(indices[indptr[v] : indptr[v + 1]].tolist()) for v in range(graph.num_nodes)] == expected


def test_a_graph_keeps_its_csr_below_the_bound_and_is_pickled_without_it():
    """A solve reads the input graph's CSR twice (the kernel before the first pass, the nearly bipartite
    contest): made once and kept on the graph; a worker process gets the graph without it and makes
    the same; a graph of CSR_KEPT_BELOW nodes or more makes it anew each time."""
    graph = erdos_renyi(500, 6.0, 0)
    first = graph.csr()
    assert graph.csr() is first
    shipped = pickle.loads(pickle.dumps(graph))
    assert "_csr" not in shipped.__dict__
    for made, kept in zip(shipped.csr(), first, strict=True):
        np.testing.assert_array_equal(made, kept)
    large = Graph(np.array([[0, 1], [1, 0]]), CSR_KEPT_BELOW)
    assert large.csr() is not large.csr()


def _undirected(edges: list[tuple[int, int]], num_nodes: int) -> Graph:
    src, dst = np.array(edges).T
    return from_edges(src, dst, num_nodes)[0]


def test_a_graph_replaced_by_its_kernel_lets_its_csr_go_and_one_solved_as_it_is_keeps_it():
    """The solve's kernel reads the given graph's CSR, the nearly bipartite contest reads it again where
    the kernel decided nothing (the graph solved is the given one); where the kernel replaced the graph
    (its rules decided nodes) or a renumbering did, the CSR kept on it goes."""
    from graphtransfer.checkpoint import read_checkpoint
    from graphtransfer.solve.ordering import solving_order
    from graphtransfer.tasks.mis.kernel import mis_kernel

    config = read_checkpoint("mis").config
    n = 2_000
    kept = _undirected([(i, (i + s) % n) for i in range(n) for s in (1, 4)], n)  # 4-regular, no triangle, not bipartite
    made = kept.csr()
    order = solving_order(config, kept)
    assert order.graph is kept and order.kernel is None and kept.csr() is made
    cliques = _undirected([(5 * c + a, 5 * c + b) for c in range(n // 5) for a in range(5) for b in range(a + 1, 5)], n)
    made = cliques.csr()
    assert mis_kernel(cliques) is not None  # the rules node by node decide every clique (no node of degree <= 2)
    assert cliques.csr() is not made
    path = _undirected([(i, i + 1) for i in range(n - 1)], n)
    made = path.csr()
    order = solving_order(config, path)
    assert order.graph is not path and path.csr() is not made


@pytest.mark.parametrize("family", ["er", "ba", "shuffled", "mostly ordered"])
def test_edges_by_destination_and_the_csr_are_those_of_a_stable_argsort(family):
    """Grouped by a counting sort (or merged, or gathered): the edges by destination and the CSR adjacency are
    exactly those a stable argsort gives, so a solve reads its graphs in the same order whichever sort made it."""
    from graphtransfer.graphs.graph import edges_by_destination

    graph = barabasi_albert(3_000, 3, 1) if family == "ba" else erdos_renyi(3_000, 6.0, 2)
    edges = graph.edge_index
    if family == "shuffled":
        edges = edges[:, np.random.default_rng(0).permutation(edges.shape[1])]
    if family == "mostly ordered":  # a kernel's edges: by destination, then a few a fold added
        ordered = edges[:, np.argsort(edges[1], kind="stable")]
        edges = np.concatenate([ordered, edges[:, :200]], axis=1)
    expected = edges[:, np.argsort(edges[1], kind="stable")]
    found = edges_by_destination(np.ascontiguousarray(edges), graph.num_nodes)
    assert found.flags.c_contiguous and np.array_equal(found, expected)
    indptr, indices = Graph(np.ascontiguousarray(edges), graph.num_nodes).csr()
    np.testing.assert_array_equal(indptr[1:], np.cumsum(np.bincount(edges[0], minlength=graph.num_nodes)))
    np.testing.assert_array_equal(indices, edges[1][np.argsort(edges[0], kind="stable")])
