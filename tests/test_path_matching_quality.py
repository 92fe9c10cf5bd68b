"""Path and matching quality (issue 30) and the user's own weights (issue 32): every route
arrives, a trained tiny policy routes within a ratio of Dijkstra on a larger geometric graph,
the matching env's gain features beat greedy-by-weight, and weights are read from graph files."""

import numpy as np
import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.errors import GraphFileError, GraphInputWarning, UsageError
from graphtransfer.graphs import (
    barabasi_albert,
    delaunay,
    edge_weights,
    erdos_renyi,
    load_graph,
    random_geometric,
    weights_source,
)
from graphtransfer.graphs.formats.npz import write_npz
from graphtransfer.graphs.weights import node_weights
from graphtransfer.tasks import MatchingEnv, PathEnv
from graphtransfer.tasks.matching.baselines import exact_blossom, greedy_by_gain, greedy_by_weight
from graphtransfer.tasks.matching.rules import gains, twin_edges
from graphtransfer.tasks.matching.step import TAKE, WAIT
from graphtransfer.tasks.path.baselines import dijkstra_route
from graphtransfer.tasks.path.env import without_loops

runner = CliRunner()
NAME = lambda graph: graph.name  # noqa: E731


def drive(env, choose):
    """Run ``env`` from its seeded reset with ``choose(env, obs) -> action`` until the episode ends; the number of steps."""
    obs, _ = env.reset(seed=0)
    done, steps = False, 0
    while not done:
        obs, _, terminated, truncated, _ = env.step(choose(env, obs))
        done, steps = terminated or truncated, steps + 1
    return steps


@pytest.mark.parametrize("graph", [random_geometric(3000, 6.0, 1), barabasi_albert(2000, 2, 0), delaunay(2000, 3)], ids=NAME)
def test_a_route_of_random_allowed_steps_arrives_within_its_budget(graph):
    rng = np.random.default_rng(0)
    env = PathEnv([graph], horizon=2**31 - 1)
    steps = drive(env, lambda env, obs: int(rng.choice(np.flatnonzero(env.action_masks()))))
    assert env.current == env.target and steps <= env.budget
    assert env.feasible(graph, env.solution())
    assert PathEnv.objective(graph, env.solution()) >= env.shortest * (1 - 1e-9)


def test_the_observation_is_the_ball_around_the_current_node_and_does_not_grow_with_the_graph():
    sizes = []
    for n in (2000, 20000):
        env = PathEnv([random_geometric(n, 6.0, 0)])
        obs, _ = env.reset(seed=0)
        active = np.flatnonzero(env.active_nodes())
        edges = obs["edge_index"][:, : int(obs["num_edges"][0])]
        assert np.isin(edges, active).all() and env.current in active
        sizes.append(active.size)
    assert max(sizes) < 200  # radius 4 at average degree 6, at either size


def test_following_the_distance_guide_is_the_shortest_route_and_the_hop_guide_is_not():
    graph = random_geometric(3000, 6.0, 2)

    def follow(env, obs):
        allowed = np.flatnonzero(env.action_masks())
        return int(allowed[np.argmin(obs["x"][allowed, 4] + obs["x"][allowed, 6])])

    env = PathEnv([graph], horizon=2**31 - 1)
    drive(env, follow)
    assert PathEnv.objective(graph, env.solution()) == pytest.approx(PathEnv.objective(graph, dijkstra_route(graph)))
    hops = PathEnv([graph], horizon=2**31 - 1, guide="hops")
    drive(hops, follow)
    assert hops.feasible(graph, hops.solution()) and PathEnv.objective(graph, hops.solution()) > 1.05 * env.shortest
    with pytest.raises(ValueError, match="guide='meters'; choose one of distance, hops"):
        PathEnv([graph], guide="meters")


def test_loops_are_cut_out_of_a_route():
    assert without_loops([1, 2, 3, 2, 4, 5, 1, 6]).tolist() == [1, 6]
    assert without_loops([1, 2, 3, 4, 3, 2, 5]).tolist() == [1, 2, 5]
    assert without_loops([7]).tolist() == [7]


def test_gains_with_no_rounds_are_the_weights_and_one_round_prices_the_next_heaviest_edge():
    graph = load_path_graph([(0, 1, 0.9), (1, 2, 1.0), (2, 3, 0.9)])
    weights, twin = edge_weights(graph), twin_edges(graph)
    live = np.arange(graph.edge_index.shape[1])
    assert np.allclose(gains(graph, weights, twin, live, rounds=0), weights)
    one = dict(zip(map(tuple, graph.edge_index.T.tolist()), gains(graph, weights, twin, live, rounds=1), strict=True))
    assert one[(1, 2)] == pytest.approx(1.0 - 0.9 - 0.9) and one[(0, 1)] == pytest.approx(0.9 - 1.0)
    mate = greedy_by_gain(graph)  # 0.9 + 0.9 beats greedy's 1.0
    assert MatchingEnv.objective(graph, mate) == pytest.approx(1.8)
    assert MatchingEnv.objective(graph, greedy_by_weight(graph)) == pytest.approx(1.0)


