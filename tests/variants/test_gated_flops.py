"""The gated variants' FLOP and byte counts follow linbench's convention (no device involved)."""

from __future__ import annotations

import pytest
from gated_cases import VARIANTS

import linbench
from linbench.variants.gated.flops import (
    decay_chunked_flops,
    decay_quadratic_flops,
    delta_chunked_flops,
    delta_quadratic_flops,
)

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


def test_the_forms_own_counts() -> None:
    batch, heads, seq, dim_k, dim_v = SHAPE
    tokens = batch * heads * seq
    assert decay_chunked_flops(*SHAPE, True, "fwd", chunk_size=64) == tokens * (2 * 64 * 96 + 4 * 64 * 32)
    assert decay_quadratic_flops(*SHAPE, True, "fwd") == tokens * seq * 2 * 96
    assert delta_chunked_flops(*SHAPE, True, "fwd", chunk_size=32) == tokens * (32 * (5 * 64 + 3 * 32) + 6 * 64 * 32)
    assert delta_quadratic_flops(*SHAPE, True, "fwdbwd") == 3 * tokens * seq * (4 * 64 + 3 * 32)
    # A chunk of one token does the recurrence's work plus its 1×1 "blocks".
    assert decay_chunked_flops(*SHAPE, True, "fwd", chunk_size=1) == VARIANTS["gla"].flops(*SHAPE, True, "fwd") + (
        tokens * 2 * (dim_k + dim_v)
    )
