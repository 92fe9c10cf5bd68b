"""The floor of PPO training on one static graph (issue 16), measured with plain torch kernels.

What the hardware allows for the plain recipe's model shape and PPO settings, with nothing but
the products themselves: a GCN 2 -> 64 -> 64 on the raw ``(N, 2)`` features (the normalised
adjacency built once, outside the timing), ``torch.sparse.mm`` over the CSR and ``torch.addmm``,
mean pooling and a linear output, all under autograd. Per env step, PPO costs one rollout
forward of one sample (no gradients) plus, per epoch, one sample's share of a minibatch's
forward + backward, in the faster of two layouts: the minibatch's ``B`` samples of the graph as
one product over ``(N, B * 64)``, or in groups of at most 32,768 nodes whose gradients add up
(what graphtransfer's update does, ``graphtransfer.training.ppo.UPDATE_GROUP_NODES``; at 10,000
nodes groups of three samples ran 1.4x faster than the whole minibatch, their activations small
enough to stay in the heap and the caches)::

    floor seconds per env step = t_forward(1) + epochs * t_forward_backward(B) / B

Everything else a real trainer does (the env, SB3's bookkeeping, storing and rebuilding
observations, the optimizer step) is left out, so no trainer can beat it.

    .venv/bin/python -m bench.training_floor --nodes 1000 [--batch 32 --epochs 2]

prints the floor in env steps/s; :func:`floor_steps_per_second` is what ``bench.training_recipe
--model gcn2`` calls, in a process of its own, to put the floor beside the recipe and ours in
the same run. Not part of the test run.
"""

from __future__ import annotations

import argparse
import math
import time

import torch

from bench.forward import median_seconds
from graphtransfer.graphs import erdos_renyi
from graphtransfer.nn.message_passing import GraphStructure
from graphtransfer.training.ppo import UPDATE_GROUP_NODES

WIDTH = 64


class PlainGCN:
    """GCN 2 -> 64 -> 64 in plain torch over a cached normalised CSR adjacency, with a pooled
    linear output: the recipe's model, as products and nothing else.

    Shapes:
        x: ``(N, B, 2)``; returns ``(B,)``, one number per sample (what a loss reads).
    """

    def __init__(self, nodes: int, seed: int = 0):
        graph = erdos_renyi(nodes, 4.0, seed)
        structure = GraphStructure(torch.as_tensor(graph.edge_index), nodes)
        self.adjacency = structure.gcn_adjacency(False, True)
        generator = torch.Generator().manual_seed(seed)
        self.weights = [
            torch.randn(2, WIDTH, generator=generator) * 0.5,
            torch.randn(WIDTH, WIDTH, generator=generator) / WIDTH**0.5,
            torch.randn(WIDTH, 1, generator=generator) / WIDTH**0.5,
        ]
        self.biases = [torch.zeros(WIDTH), torch.zeros(WIDTH)]
        for tensor in (*self.weights, *self.biases):
            tensor.requires_grad_(True)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        nodes, samples, _ = x.shape
        h = x
        for weight, bias in zip(self.weights[:2], self.biases, strict=True):
            aggregated = torch.sparse.mm(self.adjacency, h.reshape(nodes, -1), "sum").view(nodes * samples, -1)
            h = torch.relu(torch.addmm(bias, aggregated, weight)).view(nodes, samples, WIDTH)
        return (h.mean(dim=0) @ self.weights[2]).view(samples)


def floor_times(nodes: int, batch: int, repeats: int = 3) -> tuple[float, float]:
    """Seconds of one rollout forward (one sample, no gradients) and of one minibatch's forward
    + backward (``batch`` samples, the faster layout: see the module), each the median of at
    least ``repeats`` calls and of as many more as fill :data:`TIMED_SECONDS`: at 1,000 nodes a
    minibatch takes 20 ms, and the median of three such calls swung from 460 to 660 env steps/s
    between processes on this machine."""
    model = PlainGCN(nodes)
    one, many = torch.rand(nodes, 1, 2), torch.rand(nodes, batch, 2)
    per_group = max(1, UPDATE_GROUP_NODES // nodes)
    groups = [many[:, start : start + per_group].contiguous() for start in range(0, batch, per_group)]

    def rollout_forward() -> None:
        with torch.no_grad():
            model(one)

    def whole_minibatch() -> None:
        model(many).sum().backward()

    def grouped_minibatch() -> None:
        for group in groups:
            model(group).sum().backward()

    minibatches = (whole_minibatch,) if len(groups) == 1 else (whole_minibatch, grouped_minibatch)
    forward = median_seconds(rollout_forward, calls_to_time(rollout_forward, repeats))
    return forward, min(median_seconds(call, calls_to_time(call, repeats)) for call in minibatches)


TIMED_SECONDS = 1.0


def calls_to_time(call, repeats: int) -> int:
    """How many calls of ``call`` to time: ``repeats``, or as many as take about :data:`TIMED_SECONDS`."""
    started = time.perf_counter()
    call()
    return max(repeats, math.ceil(TIMED_SECONDS / max(time.perf_counter() - started, 1e-6)))


def floor_steps_per_second(nodes: int, batch: int, epochs: int, repeats: int = 3) -> float:
    """The floor in env steps per second (see the module)."""
    forward, minibatch = floor_times(nodes, batch, repeats)
    return 1.0 / (forward + epochs * minibatch / batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--batch", type=int, default=32, help="minibatch size (the recipe's 32)")
    parser.add_argument("--epochs", type=int, default=2, help="PPO epochs (the recipe's 2)")
    parser.add_argument("--n-steps", type=int, default=64, help="steps per iteration, for the seconds per iteration")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    forward, minibatch = floor_times(args.nodes, args.batch, args.repeats)
    per_step = forward + args.epochs * minibatch / args.batch
    print(
        f"N = {args.nodes:,}, batch {args.batch}, {args.epochs} epochs, {args.threads} thread(s): rollout forward {forward * 1000:.1f} ms, "
        f"minibatch forward + backward {minibatch * 1000:.1f} ms; floor {1 / per_step:.2f} env steps/s, "
        f"{per_step * args.n_steps:.1f} s per iteration of {args.n_steps} steps"
    )


if __name__ == "__main__":
    main()