def load_path_graph(edges):
    from graphtransfer.graphs.graph import from_edges

    src, dst, weight = np.array(edges).T
    return from_edges(src.astype(int), dst.astype(int), int(max(src.max(), dst.max())) + 1, weights=weight)[0]


@pytest.mark.parametrize("graph", [erdos_renyi(400, 4.0, 0), barabasi_albert(400, 3, 1), random_geometric(400, 8.0, 2)], ids=NAME)
def test_taking_the_edges_of_highest_gain_beats_greedy_by_weight_and_is_a_valid_matching(graph):
    env = MatchingEnv([graph], horizon=256)

    def best_gain(env, obs):
        count = int(obs["num_edges"][0])
        action = np.full(env.max_edges, WAIT)
        attr = obs["edge_attr"][:count]
        action[:count] = np.where((attr[:, 4] > 0) & (attr[:, 5] > 0), TAKE, WAIT)
        return action

    drive(env, best_gain)
    mate = env.solution()
    assert MatchingEnv.feasible(graph, mate)
    greedy = MatchingEnv.objective(graph, greedy_by_weight(graph))
    assert MatchingEnv.objective(graph, mate) >= 1.03 * greedy
    assert MatchingEnv.objective(graph, greedy_by_gain(graph)) >= 1.03 * greedy
    assert MatchingEnv.objective(graph, mate) <= MatchingEnv.objective(graph, exact_blossom(graph).solution) + 1e-9


WEIGHTED_FILES = {
    "edges.txt": "# u v weight\n10 20 2.5\n20 30 1\n10 30 7\n",
    "edges.csv": "10,20,2.5\n20,30,1\n10,30,7\n",
    "g.graph": "% fmt 011: a node weight, then neighbour and edge weight pairs\n3 3 011\n5 2 2.5 3 7\n6 1 2.5 3 1\n7 1 7 2 1\n",
    "g.graphml": '<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
    '<key id="w" for="edge" attr.name="weight" attr.type="double"/><key id="nw" for="node" attr.name="weight"/>'
    '<key id="c" for="node" attr.name="colour"/><graph edgedefault="undirected">'
    '<node id="10"><data key="nw">5</data><data key="c">red</data></node><node id="20"><data key="nw">6</data></node>'
    '<node id="30"><data key="nw"> 7 </data></node>'
    '<edge source="10" target="20"><data key="w">2.5</data></edge><edge source="20" target="30"><data key="w">1</data></edge>'
    '<edge source="10" target="30"><data key="w">7</data></edge></graph></graphml>',
    "g.gml": "graph [ node [ id 10 weight 5 ] node [ id 20 weight 6 ] node [ id 30 weight 7 ]\n"
    "edge [ source 10 target 20 weight 2.5 ] edge [ source 20 target 30 weight 1 ] edge [ source 10 target 30 weight 7 ] ]",
}


@pytest.mark.parametrize("name", sorted(WEIGHTED_FILES))
def test_edge_weights_come_from_the_file(tmp_path, name):
    text = WEIGHTED_FILES[name]
    if name == "g.graph":
        text = text.replace("2.5", "3")  # METIS weights are integers
    (tmp_path / name).write_text(text)
    graph = load_graph(tmp_path / name)
    weight = dict(zip(map(tuple, graph.edge_index.T.tolist()), edge_weights(graph).tolist(), strict=True))
    first = 3.0 if name == "g.graph" else 2.5
    assert weight == {(0, 1): first, (1, 0): first, (0, 2): 7.0, (2, 0): 7.0, (1, 2): 1.0, (2, 1): 1.0}
    assert weights_source(graph) == "edge weights: from the file"
    if name in ("g.graph", "g.gml", "g.graphml"):
        assert node_weights(graph).tolist() == [5.0, 6.0, 7.0] and weights_source(graph, "node") == "node weights: from the file"
    else:
        assert weights_source(graph, "node") == "node weights: hashed from node ids (the file has none)"
    write_npz(graph, tmp_path / "again.npz")  # npz keeps both
    again = load_graph(tmp_path / "again.npz")
    assert np.array_equal(edge_weights(again), edge_weights(graph)) and np.array_equal(node_weights(again), node_weights(graph))


