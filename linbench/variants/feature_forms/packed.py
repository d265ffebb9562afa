"""The linear forms on packed variable-length batches, and on padded ones with the pads masked.

- chunked, packed: each sequence's features and chunked scan over its view of the pack, one
  sequence after another. Each scan starts from an empty state, so the state resets at every
  boundary; no token of padding is computed, at the cost of one scan per sequence.
- recurrent, packed: every sequence advances one token per step together ("lockstep"), the
  sequences sorted longest first so that those still running are the first rows of the state;
  a sequence that ends drops off the end of the batch. L_max steps, as a padded batch takes,
  but each step touches only the sequences still running, and no padding at all.
- the masked forms (a padded bidirectional batch): the pads' key features are zeroed, so they
  add nothing to any state, sum or normaliser.

Features are computed per sequence, since some depend on the position in it (cosFormer's
angles); parameters derived from the length arrive fixed to the longest sequence (varlen.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from linbench.variants.declarations import MaskedFn, PackedFn
from linbench.variants.feature_forms.chunked import chunked_linear_attention
from linbench.variants.feature_forms.naive import naive_linear_attention
from linbench.variants.feature_forms.recurrent import LinearState, recurrent_bidirectional, recurrent_scan
from linbench.variants.impl_helpers import positive_int
from linbench.variants.varlen import Segments, lockstep_order

# One form on features: (fq, fk, fv, eps, causal, params) -> output.
Form = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, "float | None", bool, dict[str, Any]], torch.Tensor]


def _naive_form(fq: torch.Tensor, fk: torch.Tensor, fv: torch.Tensor, eps: float | None, causal: bool, p: Any) -> Any:
    return naive_linear_attention(fq, fk, fv, causal=causal, eps=eps)


def _chunked_form(fq: torch.Tensor, fk: torch.Tensor, fv: torch.Tensor, eps: float | None, causal: bool, p: Any) -> Any:
    size = positive_int("chunk_size", p["chunk_size"])
    return chunked_linear_attention(fq, fk, fv, causal=causal, eps=eps, chunk_size=size)


def _recurrent_form(
    fq: torch.Tensor, fk: torch.Tensor, fv: torch.Tensor, eps: float | None, causal: bool, p: Any
) -> Any:
    if causal:
        return recurrent_scan(fq, fk, fv, eps=eps)[0]
    return recurrent_bidirectional(fq, fk, fv, eps=eps)


FORMS: dict[str, Form] = {"naive": _naive_form, "chunked": _chunked_form, "recurrent": _recurrent_form}
FORM_PARAMS = {"naive": (), "chunked": ("chunk_size",), "recurrent": ()}


def _split_params(form: str, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the form's own parameters, the feature map's)."""
    own = {name: params.pop(name) for name in FORM_PARAMS[form]}
    return own, params


def masked_form(features: Any, form: str) -> MaskedFn:
    """``form`` on a padded batch, the pads' key features zeroed (a bidirectional batch's mask)."""

    def masked(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, key_mask: torch.Tensor, causal: bool, **params: Any
    ) -> torch.Tensor:
        own, feature_params = _split_params(form, dict(params))
        f = features(q, k, v, offset=0, **feature_params)
        keep = key_mask[:, None, :, None].to(f.k.dtype)
        return FORMS[form](f.q, f.k * keep, f.v, f.eps, causal, own)

    return masked


def packed_chunked(features: Any) -> PackedFn:
    """The chunked form over each sequence of a pack in turn (module doc)."""

    def chunked(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, segments: Segments, causal: bool, **params: Any
    ) -> torch.Tensor:
        own, feature_params = _split_params("chunked", dict(params))
        outs = []
        for qi, ki, vi in zip(segments.split(q), segments.split(k), segments.split(v), strict=True):
            f = features(qi, ki, vi, offset=0, **feature_params)
            outs.append(_chunked_form(f.q, f.k, f.v, f.eps, causal, own))
        return torch.cat(outs, dim=2)

    return chunked


