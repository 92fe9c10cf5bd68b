"""Learning from a search (graphtransfer.training.imitation): the built-in MIS model fine-tuned towards an iterated
local search's sets on residual graphs, as ``bench/build_zoo.py --imitate`` does it, at a size a test affords."""

import numpy as np
import pytest
import torch

from graphtransfer.checkpoint import read_checkpoint
from graphtransfer.errors import UsageError
from graphtransfer.graphs import erdos_renyi
from graphtransfer.tasks import TASKS, is_independent_set
from graphtransfer.tasks.mis.baselines import greedy_min_degree
from graphtransfer.training.imitation import DECIDED_SHARE_MAX, imitate_search, residual_state, search_sets


@pytest.fixture(scope="module")
def dense():
    graphs = [erdos_renyi(150, 24.0, seed) for seed in (1, 2)]
    return graphs, search_sets(TASKS["mis"], graphs, iterations_per_node=5)


def test_the_search_sets_are_independent_and_above_greedy(dense):
    graphs, found = dense
    for graph, chosen in zip(graphs, found, strict=True):
        assert is_independent_set(graph, chosen)
        assert chosen.sum() >= greedy_min_degree(graph).sum()


def test_a_residual_state_keeps_the_undecided_nodes_and_the_rest_of_the_set(dense):
    graphs, found = dense
    graph, chosen = graphs[0], found[0]
    rng = np.random.default_rng(0)
    for _ in range(20):
        subgraph, labels = residual_state(graph, chosen, rng)
        assert subgraph.num_nodes == labels.size
        # what is left of the set is independent in the residual graph and at least 1 - DECIDED_SHARE_MAX of it
        assert is_independent_set(subgraph, labels)
        assert labels.sum() >= int(np.ceil((1 - DECIDED_SHARE_MAX) * chosen.sum())) - 1


def test_fine_tuning_lowers_the_loss_changes_only_the_weights_and_is_reproducible(dense):
    graphs, found = dense
    model = read_checkpoint("mis")
    original = {name: tensor.clone() for name, tensor in model.tensors.items()}
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        first = imitate_search(model, graphs, found, steps=60, learning_rate=1e-3, seed=3)
        again = imitate_search(model, graphs, found, steps=60, learning_rate=1e-3, seed=3)
        assert torch.get_num_threads() == 2  # it runs on one thread and gives the caller's back
    finally:
        torch.set_num_threads(threads)
    assert first.last_loss < first.first_loss
    assert sorted(first.tensors) == sorted(model.tensors)
    assert any(not torch.equal(first.tensors[name], model.tensors[name]) for name in model.tensors)
    assert all(torch.equal(first.tensors[name], again.tensors[name]) for name in first.tensors)
    assert all(torch.equal(original[name], model.tensors[name]) for name in original)  # the checkpoint is not changed


def test_only_mis_models_and_real_budgets(dense):
    graphs, found = dense
    with pytest.raises(UsageError, match="learning from a search: the task must declare teacher"):
        imitate_search(read_checkpoint("mvc"), graphs, found, steps=1)
    with pytest.raises(UsageError, match="at least one step"):
        imitate_search(read_checkpoint("mis"), graphs, found, steps=0)
    with pytest.raises(UsageError, match="one set per graph"):
        imitate_search(read_checkpoint("mis"), graphs, found[:1], steps=1)


@pytest.mark.parametrize("rate", [0.0, -1e-3, float("nan"), float("inf")])
def test_a_learning_rate_that_is_no_positive_number_is_refused(dense, rate):
    graphs, found = dense
    with pytest.raises(UsageError, match="learning_rate must be a positive number"):
        imitate_search(read_checkpoint("mis"), graphs, found, steps=1, learning_rate=rate)


def test_sets_of_the_wrong_shape_or_type_are_refused(dense):
    graphs, found = dense
    for wrong in (found[0][:-1], found[0].astype(np.int64)):
        with pytest.raises(UsageError, match=r"must be \(150,\) bool"):
            imitate_search(read_checkpoint("mis"), graphs[:1], [wrong], steps=1)
