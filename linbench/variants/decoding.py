"""Generating with a variant's decoder: prefill a context, then one token per step.

``decode`` is what the correctness gate and the tests run; ``state_bytes`` is what
``linbench decode`` reports as the memory the attention keeps between tokens.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from linbench.variants.extra_inputs import check_extra_inputs, take_tokens
from linbench.variants.heads import check_value_heads, expand_call, per_value_head
from linbench.variants.validation import check_qkv
from linbench.variants.variant import Variant


def _tensors(state: Any) -> Iterator[torch.Tensor]:
    """Every tensor inside a state: dataclass fields, mappings and sequences are searched."""
    if isinstance(state, torch.Tensor):
        yield state
    elif dataclasses.is_dataclass(state) and not isinstance(state, type):
        for item in dataclasses.fields(state):
            yield from _tensors(getattr(state, item.name))
    elif isinstance(state, Mapping):
        for value in state.values():
            yield from _tensors(value)
    elif isinstance(state, list | tuple):
        for value in state:
            yield from _tensors(value)


def state_bytes(state: Any) -> int:
    """Bytes of the tensors a decoding state holds (numel × element size, each tensor once).

    A KV cache counts its whole buffers, room for the tokens still to come included: that
    memory is held from the prefill on.
    """
    unique = {id(t): t for t in _tensors(state)}
    return sum(t.numel() * t.element_size() for t in unique.values())


def decode(
    variant: Variant,
    decoder: str,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    context: int,
    block: int | None = None,
    **params: Any,
) -> tuple[torch.Tensor, Any]:
    """Prefill the first ``context`` tokens (``block`` tokens at a time when given), then
    step through the rest one token at a time.

    Returns the steps' outputs, (B, H, S − context, Dv) in q's dtype, and the final state.
    k and v may have fewer heads than q (grouped-query attention): a decoder without native
    support (``Decoder.gqa``) gets them repeated to q's heads first.
    Extra inputs (a gated variant's ``g``, ``beta``) are given for the whole sequence and cut
    per block and step. Parameters derived from the length (cosine's seq_len, cosformer's M) are fixed to the
    whole length S, so the rows equal the last rows of any impl over the whole sequence.
    """
    check_qkv(q, k, v)
    check_value_heads(variant.name, variant.value_heads, k, v)  # GVA: the state is per value head
    total = q.shape[-2]
    if not 0 <= context < total:
        raise ValueError(f"context must leave at least one token to generate: 0 <= {context} < {total}")
    chosen = variant.decoder(decoder)
    bound = variant.length_params(total, params)
    if variant.extra_inputs:
        check_extra_inputs(variant.name, variant.extra_inputs, bound, per_value_head(q, k, v), dim_v=v.shape[-1])
    if k.shape[1] != q.shape[1] and not chosen.gqa:
        k, v, bound = expand_call(q, k, v, bound, [extra.name for extra in variant.extra_inputs])
    state = None
    size = block or max(context, 1)
    for start in range(0, context, size):
        part = slice(start, min(start + size, context))
        given = _tokens_of(variant, bound, part)
        state = chosen.prefill(q[..., part, :], k[..., part, :], v[..., part, :], state=state, capacity=total, **given)
    rows = []
    for t in range(context, total):
        token = slice(t, t + 1)
        given = _tokens_of(variant, bound, token)
        row, state = chosen.step(q[..., token, :], k[..., token, :], v[..., token, :], state=state, **given)
        rows.append(row)
    return torch.cat(rows, dim=-2).to(q.dtype), state


def _tokens_of(variant: Variant, bound: dict[str, Any], part: slice) -> dict[str, Any]:
    """The parameters, with the extra inputs (gates, β) cut to the tokens of ``part``, as q, k
    and v are: a piece of the sequence takes its own gates."""
    return take_tokens(variant.extra_inputs, bound, part.start, part.stop)
