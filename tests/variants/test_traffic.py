"""The bytes a call moves at least, gates and β included, and the roofline's reading of them (CPU)."""

from __future__ import annotations

import pytest
import torch

import linbench
from linbench.report.roofline import minimal_bytes as roofline_bytes
from linbench.variants.traffic import extra_input_bytes, minimal_bytes

SHAPE = (2, 4, 100, 64, 32)


@pytest.mark.parametrize("name", ["softmax", "cosine", "linear", "retention"])
@pytest.mark.parametrize("mode", ["fwd", "bwd", "fwdbwd"])
@pytest.mark.parametrize(("dtype", "label"), [(torch.float32, "fp32"), (torch.bfloat16, "bf16")])
def test_a_variant_without_extra_inputs_moves_what_the_roofline_counts(
    name: str, mode: str, dtype: torch.dtype, label: str
) -> None:
    """The same model on both sides: a run that records bytes and one that did not agree."""
    variant = linbench.get_variant(name)
    assert minimal_bytes(mode, SHAPE, dtype, variant.extra_inputs) == roofline_bytes(mode, *SHAPE, label)


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
    qkv = roofline_bytes("fwdbwd", *SHAPE, "fp32")
    assert minimal_bytes("fwdbwd", SHAPE, torch.float32, gla.extra_inputs) == qkv + 2 * 4 * 100 * 3 * 64 * 4
    assert minimal_bytes("decode", SHAPE, torch.float32, gla.extra_inputs) is None
