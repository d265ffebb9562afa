"""Is an impl right on a pack of variable-length sequences? Each sequence against the fp64
reference run on that sequence alone, outputs and every gradient.

An impl runs a pack ``packed`` (its packed form, with the sequences' boundaries) or
``padded`` (every sequence padded to the longest, an (N, H, L_max, D) batch, and the real
tokens taken back out); either way its outputs and the gradients of the packed q, k and v
must be what the reference gives each sequence run by itself: no sequence may see another,
or its padding. Used by the tests and by ``linbench run --pack``'s correctness gate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from linbench.api import attention, attention_packed, attention_padded, get_variant
from linbench.check.closeness import compare, rms
from linbench.check.correctness import CaseResult, make_inputs, tf32_dots
from linbench.errors import ImplUnavailableError
from linbench.oom import is_out_of_memory
from linbench.shape import Shape
from linbench.variants.extra_inputs import take_tokens
from linbench.variants.variant import Variant
from linbench.variants.varlen import Segments, pad, pad_extra_inputs, unpad

PACKINGS = ("packed", "padded")

__all__ = ["PACKINGS", "check_packed", "run_packing"]


def run_packing(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    segments: Segments,
    *,
    variant: str,
    impl: str,
    packing: str,
    causal: bool,
    **params: Any,
) -> torch.Tensor:
    """``impl`` on the packed (1, H, T, D) tensors, run ``packing``; (1, H, T, Dv) out."""
    if packing == "packed":
        return attention_packed(q, k, v, segments.offsets, variant=variant, impl=impl, causal=causal, **params)
    if packing != "padded":
        raise ValueError(f"packing {packing!r} is not one of {', '.join(PACKINGS)}")
    pq, pk, pv = (pad(x, segments) for x in (q, k, v))
    padded = pad_extra_inputs(get_variant(variant).extra_inputs, params, segments)
    out = attention_padded(pq, pk, pv, segments, variant=variant, impl=impl, causal=causal, **padded)
    return unpad(out, segments)


def _reference(
    variant: Variant, inputs: Sequence[torch.Tensor], segments: Segments, causal: bool, params: dict[str, Any]
) -> torch.Tensor:
    """The fp64 reference on each sequence alone, joined back into a pack. A parameter derived
    from the length takes the longest sequence's, as in a pack (linbench/variants/varlen.py)."""
    fixed = {p.name: segments.longest for p in variant.param_specs if p.from_length and params.get(p.name) is None}
    q, k, v = (segments.split(x) for x in inputs)
    outs = []
    for qi, ki, vi, start, stop in zip(q, k, v, segments.offsets, segments.offsets[1:], strict=False):
        # each sequence its own gates and β, as its own q, k and v
        own = take_tokens(variant.extra_inputs, params | fixed, start, stop)
        outs.append(attention(qi, ki, vi, variant=variant.name, impl=variant.reference, causal=causal, **own))
    return torch.cat(outs, dim=2)


def _outputs(
    run: Any, inputs: Sequence[torch.Tensor], learnable: dict[str, torch.Tensor], cotangent: torch.Tensor, grads: bool
) -> dict[str, torch.Tensor]:
    """``run(q, k, v, **learnable)``'s output and, when asked, the gradients of <out, cotangent>."""
    with torch.set_grad_enabled(grads):
        out = run(*inputs, **learnable)
    if not grads or out.shape != cotangent.shape:
        return {"out": out}
    wrt = [*inputs, *learnable.values()]
    found = torch.autograd.grad((out.to(torch.float64) * cotangent).sum(), wrt)
    names = ["grad q", "grad k", "grad v", *(f"grad {n}" for n in learnable)]
    return {"out": out, **dict(zip(names, found, strict=True))}


def check_packed(
    variant: Variant,
    impl: str,
    lengths: Sequence[int],
    heads: int,
    dim_k: int,
    dim_v: int,
    *,
    packing: str,
    causal: bool,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str = "cpu",
    seed: int = 0,
    params: dict[str, Any] | None = None,
    gradients: bool = True,
) -> CaseResult:
    """``impl`` run ``packing`` in ``dtype`` on a pack of ``lengths`` against the per-sequence
    fp64 reference on the same inputs (rounded to ``dtype`` for both)."""
    segments = Segments.from_lengths(lengths)
    shape = Shape(1, heads, segments.total, dim_k, dim_v)
    result = CaseResult(variant.name, f"{impl} ({packing})", shape, causal, dtype)
    q, k, v, learnable = make_inputs(variant, shape, device, seed)
    params = dict(params or {})
    learnable = {name: t.to(dtype).to(torch.float64) for name, t in learnable.items() if name not in params}
    gen = torch.Generator(device="cpu").manual_seed(seed + 1)
    cotangent = torch.randn(1, heads, segments.total, dim_v, generator=gen, dtype=torch.float64)
    cotangent = cotangent.to(device).to(dtype).to(torch.float64)
    inputs = [t.to(dtype).to(torch.float64) for t in (q, k, v)]
    ref_params = {key: value for key, value in params.items() if key in variant.params}

    def reference(*qkv: torch.Tensor, **learn: torch.Tensor) -> torch.Tensor:
        return _reference(variant, qkv, segments, causal, ref_params | learn)

    def actual(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **learn: torch.Tensor) -> torch.Tensor:
        kw = params | learn
        return run_packing(q, k, v, segments, variant=variant.name, impl=impl, packing=packing, causal=causal, **kw)

    def leaves(cast: torch.dtype) -> tuple[list[torch.Tensor], dict[str, torch.Tensor]]:
        made = [t.detach().to(cast).requires_grad_(gradients) for t in inputs]
        return made, {n: t.detach().to(cast).requires_grad_(gradients) for n, t in learnable.items()}

    expected = _outputs(reference, *leaves(torch.float64), cotangent, gradients)
    try:
        got = _outputs(actual, *leaves(dtype), cotangent, gradients)
    except ImplUnavailableError as exc:
        result.unavailable = str(exc)
        return result
    except Exception as exc:  # whatever the impl under test raises is its failure, not the checker's
        result.error = f"{type(exc).__name__}: {exc}"
        result.out_of_memory = is_out_of_memory(exc)
        return result
    floor = max(rms(t) for t in expected.values()) / 100
    result.tf32 = tf32_dots(getattr(variant.impls.get(impl), "library", None), dtype, device)
    result.comparisons = [compare(n, got[n], expected[n], dtype, floor, result.tf32) for n in expected if n in got]
    return result
