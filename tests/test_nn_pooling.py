"""The fused mean-max pooling: torch's own autograd of the plain expression, bit for bit."""

import pytest
import torch

from graphtransfer.nn.pooling import mean_max_pool


@pytest.mark.parametrize(("shape", "dim"), [((40, 3, 5), 0), ((3, 40, 5), 1), ((3, 40, 5), -2)])
def test_mean_max_pool_equals_mean_and_amax_with_their_gradients_bit_for_bit(shape, dim):
    """Values and input gradients equal ``cat([mean, amax])`` differentiated by torch, exactly:
    ties (many here, zeros after a ReLU among them) split the max's gradient evenly."""
    generator = torch.Generator().manual_seed(0)
    base = torch.randint(-2, 3, shape, generator=generator).float()
    fused_input, plain_input = base.clone().requires_grad_(), base.clone().requires_grad_()
    fused = mean_max_pool(torch.relu(fused_input), dim)
    plain_h = torch.relu(plain_input)
    plain = torch.cat([plain_h.mean(dim), plain_h.amax(dim)], dim=-1)
    assert torch.equal(fused, plain)
    weights = torch.randn(fused.shape, generator=generator)
    (fused * weights).sum().backward()
    (plain * weights).sum().backward()
    assert torch.equal(fused_input.grad, plain_input.grad)
    assert (plain_input.grad != 0).any()


def test_mean_max_pool_without_gradients_builds_no_graph():
    h = torch.rand(10, 2, 4, requires_grad=True)
    with torch.no_grad():
        pooled = mean_max_pool(h, 0)
    assert pooled.shape == (2, 8) and pooled.grad_fn is None
