"""The gated variants carry a constant-size state: fed in pieces or token by token, they give
the whole sequence's outputs (CPU, fp64)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

import pytest
import torch
from gated_cases import BATCH, DIM_K, DIM_V, HEADS, VARIANTS, draw_case, one_thread

from linbench.variants.decoding import state_bytes
from linbench.variants.extra_inputs import take_tokens
from linbench.variants.gated.numerics import GatedState

SEQ = 150  # more than two 64-token chunks: prefill blocks span chunk edges


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    with one_thread():
        yield


def _split(name: str, regime: str = "strong") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict]:
    leaves = draw_case(name, SEQ, regime)
    return leaves.pop("q"), leaves.pop("k"), leaves.pop("v"), leaves


def _whole(name: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, extras: dict) -> torch.Tensor:
    variant = VARIANTS[name]
    recurrent = variant.impl("recurrent")
    return recurrent.fn(q, k, v, causal=True, **variant.bind_params(recurrent, extras))


def _part(extras: dict, name: str, start: int, stop: int) -> dict:
    return take_tokens(VARIANTS[name].extra_inputs, extras, start, stop)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_streaming_token_by_token_equals_the_recurrent_form(name: str) -> None:
    variant = VARIANTS[name]
    q, k, v, extras = _split(name)
    state = None
    rows = []
    for t in range(SEQ):
        token = slice(t, t + 1)
        row, state = variant.stream_attention(
            q[..., token, :], k[..., token, :], v[..., token, :], state=state, **_part(extras, name, t, t + 1)
        )
        rows.append(row)
    torch.testing.assert_close(torch.cat(rows, dim=-2), _whole(name, q, k, v, extras), rtol=1e-12, atol=1e-12)
    assert isinstance(state, GatedState) and state.position == SEQ


@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("splits", [(37,), (1, 100), (13, 80, 139)])
def test_chunked_prefill_in_blocks_then_steps_equals_the_whole(name: str, splits: tuple[int, ...]) -> None:
    """The decoder's prefill (the chunked form, 64-token chunks) continues from a carried
    state across blocks of any length; its steps then give the last rows of the whole."""
    decoder = VARIANTS[name].decoder("recurrent")
    q, k, v, extras = _split(name)
    bound = VARIANTS[name].bind_params(None, extras)
    state = None
    edges = (0, *splits)
    for start, stop in pairwise(edges):
        part = slice(start, stop)
        pieces = _part(bound, name, start, stop)
        state = decoder.prefill(q[..., part, :], k[..., part, :], v[..., part, :], state=state, capacity=SEQ, **pieces)
    context = splits[-1]
    rows = []
    for t in range(context, SEQ):
        token = slice(t, t + 1)
        row, state = decoder.step(
            q[..., token, :], k[..., token, :], v[..., token, :], state=state, **_part(bound, name, t, t + 1)
        )
        rows.append(row)
    whole = _whole(name, q, k, v, extras)
    torch.testing.assert_close(torch.cat(rows, dim=-2), whole[..., context:, :], rtol=1e-12, atol=1e-12)
    assert state.position == SEQ


@pytest.mark.parametrize("name", list(VARIANTS))
def test_the_state_is_constant_in_size(name: str) -> None:
    """B·H·Dk·Dv numbers whatever the context: what ``linbench decode`` will report."""
    decoder = VARIANTS[name].decoder("recurrent")
    q, k, v, extras = _split(name)
    bound = VARIANTS[name].bind_params(None, extras)
    first = _part(bound, name, 0, 5)
    short = decoder.prefill(q[..., :5, :], k[..., :5, :], v[..., :5, :], state=None, capacity=SEQ, **first)
    long = decoder.prefill(q, k, v, state=None, capacity=SEQ, **bound)
    assert state_bytes(short) == state_bytes(long) == BATCH * HEADS * DIM_K * DIM_V * 8
    assert (decoder.state_memory, decoder.step_time) == ("O(d²)", "O(d²)")


@pytest.mark.parametrize("name", ["retention", "gla", "gated-deltanet", "kda"])
def test_the_recurrent_form_gives_the_same_rows_whether_autograd_records_it_or_not(name: str) -> None:
    """CPU. Under no_grad the rows are written into one output as they come (no list of live
    rows to fragment the heap); recorded, they are stacked. Both give the same output."""
    leaves = draw_case(name, 37, "strong")
    q, k, v = leaves.pop("q"), leaves.pop("k"), leaves.pop("v")
    impl = VARIANTS[name].impl("recurrent")
    with torch.no_grad():
        inference = impl.fn(q, k, v, causal=True, **VARIANTS[name].bind_params(impl, leaves))
    recorded = impl.fn(q.requires_grad_(), k, v, causal=True, **VARIANTS[name].bind_params(impl, leaves))
    assert recorded.requires_grad and not inference.requires_grad
    torch.testing.assert_close(inference, recorded.detach(), rtol=0, atol=0)
