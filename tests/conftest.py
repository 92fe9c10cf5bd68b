"""Shared fixtures: tiny hand-built graphs, and an isolated cache and working folder."""

import os

import numpy as np
import pytest
import torch
from hypothesis import settings

from graphtransfer.graphs import Graph, from_edges

# `make test` runs the suite in two processes on CI's 2 cores (pytest-xdist); one torch thread per
# process avoids oversubscription, which made small-graph tests several times slower, and matches
# the training default.
torch.set_num_threads(1)

# The fuzz tests draw the same damaged files every run, so CI passes or fails on the code, not on
# luck; GRAPHTRANSFER_FUZZ=random explores new ones (how a damaged zip's "version 6.4" was found).
settings.register_profile("repeatable", derandomize=True, database=None)
settings.load_profile("default" if os.environ.get("GRAPHTRANSFER_FUZZ") == "random" else "repeatable")


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Commands run in-process set torch's threads from the cores (predict, eval, transfer); put
    the suite back on one after each test, since a fork made while torch holds two threads can
    hang in the child (test_safety forks writers)."""
    yield
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)


def graph_from_pairs(pairs, num_nodes, name="hand") -> Graph:
    pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    graph, _, _ = from_edges(pairs[:, 0], pairs[:, 1], num_nodes, name)
    return graph


@pytest.fixture
def path5() -> Graph:
    """0 - 1 - 2 - 3 - 4"""
    return graph_from_pairs([(0, 1), (1, 2), (2, 3), (3, 4)], 5, "path5")


@pytest.fixture
def star5() -> Graph:
    """Centre 0 with leaves 1..4."""
    return graph_from_pairs([(0, 1), (0, 2), (0, 3), (0, 4)], 5, "star5")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Generated graphs are cached under the test's own folder, never the user's."""
    monkeypatch.setenv("GRAPHTRANSFER_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """``tiny_model(task)``: the folder of a model of ``task`` trained briefly by the real CLI on the
    sample graphs, trained once per session and shared by the tests that only read it; on the CPU
    on every machine, so that the tests that measure its quality read the same weights where a GPU
    is present (a briefly trained MVC model trained on one covered 2% more than greedy)."""
    from typer.testing import CliRunner

    from graphtransfer.cli import app

    folders = {}

    def trained(task: str):
        if task not in folders:
            folder = tmp_path_factory.mktemp(f"model-{task}")
            command = [
                "train",
                "--task",
                task,
                "--graphs",
                "small",
                "--steps",
                "256",
                "--n-envs",
                "4",
                "--no-progress",
                "--device",
                "cpu",
                "--out",
                str(folder),
            ]
            result = CliRunner().invoke(app, command)
            assert result.exit_code == 0, result.output
            folders[task] = folder
        return folders[task]

    return trained
