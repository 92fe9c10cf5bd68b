from dataclasses import replace

import pytest

from graphtransfer.config import Decoding, ModelConfig, RunConfig
from graphtransfer.graphs import barabasi_albert, erdos_renyi
from graphtransfer.nn import build_policy
from graphtransfer.reporting.report import family, format_rows, ratio_figure, rows_to_json
from graphtransfer.solve.evaluate import EvalExtras, evaluate_policy
from graphtransfer.tasks.factory import run_env


@pytest.fixture(scope="module")  # read only; the local searches make it take seconds
def rows():
    graphs = [erdos_renyi(200, 4.0, 0), barabasi_albert(300, 3, 0)]
    config = RunConfig(task="mis", head="node-wise", model=ModelConfig(width=16, head_width=16))
    env = run_env(config, graphs)
    policy = build_policy("node-wise", config.model, env.observation_space, env.action_space)
    return evaluate_policy(policy, config, graphs, Decoding(rollouts=3, method="drawn"), EvalExtras(both_draws=True, polish=True))


def test_every_decoding_and_baseline_is_reported_separately(rows):
    for row in rows:
        assert list(row.decodings) == ["sampled", "deterministic"]
        assert all(s.rollouts == 3 for s in row.decodings.values())
        assert [b.name for b in row.baselines] == ["greedy-min-degree", "random-greedy", "local-search"]
        assert all(s.feasible for s in row.decodings.values())


def test_the_default_mis_decoding_is_local_max_without_a_deterministic_twin():
    graphs = [erdos_renyi(100, 4.0, 0)]
    config = RunConfig(task="mis", head="node-wise", model=ModelConfig(width=16, head_width=16))
    env = run_env(config, graphs)
    policy = build_policy("node-wise", config.model, env.observation_space, env.action_space)
    row = evaluate_policy(policy, config, graphs, Decoding(rollouts=2), EvalExtras(both_draws=True))[0]
    assert list(row.decodings) == ["local-max"]  # local-max draws nothing: a deterministic row would repeat it


def test_polish_is_applied_to_policy_and_baselines_alike(rows):
    for row in rows:
        assert row.polished >= row.best().objective  # completing a set never shrinks it
        for baseline in row.baselines:
            assert baseline.polished >= baseline.objective


def test_table_and_json_carry_the_same_numbers(rows):
    lines = format_rows(rows)
    assert len(lines) == 1 + 2 * 3  # header, then two decodings and the polished line per graph
    record = rows_to_json(rows)[0]
    assert record["family"] == "er"
    assert record["ratios"]["sampled"]["greedy-min-degree"] == pytest.approx(
        rows[0].decodings["sampled"].objective / rows[0].baselines[0].objective
    )


@pytest.mark.parametrize(
    ("name", "expected"), [("er-60.txt", "er"), ("ba-n2000-m4-s1", "ba"), ("rgg_big.npz", "rgg"), ("karate", "karate")]
)
def test_family_is_the_name_prefix(name, expected):
    assert family(name) == expected


def test_the_table_shows_whole_graph_names(rows):
    long = "road-network-of-the-whole-of-california-2026"
    renamed = [replace(rows[0], graph=replace(rows[0].graph, name=long)), rows[1]]
    lines = format_rows(renamed)
    assert lines[1].startswith(long + " ")
    assert len({line.index(" sampled ") for line in lines if " sampled " in line}) == 1  # columns still line up


def test_the_columns_line_up_after_the_longest_decoding_name(rows):
    relabelled = [replace(row, decodings={"local-max-sampled": row.policy}) for row in rows]
    lines = format_rows(relabelled)
    assert len({line.index("objective") for line in lines[:1]} | {line.index(" yes ") - 11 for line in lines[1:]}) == 1


def test_the_header_says_a_difference_where_the_objective_is_not_positive():
    graphs = [barabasi_albert(40, 2, 0)]
    config = RunConfig(task="epidemic", head="graph-level", model=ModelConfig(width=8, head_width=8))
    env = run_env(config, graphs)
    policy = build_policy("graph-level", config.model, env.observation_space, env.action_space)
    epidemic = evaluate_policy(policy, config, graphs)
    assert epidemic[0].policy.objective <= 0  # the epidemic's reward: minus the infected
    header = format_rows(epidemic)[0]
    assert "policy - baseline" in header and "policy/baseline" not in header


def test_the_ratio_tables_header_says_a_ratio(rows):
    assert "(policy/baseline;" in format_rows(rows)[0]


def test_each_decoding_has_its_own_marker_and_points_in_the_plot(rows):
    import matplotlib.pyplot as plt

    figure = ratio_figure(rows, "mis")
    lines = figure.axes[0].lines[:-1]  # the last is the line at ratio 1
    families = {line.get_color() for line in lines}
    for colour in families:
        same = [line for line in lines if line.get_color() == colour]
        assert len({line.get_marker() for line in same}) == len(same) == 2
        assert len({tuple(line.get_xdata()) for line in same}) == len(same)  # no decoding hides another
    plt.close(figure)
