"""Decoding equals the parallel forms: N steps after a prefill are the last N rows of the whole."""

from __future__ import annotations

import pytest
import torch

import linbench
from linbench.check.correctness import Shape, check_decoder, make_inputs
from linbench.variants.decoding import decode, state_bytes
from linbench.variants.registry import Impl, Variant

LINEAR = ["cosine", "cosformer", "heinsen", "linear"]
DECODERS = [
    pytest.param(name, decoder, id=f"{name}:{decoder}")
    for name in linbench.list_variants()
    for decoder, declared in linbench.get_variant(name).decoders.items()
    if declared.library is None  # a library's (fla's) has no fp64 form: its own interpreted tests
]


def _inputs(name: str, shape: Shape) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """fp64 inputs and learnable parameters (cosine's per-head norm_const) on CPU."""
    return make_inputs(linbench.get_variant(name), shape, "cpu")


@pytest.mark.parametrize("name", LINEAR)
@pytest.mark.parametrize("context", [0, 1, 57, 128, 200])
def test_recurrent_steps_equal_the_last_rows_of_the_chunked_impl(name: str, context: int) -> None:
    q, k, v, learnable = _inputs(name, Shape(2, 3, 212, 16, 24))
    variant = linbench.get_variant(name)
    parallel = linbench.attention(q, k, v, variant=name, impl="chunked", **variant.length_params(212, learnable))
    rows, state = decode(variant, "recurrent", q, k, v, context=context, **learnable)
    assert rows.shape == (2, 3, 212 - context, 24)
    torch.testing.assert_close(rows, parallel[..., context:, :], rtol=1e-10, atol=1e-10)
    assert state.position == 212


@pytest.mark.parametrize("impl", ["naive", "sdpa"])
@pytest.mark.parametrize("decoder", ["kvcache", "recompute"])
def test_softmax_steps_equal_the_last_rows_of_full_causal_softmax(decoder: str, impl: str) -> None:
    q, k, v, _ = _inputs("softmax", Shape(2, 3, 150, 16, 24))
    full = linbench.attention(q, k, v, variant="softmax", impl=impl, causal=True)
    rows, state = decode(linbench.get_variant("softmax"), decoder, q, k, v, context=118)
    torch.testing.assert_close(rows, full[..., 118:, :], rtol=1e-10, atol=1e-10)
    assert state.length == 150


@pytest.mark.parametrize(("name", "decoder"), DECODERS)
def test_a_prefill_in_blocks_gives_the_same_state_as_one_prefill(name: str, decoder: str) -> None:
    q, k, v, learnable = _inputs(name, Shape(1, 2, 300, 8, 8))
    variant = linbench.get_variant(name)
    whole, _ = decode(variant, decoder, q, k, v, context=290, **learnable)
    blocks, _ = decode(variant, decoder, q, k, v, context=290, block=37, **learnable)
    torch.testing.assert_close(blocks, whole, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(("name", "decoder"), DECODERS)
@pytest.mark.parametrize("dtype", [pytest.param(torch.float32, id="fp32"), pytest.param(torch.bfloat16, id="bf16")])
def test_decoding_in_low_precision_stays_within_tolerance(name: str, decoder: str, dtype: torch.dtype) -> None:
    """After a 1k-token prefill in fp32 or bf16 the steps still match the fp64 truth."""
    result = check_decoder(linbench.get_variant(name), decoder, Shape(1, 2, 1032, 16, 16), steps=8, dtype=dtype)
    assert result.ok, result.describe()


@pytest.mark.parametrize("name", LINEAR)
def test_a_recurrent_state_is_the_same_size_at_any_context(name: str) -> None:
    variant = linbench.get_variant(name)
    sizes = set()
    for context in (16, 256, 1024):
        q, k, v, _ = _inputs(name, Shape(1, 2, context + 1, 8, 8))
        sizes.add(state_bytes(decode(variant, "recurrent", q, k, v, context=context)[1]))
    (size,) = sizes
    assert size >= 2 * 8 * 8 * 8  # at least the Dk x Dv fp64 matrix per head


@pytest.mark.parametrize("decoder", ["kvcache", "recompute"])
def test_a_kv_cache_holds_every_token(decoder: str) -> None:
    """K and V (and the queries, to recompute) of context + generated tokens, in fp64 here."""
    q, k, v, _ = _inputs("softmax", Shape(1, 2, 1030, 8, 8))
    _, state = decode(linbench.get_variant("softmax"), decoder, q, k, v, context=1024)
    tensors = 3 if decoder == "recompute" else 2
    assert state_bytes(state) == tensors * 2 * 1030 * 8 * 8


def test_a_cache_grows_past_the_capacity_it_was_given() -> None:
    softmax = linbench.get_variant("softmax")
    q, k, v, _ = _inputs("softmax", Shape(1, 1, 40, 8, 8))
    kvcache = softmax.decoder("kvcache")
    state = kvcache.prefill(q[..., :10, :], k[..., :10, :], v[..., :10, :], state=None, capacity=12)
    out, state = kvcache.step(q[..., 10:, :], k[..., 10:, :], v[..., 10:, :], state=state)
    full = linbench.attention(q, k, v, variant="softmax", impl="naive")
    torch.testing.assert_close(out, full[..., 10:, :], rtol=1e-10, atol=1e-10)
    assert state.keys.shape[-2] >= 40


def test_asking_for_an_impl_or_an_unknown_decoder_names_the_decoders() -> None:
    cosine = linbench.get_variant("cosine")
    with pytest.raises(ValueError, match="cosine:chunked is an impl, not a decoder; decoders of cosine: recurrent"):
        cosine.decoder("chunked")
    with pytest.raises(ValueError, match="cosine:kvcache is no decoder"):
        cosine.decoder("kvcache")


def _identity_variant(**extra: object) -> Variant:
    identity = Impl("ref", lambda q, k, v, *, causal: v, "identity", "O(s)", "O(s)")
    return Variant("plain", "O = V", (identity,), "ref", (), lambda *a: 0.0, "O(s)", "O(s)", **extra)


def test_a_variant_without_a_recurrent_form_cannot_decode() -> None:
    with pytest.raises(ValueError, match="plain cannot decode"):
        _identity_variant().decoder("recurrent")


def test_a_plugin_stream_alone_makes_a_recurrent_decoder() -> None:
    def stream(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, state: int | None) -> tuple[torch.Tensor, int]:
        return v, (state or 0) + q.shape[-2]

    variant = _identity_variant(stream=stream)
    q = torch.randn(1, 1, 9, 4)
    rows, state = decode(variant, "recurrent", q, q, q, context=5, block=2)
    assert torch.equal(rows, q[..., 5:, :]) and state == 9
