"""The gated variants' FLOP and byte counts follow linbench's convention (no device involved)."""

from __future__ import annotations

import pytest
from gated_cases import VARIANTS

import linbench

SHAPE = (2, 8, 1024, 64, 32)  # batch, heads, seq, Dk, Dv


@pytest.mark.parametrize("name", ["retention", "simple-gla", "gla"])
def test_a_decaying_variant_counts_as_the_seed_linear_forms(name: str) -> None:
    """4·S·Dk·Dv forward, the same count as cosine's, so that GFLOP/s compare."""
    for mode in ("fwd", "bwd", "fwdbwd"):
        want = linbench.get_variant("cosine").flops(*SHAPE, True, mode)
        assert VARIANTS[name].flops(*SHAPE, True, mode) == want
    assert VARIANTS[name].flops(*SHAPE, True, "fwd") == 2 * 8 * 1024 * 4 * 64 * 32


@pytest.mark.parametrize("name", ["deltanet", "gated-deltanet", "kda"])
def test_the_delta_rule_counts_its_prediction_too(name: str) -> None:
    """6·S·Dk·Dv forward: predict S̃ᵀk, write k uᵀ, read Sᵀq; backward 2×."""
    variant = VARIANTS[name]
    assert variant.flops(*SHAPE, True, "fwd") == 2 * 8 * 1024 * 6 * 64 * 32
    assert variant.flops(*SHAPE, True, "bwd") == 2 * variant.flops(*SHAPE, True, "fwd")
    assert variant.flops(*SHAPE, True, "fwdbwd") == 3 * variant.flops(*SHAPE, True, "fwd")
    with pytest.raises(ValueError, match="unknown mode 'train'"):
        variant.flops(*SHAPE, True, "train")
