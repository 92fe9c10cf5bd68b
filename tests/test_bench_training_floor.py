"""The floor of bench/training_floor.py is the recipe's model (PyG's GCN 2 -> 64 -> 64, mean
pooling, a linear output) as plain products, so the ratios against it compare equal work."""

import torch
from torch_geometric.nn import GCNConv

from bench.training_floor import WIDTH, PlainGCN, calls_to_time, floor_steps_per_second
from graphtransfer.graphs import erdos_renyi


def test_the_plain_gcn_computes_pygs_gcn_with_the_same_weights_and_gradients():
    nodes, samples = 40, 3
    floor = PlainGCN(nodes, seed=1)
    edges = torch.as_tensor(erdos_renyi(nodes, 4.0, 1).edge_index)
    convs = [GCNConv(2, WIDTH), GCNConv(WIDTH, WIDTH)]
    with torch.no_grad():
        for conv, weight, bias in zip(convs, floor.weights[:2], floor.biases, strict=True):
            conv.lin.weight.copy_(weight.t())
            conv.bias.copy_(bias)
    x = torch.rand(nodes, samples, 2)
    expected = []
    for sample in range(samples):
        h = x[:, sample]
        for conv in convs:
            h = torch.relu(conv(h, edges))
        expected.append(h.mean(dim=0) @ floor.weights[2])
    out = floor(x)
    torch.testing.assert_close(out, torch.cat(expected), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    torch.cat(expected).sum().backward()
    torch.testing.assert_close(floor.weights[1].grad, convs[1].lin.weight.grad.t(), rtol=1e-4, atol=1e-6)


def test_short_calls_are_timed_for_about_a_second_and_the_floor_is_a_rate():
    assert calls_to_time(lambda: None, 3) > 1000
    assert 0 < floor_steps_per_second(30, 4, 2, repeats=1) < float("inf")
