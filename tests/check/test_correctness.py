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


def _tf32_sized_error(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """V off by ±0.3% element by element (alternating): what sums of TF32-rounded products give,
    past fp32's element-wise 5e-4 and within the TF32 tolerance, with no scale error."""
    signs = torch.ones(v.shape[-1], dtype=v.dtype, device=v.device)
    signs[1::2] = -1
    return _identity(q, k, v, causal=causal) * (1 + 3e-3 * signs)


def test_an_fp32_check_of_triton_kernels_on_a_tf32_gpu_uses_the_tf32_tolerance(monkeypatch: pytest.MonkeyPatch) -> None:
    """fla's Triton kernels run fp32 dots as TF32 on sm_80+ (device: none; CUDA's capability stood in)."""
    from linbench.check.correctness import tf32_dots
    from linbench.variants.feature_forms.triton_interpreter import TRITON_LIBRARIES
    from linbench.variants.registry import list_variants

    cuda, fp32 = torch.device("cuda", 0), torch.float32
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    variants = [get_variant(name) for name in list_variants()]
    declared = [*(i for v in variants for i in v.impls.values()), *(d for v in variants for d in v.decoders.values())]
    triton = [d for d in declared if d.library in TRITON_LIBRARIES]
    assert "fla-core" in TRITON_LIBRARIES and any(d.library == "fla-core" for d in triton)
    assert all(tf32_dots(d.library, fp32, cuda) for d in triton)
    assert not any(tf32_dots(d.library, fp32, cuda) for d in declared if d.library not in TRITON_LIBRARIES)
    assert not tf32_dots("fla-core", torch.bfloat16, cuda)  # 16-bit dtypes keep their own rules
    assert not tf32_dots("fla-core", fp32, "cpu")  # Triton's interpreter computes true fp32
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 5))
    assert not tf32_dots("fla-core", fp32, cuda)  # no TF32 before sm_80: fla asks for IEEE dots there


def test_the_tf32_tolerance_passes_tf32_sized_errors_and_still_fails_a_scaled_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from linbench.check import correctness

    variant = Variant(
        name="test-tf32",
        summary="O = V",
        impl_list=(
            Impl("ref", _identity, "", "O(s)", "O(s)"),
            Impl("tf32", _tf32_sized_error, "", "O(s)", "O(s)", library="fla-core"),
            Impl("off", _off_by_one_percent, "", "O(s)", "O(s)", library="fla-core"),
        ),
        reference="ref",
        param_specs=(),
        flop_formula=lambda *args: 0.0,
        time_complexity="O(s)",
        memory_complexity="O(s)",
    )
    register_variant(variant)
    try:
        shape = Shape(1, 2, 9, 4, 4)
        ieee = check_impl(variant, "tf32", shape, causal=True, dtype=torch.float32)
        monkeypatch.setattr(correctness, "tf32_dots", lambda library, dtype, device: library == "fla-core")
        tf32 = check_impl(variant, "tf32", shape, causal=True, dtype=torch.float32)
        scaled = check_impl(variant, "off", shape, causal=True, dtype=torch.float32)
    finally:
        unregister_variant(variant.name)
    assert not ieee.ok and not ieee.tf32
    assert tf32.ok and tf32.tf32 and "float32 (TF32 dots)" in tf32.describe(), tf32.describe()
    assert not scaled.ok  # a 1% scale error fails the TF32 tolerance's scale rule
