"""The public entry points: attention(), attention_packed(), attention_padded(), list_variants(),
get_variant() (a whole sweep from Python is linbench.runner.sweeps's run_sweep() and plan_sweep();
docs/python-api.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.declarations import Impl
from linbench.variants.heads import check_value_heads, expand_call, per_value_head
from linbench.variants.registry import get_variant, list_variants
from linbench.variants.validation import check_qkv
from linbench.variants.variant import Variant
from linbench.variants.varlen import Segments

__all__ = ["attention", "attention_packed", "attention_padded", "get_variant", "list_variants"]


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    variant: str,
    impl: str = "auto",
    causal: bool = True,
    **params: Any,
) -> torch.Tensor:
    """Attention of ``variant`` computed by ``impl``.

    q: (B, H, S, Dk); k: (B, H_kv, S, Dk); v: (B, H_kv, S, Dv), H_kv dividing H (fewer is
    grouped-query attention; a variant's extra inputs then come per key/value head too).
    Or, for a variant with ``value_heads`` (the gated and delta-rule ones), v: (B, H_v, S, Dv)
    with H_v a multiple of H = H_kv (GVA: value head j reads q/k head j // (H_v / H); the
    gates and β then come per value head). Returns (B, H or H_v, S, Dv) in q's dtype, on q's
    device. An impl without native grouped-query
    support (``Impl.gqa``) gets k, v and the extra inputs repeated to H heads, in this call.
    ``impl="auto"`` picks the fastest impl available for the tensors' device. Unknown
    variants, impls or parameters, malformed shapes, a masking the variant does not
    compute (``Variant.masking``) and extra inputs (a gated variant's log-gates ``g``, the
    delta rule's ``beta``) that are missing, misshapen or out of range raise ValueError; an
    impl that cannot run here raises ImplUnavailableError saying why. Checking the extra
    inputs' range reads their values, a device synchronisation.
    """
    return _attend(q, k, v, variant, impl, causal, params, read_values=True)


def attention_prechecked(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    variant: str,
    impl: str = "auto",
    causal: bool = True,
    **params: Any,
) -> torch.Tensor:
    """``attention`` for a caller that checked the extra inputs' values once itself
    (``check_extra_inputs``), as a benchmark's timed calls do: their shapes, dtypes and devices
    are checked, their values are not read, so the call does not wait for the device. The
    same as ``attention`` for a variant without extra inputs."""
    return _attend(q, k, v, variant, impl, causal, params, read_values=False)


def _attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    variant: str,
    impl: str,
    causal: bool,
    params: dict[str, Any],
    *,
    read_values: bool,
) -> torch.Tensor:
    spec: Variant = get_variant(variant)
    if impl != "auto":
        spec.impl(impl)  # an unknown impl name is reported before anything about the tensors
    check_qkv(q, k, v)
    check_value_heads(spec.name, spec.value_heads, k, v)
    _check_causal(causal)
    masking = spec.masking_reason(bool(causal))
    if masking is not None:
        raise ValueError(f"{masking}; call it with causal={not causal}")
    chosen = spec.resolve_impl(impl, q.device)
    params = dict(params)
    held = params.pop("held", None)
    bound = spec.bind_params(chosen, params)
    if spec.extra_inputs:
        from linbench.variants.extra_inputs import check_extra_inputs

        like = per_value_head(q, k, v)
        check_extra_inputs(spec.name, spec.extra_inputs, bound, like, read_values=read_values, dim_v=v.shape[-1])
    if k.shape[1] != q.shape[1] and not chosen.gqa:
        k, v, bound = expand_call(q, k, v, bound, [extra.name for extra in spec.extra_inputs])
    out = chosen.fn(q, k, v, causal=bool(causal), **_with_held(chosen, held, bound))
    return out.to(q.dtype)


def _with_held(chosen: Impl, held: Any, bound: dict[str, Any]) -> dict[str, Any]:
    """``bound`` with what the impl holds precomputed (``Impl.hold``), as given (a benchmark
    made it once, untimed) or else made here."""
    return bound if chosen.hold is None else bound | {"held": held}


def _resolve(
    variant: str, impl: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool
) -> tuple[Variant, Impl]:
    """The variant and the impl to run, after the checks every entry point makes."""
    spec: Variant = get_variant(variant)
    if impl != "auto":
        spec.impl(impl)
    check_qkv(q, k, v)
    check_value_heads(spec.name, spec.value_heads, k, v)
    _check_causal(causal)
    masking = spec.masking_reason(bool(causal))
    if masking is not None:
        raise ValueError(f"{masking}; call it with causal={not causal}")
    return spec, spec.resolve_impl(impl, q.device)


def _length_fixed(spec: Variant, longest: int, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with the variant's length-derived parameters, where not given, fixed to the
    longest sequence (what the padded batch gives them)."""
    fixed = {p.name: longest for p in spec.param_specs if p.from_length and params.get(p.name) is None}
    return params | fixed


def attention_packed(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens: torch.Tensor | Sequence[int] | Segments,
    *,
    variant: str,
    impl: str = "auto",
    causal: bool = True,
    **params: Any,
) -> torch.Tensor:
    """Attention of each sequence of a packed batch, computed by ``impl``'s packed form.

    q, k: (1, H, T, Dk); v: (1, H, T, Dv); ``cu_seqlens`` (a tensor or list, N + 1 offsets from
    0 to T, or linbench's ``Segments``, which keeps what is made from them between calls) says
    where each sequence starts, as flash-attention and fla take it. No sequence
    attends to another. A variant's extra inputs (gates, β) are the pack's, (1, H, T) like q,
    cut at the same boundaries; they are checked as ``attention`` checks them. Returns
    (1, H, T, Dv) in q's dtype. Parameters derived from the length (cosine's seq_len,
    cosformer's M) default to the longest sequence. An impl with no packed form raises
    ImplUnavailableError (run it padded: ``attention_padded``).
    """
    return _packed(q, k, v, cu_seqlens, variant, impl, causal, params, read_values=True)


def _packed(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens: torch.Tensor | Sequence[int] | Segments,
    variant: str,
    impl: str,
    causal: bool,
    params: dict[str, Any],
    *,
    read_values: bool,
) -> torch.Tensor:
    spec, chosen = _resolve(variant, impl, q, k, v, causal)
    segments = cu_seqlens if isinstance(cu_seqlens, Segments) else Segments.of(cu_seqlens)
    segments.check_packed(q)
    if chosen.packed is None:
        raise ImplUnavailableError(f"{spec.name}:{chosen.name} has no packed form; run it padded (attention_padded)")
    params = dict(params)
    held = params.pop("held", None)
    bound = _with_held(chosen, held, _bound(spec, chosen, segments, params, (q, k, v), read_values))
    return chosen.packed(q, k, v, segments=segments, causal=bool(causal), **bound).to(q.dtype)


def _bound(
    spec: Variant,
    chosen: Impl,
    segments: Segments,
    params: dict[str, Any],
    qkv: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    read_values: bool,
) -> dict[str, Any]:
    """The impl's parameters, length-derived ones fixed to the longest sequence, and the extra
    inputs, checked against q (their values only with ``read_values``)."""
    bound = spec.bind_params(chosen, _length_fixed(spec, segments.longest, params))
    if spec.extra_inputs:
        from linbench.variants.extra_inputs import check_extra_inputs

        like, dim_v = per_value_head(*qkv), qkv[2].shape[-1]
        check_extra_inputs(spec.name, spec.extra_inputs, bound, like, read_values=read_values, dim_v=dim_v)
    return bound


def attention_packed_prechecked(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    segments: Segments,
    *,
    variant: str,
    impl: str = "auto",
    causal: bool = True,
    **params: Any,
) -> torch.Tensor:
    """``attention_packed`` without reading the extra inputs' values (``attention_prechecked``)."""
    return _packed(q, k, v, segments, variant, impl, causal, params, read_values=False)


def attention_padded(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    lengths: Sequence[int] | Segments,
    *,
    variant: str,
    impl: str = "auto",
    causal: bool = True,
    **params: Any,
) -> torch.Tensor:
    """Attention of a padded batch: row i of q, k, v (N, H, S, D) holds a sequence of
    ``lengths[i]`` tokens, then padding; so do a variant's extra inputs (gates, β: (N, H, S)).
    Causal attention needs no mask (no real query sees a later position); bidirectional
    attention runs the impl's ``key_masked`` form, which keeps the pads' keys out, and raises
    ImplUnavailableError for an impl without one. The outputs at the pads are whatever the
    impl leaves there. Parameters derived from the length default to the longest sequence, as
    in ``attention_packed``.
    """
    return _padded(q, k, v, lengths, variant, impl, causal, params, read_values=True)


def attention_padded_prechecked(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    segments: Segments,
    *,
    variant: str,
    impl: str = "auto",
    causal: bool = True,
    **params: Any,
) -> torch.Tensor:
    """``attention_padded`` without reading the extra inputs' values (``attention_prechecked``)."""
    return _padded(q, k, v, segments, variant, impl, causal, params, read_values=False)


def _padded(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    lengths: Sequence[int] | Segments,
    variant: str,
    impl: str,
    causal: bool,
    params: dict[str, Any],
    *,
    read_values: bool,
) -> torch.Tensor:
    spec, chosen = _resolve(variant, impl, q, k, v, causal)
    segments = lengths if isinstance(lengths, Segments) else Segments.from_lengths(lengths)
    if segments.count != q.shape[0] or segments.longest > q.shape[2]:
        raise ValueError(f"lengths {list(segments.lengths)} do not fit a padded batch of shape {tuple(q.shape)}")
    params = dict(params)
    held = params.pop("held", None)
    bound = _bound(spec, chosen, segments, params, (q, k, v), read_values)
    if causal:
        return chosen.fn(q, k, v, causal=True, **_with_held(chosen, held, bound)).to(q.dtype)
    if chosen.key_masked is None:
        raise ImplUnavailableError(chosen.packing_reason("padded", causal=False) or "")
    mask = segments.key_mask(q.device)
    if mask.shape[1] != q.shape[2]:
        mask = torch.nn.functional.pad(mask, (0, q.shape[2] - mask.shape[1]))
    return chosen.key_masked(q, k, v, key_mask=mask, causal=False, **bound).to(q.dtype)


def _check_causal(causal: object) -> None:
    """ValueError unless ``causal`` is True or False ("no" was read as True)."""
    if not isinstance(causal, bool):
        raise ValueError(f"causal must be True or False; got {causal!r}")
