"""The public entry points: attention(), list_variants(), get_variant() (a whole sweep from
Python is linbench.runner.api's run_sweep() and plan_sweep(); docs/python-api.md)."""

from __future__ import annotations

from typing import Any

import torch

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

    q, k: (B, H, S, Dk); v: (B, H, S, Dv). Returns (B, H, S, Dv) in q's dtype, on q's device.
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
    masking = spec.masking_reason(bool(causal))
    if masking is not None:
        raise ValueError(f"{masking}; call it with causal={not causal}")
    chosen = spec.resolve_impl(impl, q.device)
    bound = spec.bind_params(chosen, params)
    if spec.extra_inputs:
        from linbench.variants.extra_inputs import check_extra_inputs

        check_extra_inputs(spec.name, spec.extra_inputs, bound, q, read_values=read_values)
    out = chosen.fn(q, k, v, causal=bool(causal), **bound)
    return out.to(q.dtype)
