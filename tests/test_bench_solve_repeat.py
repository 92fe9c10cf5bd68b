"""bench/solve_repeat.py times each solve on a fresh copy of the graph: no CSR kept on the graph by one
solve serves the next, as in a predict process."""

import json
import subprocess
import sys

import pytest

from bench.solve_repeat import solve_seconds
from graphtransfer.graphs import load_graph
from graphtransfer.solve.predict import predict_graph

GRAPH = "sample_graphs/small/ba-20.txt"


def test_every_timed_solve_runs_on_a_fresh_graph_and_finds_predicts_set(monkeypatch):
    import graphtransfer.solve.predict as predict  # solve_seconds imports predict_graph from here when called

    solved = []

    def recording(checkpoint, graph, *args, **kwargs):
        solved.append(graph)
        return predict_graph(checkpoint, graph, *args, **kwargs)

    monkeypatch.setattr(predict, "predict_graph", recording)
    seconds, objective = solve_seconds("mis", GRAPH, 3)
    assert len(seconds) == 3 and all(s > 0 for s in seconds)
    assert len(solved) == 4 and len({id(graph) for graph in solved}) == 4  # the warm-up and three, each its own copy
    assert objective == predict_graph("mis", load_graph(GRAPH))[0].objective


def test_the_command_prints_one_json_line():
    command = [sys.executable, "-m", "bench.solve_repeat", "--graph", GRAPH, "--threads", "1", "--repeats", "2"]
    row = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
    assert row["threads"] == 1 and len(row["seconds"]) == 2 and row["median"] > 0 and row["objective"] > 0


def test_the_split_times_each_part_inside_the_solve_and_puts_every_function_back():
    from bench.solve_repeat import PARTS, median_parts, timed_parts
    from graphtransfer.nn.policy import NodePolicy
    from graphtransfer.tasks.mis import kernel as mis_kernel

    before = (NodePolicy._distribution, mis_kernel.low_degree_rounds, mis_kernel._rules_kernel)
    parts: list[dict[str, float]] = []
    seconds, objective = solve_seconds("mis", GRAPH, 2, parts)
    assert (NodePolicy._distribution, mis_kernel.low_degree_rounds, mis_kernel._rules_kernel) == before
    assert len(parts) == 2 and objective == predict_graph("mis", load_graph(GRAPH))[0].objective
    for total, spent in zip(seconds, parts, strict=True):
        assert spent["forwards"] > 0 and spent["kernel rounds"] > 0  # the MIS model's passes; the kernel before the first
        assert sum(spent.values()) < total
    medians = median_parts(seconds, parts)
    assert set(medians) == {*PARTS, "rest"} and medians["rest"] > 0
    with timed_parts() as spent:  # a part not reached in the block stays at zero
        pass
    assert spent == dict.fromkeys(PARTS, 0.0)


def test_the_command_with_split_prints_the_parts():
    command = [sys.executable, "-m", "bench.solve_repeat", "--graph", GRAPH, "--threads", "1", "--repeats", "1", "--split"]
    row = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
    assert set(row["parts"]) == {"forwards", "kernel rounds", "kernel rules", "rest"}
    assert sum(row["parts"].values()) == pytest.approx(row["median"], abs=1e-3)
