"""Hybrid presets: their two layer kinds, tensor-parallel shards, and the sweeps they plan (CPU, no run)."""

from __future__ import annotations

import pytest

from linbench.hybrids import HYBRIDS, LayerShape
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import build_spec
from linbench.sweep.values import SpecError


def test_tp8_on_qwen35_397b_gives_two_qk_heads_against_eight_value_heads() -> None:
    """FlashQLA benchmarks the 397B at TP8 as (2, 8); its 2 kv heads are replicated, one per rank."""
    shard = HYBRIDS["qwen3.5-397b"].sharded(8)
    assert (shard.linear.heads, shard.linear.v_heads) == (2, 8)
    assert (shard.softmax.heads, shard.softmax.kv_heads) == (4, 1)
    assert [HYBRIDS["qwen3.5-397b"].sharded(tp).linear.heads for tp in (1, 2, 4)] == [16, 8, 4]


def test_a_tp_that_does_not_divide_is_refused() -> None:
    with pytest.raises(ValueError, match="tp: 3 does not divide qwen3-next-80b's gated-deltanet heads 16"):
        HYBRIDS["qwen3-next-80b"].sharded(3)
    with pytest.raises(ValueError, match="neither divides nor is a multiple of x's kv_heads 3"):
        LayerShape("softmax", 1, 12, 64, 64, kv_heads=3).sharded(2, "x")


@pytest.mark.parametrize("name", list(HYBRIDS))
def test_every_hybrid_plans_one_block_per_layer_kind(name: str) -> None:
    hybrid = HYBRIDS[name]
    spec = build_spec(SweepRequest(preset=name, seq=256))
    linear, softmax = spec.blocks
    assert spec.variants == (hybrid.linear.variant,) and spec.baselines == ("softmax",)
    assert linear.layer_variants == (hybrid.linear.variant,) and softmax.layer_variants == ("softmax",)
    assert linear.heads == (hybrid.linear.heads,) and softmax.heads == (hybrid.softmax.heads,)
    assert linear.v_heads == (
        None if hybrid.linear.v_heads in (None, hybrid.linear.heads) else (hybrid.linear.v_heads,)
    )
    # A model with no softmax layer (gdn2-1.3b, rwkv7-2.9b) still plans its softmax block: the
    # all-softmax model the cost table compares it with.
    assert hybrid.linear.layers > 0 and hybrid.softmax.layers >= 0 and "(" in hybrid.source


def test_tp_is_for_a_preset_and_divides_a_softmax_preset_too() -> None:
    assert build_spec(SweepRequest(preset="llama3-70b", tp=8, seq=256)).blocks[0].heads == (8,)
    assert build_spec(SweepRequest(preset="qwen3.5-397b", tp=8, seq=256)).name == "qwen3.5-397b-tp8"
    with pytest.raises(SpecError, match="give it with --preset"):
        build_spec(SweepRequest(tp=2, seq=256))


def test_kimi_linear_s_mla_layers_decode_absorbed_one_latent_head_per_rank() -> None:
    """Kimi Linear's config: kv_lora_rank 512, qk_rope_head_dim 64. A served MLA decode attends
    to one latent of 576 per token (values its first 512), shared by every q head; at TP4 each
    rank has 8 q heads and the whole latent. The prefill keeps the decompressed heads."""
    kimi = HYBRIDS["kimi-linear-48b"]
    mla = kimi.sharded(4).decoding().softmax
    assert (mla.heads, mla.kv_heads, mla.dim, mla.dim_v) == (8, 1, 576, 512) and mla.absorbed
    assert kimi.decoding().linear == kimi.linear  # KDA decodes as it prefills
    decode = build_spec(SweepRequest(command="decode", preset="kimi-linear-48b", tp=4, context="256"))
    assert (decode.blocks[1].heads, decode.blocks[1].kv_heads, decode.blocks[1].dim, decode.blocks[1].dim_v) == (
        (8,),
        (1,),
        (576,),
        (512,),
    )
    prefill = build_spec(SweepRequest(preset="kimi-linear-48b", tp=4, seq=256))
    assert (prefill.blocks[1].heads, prefill.blocks[1].dim, prefill.blocks[1].dim_v) == ((8,), (192,), (128,))
