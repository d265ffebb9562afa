"""The axes model shapes add, and a hybrid preset's blocks under --v-heads and --kv-heads (CPU,
no run: sweeps planned, not measured)."""

from __future__ import annotations

import pytest

from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import build_spec


@pytest.mark.parametrize("command", ["run", "decode"])
def test_v_heads_with_a_hybrid_preset_sets_its_linear_layers_value_heads(command: str) -> None:
    length = {"seq": 256} if command == "run" else {"context": 256}
    linear, softmax = build_spec(SweepRequest(command=command, preset="qwen3-next-80b", v_heads=64, **length)).blocks
    assert linear.layer_variants == ("gated-deltanet",) and (linear.heads, linear.v_heads) == ((16,), (64,))
    assert softmax.layer_variants == ("softmax",) and softmax.v_heads is None and softmax.kv_heads == (2,)


def test_kv_heads_with_a_hybrid_preset_sets_its_softmax_layers_key_value_heads() -> None:
    linear, softmax = build_spec(SweepRequest(preset="qwen3-next-80b", kv_heads=4, seq=256)).blocks
    assert softmax.kv_heads == (4,) and linear.kv_heads is None and linear.v_heads == (32,)


def test_both_groupings_with_a_hybrid_preset_and_a_tp_shard() -> None:
    linear, softmax = build_spec(SweepRequest(preset="qwen3.5-397b", tp=8, v_heads=16, kv_heads=4, seq=256)).blocks
    assert (linear.heads, linear.v_heads, softmax.heads, softmax.kv_heads) == ((2,), (16,), (4,), (4,))
