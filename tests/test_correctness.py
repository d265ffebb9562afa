"""check_impl judges the impl under test; whatever goes wrong inside it is a failing case."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from linbench.correctness import Shape, check_impl
from linbench.variants.registry import Impl, Variant, register_variant, unregister_variant


def _identity(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    return v + 0.0 * (q + k).sum(-1, keepdim=True)


def _broken(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    raise TypeError("planted bug")


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


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_a_one_percent_error_fails_in_every_dtype_but_bf16(planted: Variant, dtype: torch.dtype) -> None:
    """1% is far outside fp64/fp32 tolerance; bf16's ~10 ulps (8%) cannot see it, by design."""
    result = check_impl(planted, "off", Shape(1, 2, 9, 4, 4), causal=True, dtype=dtype)
    assert result.ok is (dtype == torch.bfloat16), result.describe()
    assert check_impl(planted, "ref", Shape(1, 2, 9, 4, 4), causal=True, dtype=dtype).ok
