"""check_impl judges the impl under test; whatever goes wrong inside it is a failing case."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from linbench.api import attention
from linbench.check.correctness import Shape, check_impl, compare
from linbench.variants.registry import Impl, Variant, get_variant, register_variant, unregister_variant


def _identity(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    return v + 0.0 * (q + k).sum(-1, keepdim=True)


def _broken(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    raise TypeError("planted bug")


def _one_row_short(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    return _identity(q, k, v, causal=causal)[..., :-1, :]


def _nan(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    return _identity(q, k, v, causal=causal) * torch.nan


def _off_by_one_percent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    return _identity(q, k, v, causal=causal) * 1.01


@pytest.fixture
def planted() -> Iterator[Variant]:
    variant = Variant(
        name="test-planted-correctness",
        summary="O = V",
        impl_list=(
            Impl("ref", _identity, "", "O(s)", "O(s)"),
            Impl("broken", _broken, "", "O(s)", "O(s)"),
            Impl("off", _off_by_one_percent, "", "O(s)", "O(s)"),
            Impl("short", _one_row_short, "", "O(s)", "O(s)"),
            Impl("nan", _nan, "", "O(s)", "O(s)"),
        ),
        reference="ref",
        param_specs=(),
        flop_formula=lambda *args: 0.0,
        time_complexity="O(s)",
        memory_complexity="O(s)",
    )
    register_variant(variant)
    yield variant
    unregister_variant(variant.name)


def test_an_impl_that_raises_is_a_failing_case(planted: Variant) -> None:
    result = check_impl(planted, "broken", Shape(1, 1, 5, 4, 4), causal=True)
    assert not result.ok
    assert result.error == "TypeError: planted bug"
    assert "raised TypeError: planted bug" in result.describe()


@pytest.mark.parametrize("seq", [1, 5])
def test_a_wrong_shape_is_a_failing_comparison_that_names_both_shapes(planted: Variant, seq: int) -> None:
    """At S = 1 the short output is empty and broadcasts against anything: still a shape failure."""
    result = check_impl(planted, "short", Shape(1, 2, seq, 4, 4), causal=True)
    assert not result.ok and result.error is None
    assert [c.name for c in result.comparisons] == ["out"]
    assert f"out has shape (1, 2, {seq - 1}, 4) where the reference has (1, 2, {seq}, 4)" in result.describe()
    assert result.worst is not None and result.worst.problem == "shape"


def test_a_nan_output_is_said_to_be_nan(planted: Variant) -> None:
    result = check_impl(planted, "nan", Shape(1, 2, 5, 4, 4), causal=True)
    assert not result.ok
    assert result.worst is not None and result.worst.problem == "NaN"
    assert "out is NaN at 40 of 40 elements" in result.describe()
    assert "inf" not in result.describe()


def test_an_infinite_output_is_said_to_be_infinite() -> None:
    actual = torch.tensor([1.0, float("inf"), 2.0], dtype=torch.float64)
    result = compare("out", actual, torch.ones(3, dtype=torch.float64), torch.float32)
    assert not result.ok and result.problem == "inf"
    assert "out is infinite at 1 of 3 elements" in result.describe()


def test_a_reference_that_raises_is_an_error_of_the_case_not_of_the_checker() -> None:
    def causal_only(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
        if not causal:
            raise ValueError("causal only")
        return _identity(q, k, v, causal=causal)

    variant = Variant(
        name="test-reference-raises",
        summary="O = V, causal only",
        impl_list=(Impl("ref", causal_only, "", "O(s)", "O(s)"), Impl("same", _identity, "", "O(s)", "O(s)")),
        reference="ref",
        param_specs=(),
        flop_formula=lambda *args: 0.0,
        time_complexity="O(s)",
        memory_complexity="O(s)",
    )
    register_variant(variant)
    try:
        result = check_impl(variant, "same", Shape(1, 2, 5, 4, 4), causal=False)
    finally:
        unregister_variant(variant.name)
    assert not result.ok
    assert result.error is not None and result.reference_failed
    assert result.error.startswith("the reference (test-reference-raises:ref) raised ValueError: causal only")
    assert "declares masking=('causal',)" in result.error  # what a causal-only variant should have said
    assert "bidirectional float64: the reference (test-reference-raises:ref) raised" in result.describe()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_a_one_percent_error_fails_in_every_dtype(planted: Variant, dtype: torch.dtype) -> None:
    """1% is far outside fp64/fp32 tolerance; in 16 bits it is the scale error that fails it."""
    result = check_impl(planted, "off", Shape(1, 2, 9, 4, 4), causal=True, dtype=dtype, device="cpu")
    assert not result.ok, result.describe()
    assert check_impl(planted, "ref", Shape(1, 2, 9, 4, 4), causal=True, dtype=dtype, device="cpu").ok


class _ScaleGradient(torch.autograd.Function):
    """Identity forward; the backward multiplies the gradient by ``factor``."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, factor: float) -> torch.Tensor:
        ctx.factor = factor
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad * ctx.factor, None


