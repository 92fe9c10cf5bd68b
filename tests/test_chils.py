"""CHILS, the optional MIS baseline (pip install 'graphtransfer[chils]'): refused clearly where it
cannot run, a valid set where it can."""

import pytest
from typer.testing import CliRunner

from graphtransfer.cli import app
from graphtransfer.errors import UsageError
from graphtransfer.graphs import erdos_renyi, write_npz
from graphtransfer.tasks import is_independent_set
from graphtransfer.tasks.mis import chils as chils_module
from graphtransfer.tasks.mis.baselines import greedy_min_degree

runner = CliRunner()


def test_eval_chils_is_refused_for_a_task_other_than_mis(tiny_model, tmp_path):
    write_npz(erdos_renyi(60, 4.0, 0), tmp_path / "g.npz")
    result = runner.invoke(app, ["eval", "--model", str(tiny_model("mvc")), "--graphs", str(tmp_path / "g.npz"), "--chils"])
    assert result.exit_code == 2
    built_in = "mis, mvc-weighted"
    assert result.stderr == f"error: --chils: the task must declare optional_baselines (built-in: {built_in}); mvc does not, drop --chils\n"


def test_eval_chils_without_the_package_names_the_extra(tiny_model, tmp_path, monkeypatch):
    monkeypatch.setattr(chils_module, "chils_available", lambda: False)
    write_npz(erdos_renyi(60, 4.0, 0), tmp_path / "g.npz")
    result = runner.invoke(app, ["eval", "--model", str(tiny_model("mis")), "--graphs", str(tmp_path / "g.npz"), "--chils"])
    assert result.exit_code == 2
    assert result.stderr == "error: --chils needs the chils package: pip install 'graphtransfer[chils]'\n"
    with pytest.raises(UsageError, match="pip install 'graphtransfer\\[chils\\]'"):
        chils_module.chils_mis(erdos_renyi(10, 2.0, 0))


@pytest.mark.parametrize("budget", [0, -1.0, float("nan"), float("inf"), "1"])
def test_a_bad_chils_budget_is_refused(budget):
    pytest.importorskip("chils")
    with pytest.raises(UsageError, match="time_budget="):
        chils_module.chils_mis(erdos_renyi(10, 2.0, 0), budget)


def test_chils_finds_an_independent_set_at_least_greedys_on_a_small_graph():
    pytest.importorskip("chils")
    graph = erdos_renyi(300, 8.0, 1)
    found = chils_module.chils_mis(graph, 0.5, seed=0)
    assert found.shape == (300,) and is_independent_set(graph, found)
    assert found.sum() >= greedy_min_degree(graph).sum()