def test_a_file_without_weights_gets_hashed_ones_and_a_gml_with_some_weights_is_warned_of(tmp_path):
    (tmp_path / "plain.txt").write_text("1 2\n2 3\n")
    graph = load_graph(tmp_path / "plain.txt")
    assert weights_source(graph) == "edge weights: hashed from node ids (the file has none)"
    assert edge_weights(graph).dtype == np.float32 and (edge_weights(graph) > 0).all()
    (tmp_path / "some.gml").write_text(
        "graph [ node [ id 1 ] node [ id 2 ] node [ id 3 ] edge [ source 1 target 2 weight 2 ] edge [ source 2 target 3 ] ]"
    )
    with pytest.warns(GraphInputWarning, match="1 of 2 edges have a weight, so the weights are not used; give every edge a weight"):
        assert load_graph(tmp_path / "some.gml").edge_weight is None
    (tmp_path / "bad.gml").write_text('graph [ node [ id 1 ] node [ id 2 ] edge [ source 1 target 2 weight "heavy" ] ]')
    with pytest.raises(GraphFileError, match="edge weight .* is not a number"):
        load_graph(tmp_path / "bad.gml")


def test_matching_and_path_score_the_files_weights(tmp_path):
    graph = random_geometric(300, 6.0, 0)
    ends = graph.edge_index[:, : graph.num_edges].T.tolist()
    weights = np.random.default_rng(0).integers(1, 100, graph.num_edges)
    (tmp_path / "weighted.txt").write_text("".join(f"{u} {v} {w}\n" for (u, v), w in zip(ends, weights, strict=True)))
    weighted = load_graph(tmp_path / "weighted.txt")
    mate = greedy_by_weight(weighted)
    matched = np.flatnonzero(mate > np.arange(mate.size))
    lookup = {(u, v): w for (u, v), w in zip(ends, weights.tolist(), strict=True)}
    file_ids = weighted.ids()
    expected = sum(lookup[tuple(sorted((int(file_ids[u]), int(file_ids[mate[u]]))))] for u in matched)
    assert MatchingEnv.objective(weighted, mate) == expected  # the file's integers, not hashed weights in (0, 1]
    route = dijkstra_route(weighted)[:, 1]
    steps = [lookup[tuple(sorted((int(file_ids[a]), int(file_ids[b]))))] for a, b in zip(route[:-1], route[1:], strict=True)]
    assert PathEnv.objective(weighted, dijkstra_route(weighted)) == sum(steps)