def _linear_with_grad_q_scaled(factor: float) -> Any:
    def impl(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, eps: float) -> torch.Tensor:
        q = _ScaleGradient.apply(q, factor)
        return attention(q, k, v, variant="linear", impl="chunked", causal=causal, eps=eps)

    return impl


@pytest.fixture
def linear_planted() -> Iterator[Variant]:
    linear = get_variant("linear")
    variant = dataclasses.replace(
        linear,
        name="test-planted-gradient",
        impl_list=(
            next(impl for impl in linear.impl_list if impl.name == "quadratic"),
            Impl("same", _linear_with_grad_q_scaled(1.0), "", "O(sd²)", "O(sd)"),
            Impl("scaled", _linear_with_grad_q_scaled(1.01), "", "O(sd²)", "O(sd)"),
        ),
        decoder_list=(),
        stream=None,
        auto_order=("same",),
    )
    register_variant(variant)
    yield variant
    unregister_variant(variant.name)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_a_gradient_scaled_by_one_percent_fails(linear_planted: Variant, dtype: torch.dtype) -> None:
    shape = Shape(2, 2, 64, 16, 16)
    right = check_impl(linear_planted, "same", shape, causal=True, dtype=dtype, device="cpu")
    wrong = check_impl(linear_planted, "scaled", shape, causal=True, dtype=dtype, device="cpu")
    assert right.ok, right.describe()
    assert not wrong.ok, wrong.describe()
    assert [c.name for c in wrong.comparisons if not c.ok] == ["grad q"], wrong.describe()


def _cancelling(count: int = 256 * 64) -> tuple[torch.Tensor, torch.Tensor]:
    """A result whose 16-bit error is u-sized relative to its norm but, at a few elements near
    zero, far above the element-wise tolerance: what a gradient made of a difference of large
    terms looks like (see UNIT_ROUNDOFF)."""
    gen = torch.Generator().manual_seed(0)
    expected = torch.randn(count // 64, 64, generator=gen, dtype=torch.float64)
    actual = expected + 0.004 * torch.randn(expected.shape, generator=gen, dtype=torch.float64)
    spots = torch.arange(0, count, count // 10)
    expected.view(-1)[spots] = 0.0
    actual.view(-1)[spots] = 0.12
    return actual, expected


def test_16_bit_error_beyond_the_element_wise_rule_passes_norm_wise() -> None:
    actual, expected = _cancelling()
    result = compare("grad q", actual, expected, torch.bfloat16)
    assert result.worst_ratio > 1.0  # the element-wise rule alone would call it wrong
    assert result.normwise_ratio <= 1.0 and result.scale_ratio <= 1.0
    assert result.ok, result.describe()
    # fp32 has no such allowance: the same error is far outside its tolerance.
    assert not compare("grad q", actual, expected, torch.float32).ok


def test_one_wrong_row_fails_even_when_the_norm_wise_error_is_small() -> None:
    actual, expected = _cancelling()
    gen = torch.Generator().manual_seed(1)
    actual[7] = torch.randn(64, generator=gen, dtype=torch.float64)
    result = compare("out", actual, expected, torch.bfloat16)
    assert result.normwise_ratio > 1.0 and not result.ok, result.describe()


def test_a_scaled_result_fails_whatever_its_size() -> None:
    _, expected = _cancelling()
    result = compare("out", expected * 1.01, expected, torch.bfloat16)
    assert result.worst_ratio <= 1.0 and result.normwise_ratio <= 1.0  # 1% is inside both
    assert result.scale_ratio > 2.0 and not result.ok, result.describe()


def test_an_all_zero_reference_is_judged_without_dividing_by_zero() -> None:
    zero = torch.zeros(4, 8, dtype=torch.float64)
    assert compare("grad q", zero, zero, torch.bfloat16).ok
    assert not compare("grad q", zero + 1e-3, zero, torch.bfloat16).ok
