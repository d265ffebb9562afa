"""Variant and impl parameters: defaults, validation, and gradients to learnable ones."""

from __future__ import annotations

import pytest
import torch

import linbench
from linbench.errors import ImplUnavailableError


def _qkv(seq: int = 9, heads: int = 3, dim_k: int = 8, dim_v: int = 8) -> tuple[torch.Tensor, ...]:
    return torch.randn(2, heads, seq, dim_k), torch.randn(2, heads, seq, dim_k), torch.randn(2, heads, seq, dim_v)


def test_cosine_norm_const_per_head_gets_gradients() -> None:
    q, k, v = _qkv()
    m = torch.tensor([0.1, 0.5, 2.0], requires_grad=True)
    linbench.attention(q, k, v, variant="cosine", impl="chunked", norm_const=m).sum().backward()
    assert m.grad is not None and torch.all(m.grad != 0)


def test_cosine_scalar_and_per_head_norm_const_agree() -> None:
    q, k, v = _qkv()
    scalar = linbench.attention(q, k, v, variant="cosine", norm_const=0.3)
    per_head = linbench.attention(q, k, v, variant="cosine", norm_const=torch.full((3,), 0.3))
    torch.testing.assert_close(scalar, per_head)


def test_cosine_seq_len_sets_the_divisor() -> None:
    """Eq. 4: the output is divided by s^σ(m); doubling s divides it by 2^σ(m)."""
    q, k, v = _qkv()
    base = linbench.attention(q, k, v, variant="cosine", seq_len=9, norm_const=0.0)
    doubled = linbench.attention(q, k, v, variant="cosine", seq_len=18, norm_const=0.0)
    torch.testing.assert_close(doubled * 2.0**0.5, base)  # σ(0) = 1/2
    default = linbench.attention(q, k, v, variant="cosine", norm_const=0.0)
    torch.testing.assert_close(default, base)


@pytest.mark.parametrize(
    ("variant", "params", "match"),
    [
        ("cosine", {"norm_const": torch.zeros(4)}, r"shape \(H,\) = \(3,\)"),
        ("cosine", {"norm_const": "half"}, "norm_const must be a finite number or a tensor"),
        ("cosine", {"norm_const": float("nan")}, "norm_const must be a finite number or a tensor; got nan"),
        ("cosine", {"seq_len": 0}, "seq_len must be a positive number"),
        ("cosformer", {"M": -1.0}, "M must be a positive number"),
        ("linear", {"eps": 0}, "eps must be a positive number"),
        ("cosine", {"chunk_size": 0}, "chunk_size must be a positive integer"),
        ("cosine", {"chunk_size": 2.5}, "chunk_size must be a positive integer"),
    ],
)
def test_bad_parameter_values_raise(variant: str, params: dict, match: str) -> None:
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=match):
        linbench.attention(q, k, v, variant=variant, impl="chunked", **params)


def test_cosformer_m_changes_the_weights() -> None:
    q, k, v = _qkv()
    default = linbench.attention(q, k, v, variant="cosformer", impl="quadratic")
    assert torch.equal(default, linbench.attention(q, k, v, variant="cosformer", impl="quadratic", M=9))
    assert not torch.allclose(default, linbench.attention(q, k, v, variant="cosformer", impl="quadratic", M=4))


def test_sdpa_backend_math_matches_naive() -> None:
    q, k, v = _qkv(dim_v=12)
    naive = linbench.attention(q, k, v, variant="softmax", impl="naive")
    torch.testing.assert_close(linbench.attention(q, k, v, variant="softmax", impl="sdpa", backend="math"), naive)


def test_sdpa_pinned_backend_that_cannot_run_says_why() -> None:
    q, k, v = _qkv(dim_v=12)  # CPU flash needs Dk == Dv; CUDA flash has no fp64 kernels
    with pytest.raises(ImplUnavailableError, match="flash backend cannot run"):
        linbench.attention(q.double(), k.double(), v.double(), variant="softmax", impl="sdpa", backend="flash")


def test_sdpa_unknown_backend() -> None:
    q, k, v = _qkv()
    with pytest.raises(
        ValueError, match="parameter backend must be one of auto, flash, efficient, math, cudnn; got 'fast'"
    ):
        linbench.attention(q, k, v, variant="softmax", impl="sdpa", backend="fast")


def test_impl_parameter_for_another_impl_is_rejected() -> None:
    q, k, v = _qkv()
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) chunk_size for cosine:quadratic; it takes"):
        linbench.attention(q, k, v, variant="cosine", impl="quadratic", chunk_size=32)


def test_check_reports_an_unavailable_backend_as_unavailable_not_wrong() -> None:
    from linbench.check.correctness import Shape, check_impl

    result = check_impl(
        linbench.get_variant("softmax"), "sdpa", Shape(1, 2, 9, 8, 12), causal=True, params={"backend": "flash"}
    )
    assert result.unavailable and "flash backend cannot run" in result.unavailable
    assert result.error is None and not result.ok
