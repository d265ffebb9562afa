"""The public entry points: attention(), list_variants(), get_variant() (a whole sweep from
Python is linbench.runner.api's run_sweep() and plan_sweep(); docs/python-api.md)."""

from __future__ import annotations

from typing import Any

import torch

from linbench.variants.heads import expand_call
from linbench.variants.registry import Variant, get_variant, list_variants
from linbench.variants.validation import check_qkv

__all__ = ["attention", "get_variant", "list_variants"]


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
    Returns (B, H, S, Dv) in q's dtype, on q's device. An impl without native grouped-query
    support (``Impl.gqa``) gets k, v and the extra inputs repeated to H heads, in this call.
    ``impl="auto"`` picks the fastest impl available for the tensors' device. Unknown
    variants, impls or parameters, malformed shapes and a masking the variant does not
    compute (``Variant.masking``) raise ValueError; an impl that cannot run here raises
    ImplUnavailableError saying why.
    """
    spec: Variant = get_variant(variant)
    if impl != "auto":
        spec.impl(impl)  # an unknown impl name is reported before anything about the tensors
    check_qkv(q, k, v)
    masking = spec.masking_reason(bool(causal))
    if masking is not None:
        raise ValueError(f"{masking}; call it with causal={not causal}")
    chosen = spec.resolve_impl(impl, q.device)
    bound = spec.bind_params(chosen, params)
    if k.shape[1] != q.shape[1] and not chosen.gqa:
        k, v, bound = expand_call(q, k, v, bound, [extra.name for extra in spec.extra_inputs])
    out = chosen.fn(q, k, v, causal=bool(causal), **bound)
    return out.to(q.dtype)
