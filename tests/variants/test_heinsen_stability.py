"""heinsen in fp32 with |x| ≈ 30: exp(q + k + log v) would reach e^90 and overflow."""

from __future__ import annotations

import pytest
import torch

import linbench
from linbench.check.correctness import Shape, check_impl, make_inputs

HEINSEN = linbench.get_variant("heinsen")


def _large_inputs(seq: int = 300) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Inputs spread over [−30, 30], with the extremes hit exactly."""
    q, k, v, _ = make_inputs(HEINSEN, Shape(1, 2, seq, 16, 16), "cpu", scale=1.0)
    q, k, v = (30.0 * torch.tanh(t) for t in (q, k, v))
    q[..., 0, 0], k[..., 1, 0], v[..., 2, 0] = 30.0, -30.0, 30.0
    return q, k, v


def test_plain_exponentials_would_overflow_fp32() -> None:
    """The premise: the direct formula is not an option at this range."""
    q, k, v = (t.float() for t in _large_inputs())
    direct = torch.exp(q) @ torch.exp(k).transpose(-1, -2) @ torch.exp(v)
    assert not torch.isfinite(direct).all()


@pytest.mark.parametrize("impl", ["chunked", "recurrent", "naive", "quadratic", "kernel"])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
def test_fp32_finite_and_accurate_at_30(impl: str, causal: bool) -> None:
    q, k, v = _large_inputs()
    expected = linbench.attention(q, k, v, variant="heinsen", impl="quadratic", causal=causal)  # fp64
    actual = linbench.attention(q.float(), k.float(), v.float(), variant="heinsen", impl=impl, causal=causal)
    assert torch.isfinite(actual).all()
    # log Y lies in [−30, 30]; fp32 carries it to a few ulps of 30.
    torch.testing.assert_close(actual.double(), expected, rtol=1e-5, atol=1e-4)


def test_chunked_gradients_finite_at_30() -> None:
    q, k, v = (t.float().requires_grad_() for t in _large_inputs(130))
    out = linbench.attention(q, k, v, variant="heinsen", impl="chunked", chunk_size=32)
    out.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))


def test_chunked_matches_reference_at_scale_10_with_gradients() -> None:
    result = check_impl(HEINSEN, "chunked", Shape(1, 2, 130, 16, 16), causal=True, dtype=torch.float64, scale=10.0)
    assert result.ok, result.describe()