def packed_recurrent(features: Any) -> PackedFn:
    """The recurrent form, every sequence of a pack a token per step together (module doc)."""

    def recurrent(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, segments: Segments, causal: bool, **params: Any
    ) -> torch.Tensor:
        parts = [
            features(qi, ki, vi, offset=0, **params)
            for qi, ki, vi in zip(segments.split(q), segments.split(k), segments.split(v), strict=True)
        ]
        fq, fk, fv = (torch.cat([getattr(part, name) for part in parts], dim=2) for name in ("q", "k", "v"))
        return lockstep_scan(fq, fk, fv, segments, eps=parts[0].eps, causal=causal)

    return recurrent


def _read(q_t: torch.Tensor, state: LinearState, eps: float | None) -> torch.Tensor:
    """O_t = q_t H (over q_t · z + eps when normalised) for the running sequences: (n, H, Dv)."""
    num = (q_t.unsqueeze(-2) @ state.kv).squeeze(-2)
    if state.key_sum is None or eps is None:
        return num
    return num / ((q_t * state.key_sum).sum(-1, keepdim=True) + eps)


def _absorb(state: LinearState, k_t: torch.Tensor, v_t: torch.Tensor) -> LinearState:
    """The first ``n`` sequences' states after one more token each (n = k_t's rows); out of place."""
    n = k_t.shape[0]
    kv = state.kv[:n] + k_t.unsqueeze(-1) * v_t.unsqueeze(-2)
    key_sum = state.key_sum[:n] + k_t if state.key_sum is not None else None
    return LinearState(kv=kv, key_sum=key_sum, position=state.position + 1)


def lockstep_scan(
    fq: torch.Tensor, fk: torch.Tensor, fv: torch.Tensor, segments: Segments, *, eps: float | None, causal: bool
) -> torch.Tensor:
    """Causal (or bidirectional) linear attention of every sequence of a pack, a token of each
    per step; features (1, H, T, D) in, (1, H, T, Dv) out."""
    positions, counts, inverse = lockstep_order(segments, fq.device)

    def steps(x: torch.Tensor) -> list[torch.Tensor]:
        # Step order along S, then one (n, H, D) piece per step: one gather, one split.
        return [part.transpose(0, 1) for part in x[0].index_select(1, positions).split(counts, dim=1)]

    qs, ks, vs = steps(fq), steps(fk), steps(fv)
    state = LinearState.empty(fq.expand(segments.count, -1, -1, -1), fv, normalised=eps is not None)
    outs: list[torch.Tensor] = []
    if causal:
        for q_t, k_t, v_t in zip(qs, ks, vs, strict=True):
            state = _absorb(state, k_t, v_t)
            outs.append(_read(q_t, state, eps))
    else:
        final = _final_states(state, ks, vs)
        outs = [_read(q_t, _first(final, q_t.shape[0]), eps) for q_t in qs]
    return torch.cat(outs, dim=0).index_select(0, inverse).transpose(0, 1).unsqueeze(0)


def _first(state: LinearState, n: int) -> LinearState:
    key_sum = state.key_sum[:n] if state.key_sum is not None else None
    return LinearState(kv=state.kv[:n], key_sum=key_sum, position=state.position)


def _final_states(state: LinearState, ks: list[torch.Tensor], vs: list[torch.Tensor]) -> LinearState:
    """Every sequence's state after its last token (longest first): a sequence's state is set
    aside when it ends, before the batch shrinks past it."""
    ended: list[LinearState] = []
    for k_t, v_t in zip(ks, vs, strict=True):
        n = k_t.shape[0]
        if n < state.kv.shape[0]:
            rest = state.key_sum[n:] if state.key_sum is not None else None
            ended.append(LinearState(kv=state.kv[n:], key_sum=rest, position=state.position))
        state = _absorb(state, k_t, v_t)
    ended.append(state)
    ended.reverse()  # longest first
    key_sum = torch.cat([s.key_sum for s in ended]) if state.key_sum is not None else None  # type: ignore[misc]
    return LinearState(kv=torch.cat([s.kv for s in ended]), key_sum=key_sum, position=state.position)
