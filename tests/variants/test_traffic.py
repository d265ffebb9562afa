"""The bytes a call moves at least, gates and β included, and the roofline's reading of them (CPU)."""

from __future__ import annotations

import pytest
import torch

import linbench
from linbench.report.roofline import minimal_bytes as roofline_bytes
from linbench.shape import Shape
from linbench.variants.traffic import extra_input_bytes, minimal_bytes

SHAPE = Shape(2, 4, 100, 64, 32)


@pytest.mark.parametrize("name", ["softmax", "cosine", "linear", "retention"])
@pytest.mark.parametrize("mode", ["fwd", "bwd", "fwdbwd"])
@pytest.mark.parametrize(("dtype", "label"), [(torch.float32, "fp32"), (torch.bfloat16, "bf16")])
def test_a_variant_without_extra_inputs_moves_what_the_roofline_counts(
    name: str, mode: str, dtype: torch.dtype, label: str
) -> None:
    """The same model on both sides: a run that records bytes and one that did not agree."""
    variant = linbench.get_variant(name)
    assert minimal_bytes(mode, SHAPE, dtype, variant.extra_inputs) == roofline_bytes(mode, SHAPE, label)


def test_gates_and_beta_are_read_once_per_pass_and_their_gradients_written() -> None:
    """Per (batch, head, token), fp32 q: gated-deltanet's g and β are 4 bytes each, read once a
    pass; bwd writes both gradients; gla's gate is Dk wide."""
    gated_delta = linbench.get_variant("gated-deltanet").extra_inputs
    assert extra_input_bytes("fwd", gated_delta, 64, torch.float32) == 2 * 4
    assert extra_input_bytes("bwd", gated_delta, 64, torch.float32) == 4 * 4
    assert extra_input_bytes("fwdbwd", gated_delta, 64, torch.float32) == 6 * 4
    assert extra_input_bytes("fwd", linbench.get_variant("gla").extra_inputs, 64, torch.float32) == 64 * 4
    # 16-bit q: the gate stays fp32 (4 bytes), β comes in bf16 (2).
    assert extra_input_bytes("fwd", gated_delta, 64, torch.bfloat16) == 4 + 2
    gla = linbench.get_variant("gla")
    qkv = roofline_bytes("fwdbwd", SHAPE, "fp32")
    assert minimal_bytes("fwdbwd", SHAPE, torch.float32, gla.extra_inputs) == qkv + 2 * 4 * 100 * 3 * 64 * 4
    assert minimal_bytes("decode", SHAPE, torch.float32, gla.extra_inputs) is None


def test_a_gva_call_counts_q_and_k_at_the_q_k_heads_and_v_gates_beta_at_the_value_heads() -> None:
    """By hand: gated-deltanet fwd, fp32, B1 S100 Dk = Dv = 128, Qwen3-Next's 16 q/k heads and 32
    value heads: q 16 + k 16 heads of 128, v 32 and the output 32 of 128, g and β (4 bytes each,
    read once) per value head."""
    gva = Shape(1, 16, 100, 128, 128, v_heads=32)
    gated_delta = linbench.get_variant("gated-deltanet").extra_inputs
    by_hand = 100 * (128 * (16 + 16 + 32 + 32) * 4 + 32 * 2 * 4)
    assert minimal_bytes("fwd", gva, torch.float32, gated_delta) == by_hand


def test_a_grouped_query_call_counts_k_and_v_at_the_key_value_heads() -> None:
    """By hand: softmax fwdbwd, bf16, B2 S50 Dk 64 Dv 32, 8 q heads and 2 key/value heads: q read
    twice and dq written (3 × 8 heads × 64), k likewise (3 × 2 × 64), v (3 × 2 × 32), the output
    written and dO read (2 × 8 × 32)."""
    gqa = Shape(2, 8, 50, 64, 32, kv_heads=2)
    by_hand = 2 * 50 * (3 * 8 * 64 + 3 * 2 * 64 + 3 * 2 * 32 + 2 * 8 * 32) * 2
    assert minimal_bytes("fwdbwd", gqa, torch.bfloat16, linbench.get_variant("softmax").extra_inputs) == by_hand
