"""The recurrent forms carry their state: a sequence fed in pieces equals the whole."""

from __future__ import annotations

import pytest
import torch

import linbench
from linbench.check.correctness import Shape, make_inputs

STREAMED = ["cosine", "cosformer", "heinsen", "linear"]


def stream_params(name: str, seq: int) -> dict[str, int]:
    """Parameters derived from the length must be fixed when streaming (Variant.stream_attention)."""
    return {"cosine": {"seq_len": seq}, "cosformer": {"M": seq}}.get(name, {})


@pytest.mark.parametrize("name", STREAMED)
@pytest.mark.parametrize("split", [1, 37, 50, 99])
def test_two_halves_equal_the_whole(name: str, split: int) -> None:
    variant = linbench.get_variant(name)
    q, k, v, _ = make_inputs(variant, Shape(2, 3, 100, 16, 24), "cpu")
    params = stream_params(name, 100)
    whole = linbench.attention(q, k, v, variant=name, impl="recurrent", causal=True, **params)
    first, state = variant.stream_attention(q[..., :split, :], k[..., :split, :], v[..., :split, :], **params)
    second, state = variant.stream_attention(
        q[..., split:, :], k[..., split:, :], v[..., split:, :], state=state, **params
    )
    torch.testing.assert_close(torch.cat((first, second), dim=-2), whole, rtol=1e-10, atol=1e-10)
    assert state.position == 100


@pytest.mark.parametrize("name", STREAMED)
def test_token_by_token_equals_parallel(name: str) -> None:
    """Decoding one token at a time reproduces the parallel (chunked) form's rows."""
    variant = linbench.get_variant(name)
    q, k, v, _ = make_inputs(variant, Shape(1, 2, 20, 8, 8), "cpu")
    params = stream_params(name, 20)
    parallel = linbench.attention(q, k, v, variant=name, impl="chunked", causal=True, **params)
    state = None
    rows = []
    for t in range(20):
        row, state = variant.stream_attention(
            q[..., t : t + 1, :], k[..., t : t + 1, :], v[..., t : t + 1, :], state=state, **params
        )
        rows.append(row)
    torch.testing.assert_close(torch.cat(rows, dim=-2), parallel, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("split", [1, 37, 99])
def test_softmax_streams_through_its_kv_cache(split: int) -> None:
    """Softmax has no fixed-size state: its stream carries every key and value so far."""
    variant = linbench.get_variant("softmax")
    q, k, v, _ = make_inputs(variant, Shape(2, 3, 100, 16, 24), "cpu")
    whole = linbench.attention(q, k, v, variant="softmax", impl="naive", causal=True)
    first, state = variant.stream_attention(q[..., :split, :], k[..., :split, :], v[..., :split, :])
    second, state = variant.stream_attention(q[..., split:, :], k[..., split:, :], v[..., split:, :], state=state)
    torch.testing.assert_close(torch.cat((first, second), dim=-2), whole, rtol=1e-10, atol=1e-10)
    assert state.position == 100


def test_a_variant_without_a_stream_says_so() -> None:
    from linbench.errors import ImplUnavailableError
    from linbench.variants.registry import Impl, Variant

    identity = Impl("ref", lambda q, k, v, *, causal: v, "identity", "O(s)", "O(s)")
    variant = Variant("no-stream", "O = V", (identity,), "ref", (), lambda *a: 0.0, "O(s)", "O(s)")
    q = torch.randn(1, 1, 4, 8)
    with pytest.raises(ImplUnavailableError, match="no recurrent form"):
        variant.stream_attention(q, q, q)