def cli(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def router(tmp_path_factory):
    """A path model trained for a few seconds on 60-node geometric graphs."""
    folder = tmp_path_factory.mktemp("router")
    (folder / "train").mkdir()
    for seed in range(4):
        write_npz(random_geometric(60, 6.0, seed), folder / "train" / f"g{seed}.npz")
    cli("train", "--task", "path", "--graphs", folder / "train", "--steps", TINY_STEPS, *tiny_training(64), "--out", folder / "m")
    return folder / "m"


TINY_STEPS = 3072


def tiny_training(n_steps: int) -> list[str]:
    """The train options of a few seconds' run, on the CPU on every machine: the tests' thresholds are these weights'."""
    return [
        "--n-envs",
        "4",
        "--n-steps",
        str(n_steps),
        "--batch-size",
        "64",
        "--width",
        "16",
        "--no-progress",
        "--threads",
        "1",
        "--device",
        "cpu",
    ]


@pytest.mark.slow
def test_a_tiny_trained_router_arrives_on_a_larger_geometric_graph_within_a_ratio_of_dijkstra(tmp_path, router):
    """Routed zero-shot on 3,000 nodes with the file's own edge lengths; a policy that moved at
    random would go about 4x Dijkstra's length."""
    big = random_geometric(3000, 6.0, 7)
    lengths = np.random.default_rng(1).integers(1, 50, big.num_edges)
    ends = big.edge_index[:, : big.num_edges].T.tolist()
    (tmp_path / "big.txt").write_text("".join(f"{u} {v} {w}\n" for (u, v), w in zip(ends, lengths.tolist(), strict=True)))
    out = cli(
        "predict", "--model", router, "--graph", tmp_path / "big.txt", "--out", tmp_path / "route.csv", "--rollouts", "1", "--deterministic"
    )
    assert "edge weights: from the file" in out and "valid solution: yes" in out
    graph = load_graph(tmp_path / "big.txt")
    env = PathEnv([graph])
    env.reset(seed=0)
    route = read_route(graph, tmp_path / "route.csv")
    assert route[0] == env.source and route[-1] == env.target and len(route) - 1 <= env.budget
    assert PathEnv.objective(graph, np.column_stack([np.arange(route.size), route])) <= 1.5 * env.shortest


def read_route(graph, csv):
    """The route a predict CSV holds (``step,node`` rows in the graph's own ids), as positions."""
    rows = np.loadtxt(csv, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    position = {int(node_id): k for k, node_id in enumerate(graph.ids())}
    return np.array([position[int(node_id)] for node_id in rows[:, 1]])


@pytest.mark.slow
def test_predict_routes_between_the_source_and_target_a_user_names(tmp_path, router):
    (tmp_path / "g.txt").write_text("10 20\n20 30\n30 40\n10 50\n50 40\n70 80\n")  # 70-80 is a component of its own
    out = cli("predict", "--model", router, "--graph", tmp_path / "g.txt", "--out", tmp_path / "r.csv", "--source", 20, "--target", 50)
    assert "edge weights: hashed from node ids (the file has none)" in out and "valid solution: yes" in out
    rows = (tmp_path / "r.csv").read_text().splitlines()
    assert rows[0] == "step,node" and rows[1] == "0,20" and rows[-1].endswith(",50")
    assert "g.txt: edge weights: hashed from node ids (the file has none)" in cli("eval", "--model", router, "--graphs", tmp_path / "g.txt")
    cases = {
        ("--source", "99", "--target", "50"): "--source '99': graph g.txt has no node with that id; its ids are 10..80, not contiguous",
        ("--source", "20", "--target", "NaN"): "--target 'NaN': graph g.txt has no node with that id",
        ("--source", "20", "--target", "20"): "--source and --target are both node '20'; a route needs two different nodes",
        ("--source", "20", "--target", "80"): "--target '80' cannot be reached from --source '20'",
        ("--source", "20"): "--source and --target go together",
    }
    for args, message in cases.items():
        result = runner.invoke(
            app, ["predict", "--model", str(router), "--graph", str(tmp_path / "g.txt"), "--out", str(tmp_path / "x.csv"), *args]
        )
        assert result.exit_code == 2 and message in result.stderr, (args, result.output)
        assert "Traceback" not in result.output and not (tmp_path / "x.csv").exists()


def test_only_the_path_task_takes_a_source_and_target():
    from graphtransfer.config import RunConfig
    from graphtransfer.tasks.factory import inference_env

    with pytest.raises(UsageError, match=r"the task must declare takes_query \(built-in: path\); matching does not"):
        inference_env(RunConfig(task="matching"), erdos_renyi(30, 3.0, 0), query=(0, 1))


@pytest.mark.slow
def test_a_tiny_trained_matching_policy_beats_greedy_by_weight_on_a_larger_graph(tmp_path):
    """Trained for a few seconds on the sample graphs (on the CPU on every machine: the threshold is
    these weights'), run on a 2,000-node graph: the policy takes
    the edges (the env joins them by gain) and does not undo that by skipping; a policy that drew
    its actions at random would give up a third of the edges every pass."""
    cli("train", "--task", "matching", "--graphs", "small", "--steps", "2048", *tiny_training(32), "--out", tmp_path / "m")
    graph = erdos_renyi(2000, 4.0, 5)
    write_npz(graph, tmp_path / "g.npz")
    out = cli("predict", "--model", tmp_path / "m", "--graph", tmp_path / "g.npz", "--out", tmp_path / "mates.csv", "--deterministic")
    assert "edge weights: hashed from node ids (the file has none)" in out and "valid solution: yes" in out
    objective = float(out.split("objective ")[1].split()[0])
    assert objective >= 1.02 * MatchingEnv.objective(graph, greedy_by_weight(graph))


def test_weighted_vertex_cover_prices_nodes_by_the_files_weights(tmp_path):
    from graphtransfer.tasks import WeightedMVCEnv
    from graphtransfer.tasks.mvc.baselines import greedy_weight_degree

    (tmp_path / "star.graph").write_text("4 3 10\n100 2 3 4\n1 1\n1 1\n1 1\n")  # a hub that costs 100, three leaves that cost 1
    graph = load_graph(tmp_path / "star.graph")
    assert node_weights(graph).tolist() == [100.0, 1.0, 1.0, 1.0]
    cover = greedy_weight_degree(graph)
    assert WeightedMVCEnv.objective(graph, cover) == 3.0  # the leaves, not the hub
    env = WeightedMVCEnv([graph])
    obs, _ = env.reset(seed=0)
    assert obs["x"][:4, 4].tolist() == pytest.approx([1.0, 0.01, 0.01, 0.01])  # rescaled: the heaviest shows as MAX_WEIGHT / MAX_WEIGHT
