"""One wrapper for every library impl: a ``Contract`` row (contract.py) made into an ``Impl``.

A call refuses what the row says the library cannot take (an initial state, bidirectional
masking for a recurrence, the dtype, a head size the GPU's kernel lacks, a gradient of a
forward-only kernel), repeats q and k to v's heads where the row says so, hands the library its
layout, notes the kernel that runs (results.csv's ``backend``) and gives the output back as
(B, H, S, Dv). What a model would hold precomputed (the gate and β in the library's space, its
constant tensors, a batch's cu_seqlens) and the checks that read values (the gate floor) are
the impl's ``hold``: made once where a point's inputs are drawn, untimed, and handed to every
call as ``held``; a caller that has none (``linbench.attention``) has them made in the call.
"""

from __future__ import annotations

from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.backends import note_backend
from linbench.variants.declarations import Impl
from linbench.variants.gated.numerics import resolve_scale
from linbench.variants.heads import repeat_qk
from linbench.variants.libraries.contract import (
    GATE_FLOOR,
    Args,
    Contract,
    capability,
    convert_beta,
    convert_gate,
    gate_floor_problem,
    refuse,
)
from linbench.variants.varlen import Segments


def to_library(x: torch.Tensor, layout: str, contiguous: bool) -> torch.Tensor:
    """(B, H, S, ...) → the library's layout (contract.py): bshd views, one pack or tokens."""
    seq_major = x.transpose(1, 2)
    if layout == "packed":
        seq_major = seq_major.reshape(1, -1, *seq_major.shape[2:])
    elif layout == "thd":
        seq_major = seq_major.reshape(-1, *seq_major.shape[2:])
    return seq_major.contiguous() if contiguous else seq_major


def from_library(out: torch.Tensor, layout: str, batch: int) -> torch.Tensor:
    """The library's output → (B, H, S, Dv)."""
    if layout == "thd":
        out = out.unflatten(0, (batch, -1))
    elif layout == "packed":
        out = out.reshape(batch, -1, *out.shape[2:])
    return out.transpose(1, 2)


def hold(
    contract: Contract, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, segments: Segments | None, **params: Any
) -> dict[str, Any]:
    """What the row's library takes precomputed, made once (untimed) for these inputs: the
    sequence boundaries, the gate and β converted to its space and layout, its constants; the
    gate floor checked (a read of every gate, refused with the lowest value)."""
    held: dict[str, Any] = {}
    if segments is not None:
        held["cu_seqlens"] = segments.cu_seqlens(q.device, contract.cu_dtype)
    elif contract.layout != "bshd":  # a batch of B sequences of S tokens as one pack
        batch, seq = q.shape[0], q.shape[2]
        held["cu_seqlens"] = torch.arange(0, batch * seq + 1, seq, dtype=contract.cu_dtype, device=q.device)
    g, beta = params.get("g"), params.get("beta")
    if contract.gate_floor is not None and isinstance(g, torch.Tensor):
        refuse(contract, gate_floor_problem(g, contract.gate_floor))
    if contract.converts_gate and isinstance(g, torch.Tensor):
        held["g"] = to_library(convert_gate(contract.gate, g.detach()), contract.layout, True)
    if contract.converts_beta and isinstance(beta, torch.Tensor):
        held["beta"] = to_library(convert_beta(contract.beta, beta.detach()), contract.layout, True)
    if contract.gate == "lower-bound-logit":  # A_log = 0, dt_bias = 0: σ's argument is the logit itself
        heads = v.shape[1]
        held["A_log"] = torch.zeros(heads, dtype=torch.float32, device=q.device)
        held["dt_bias"] = torch.zeros(heads, q.shape[-1], dtype=torch.float32, device=q.device)
        held["lower_bound"] = GATE_FLOOR
    if contract.held_extra is not None:
        held |= contract.held_extra(q, k, v, segments, **params)
    return held


def call(
    contract: Contract,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    causal: bool,
    params: dict[str, Any],
    held: dict[str, Any] | None,
    segments: Segments | None,
) -> torch.Tensor:
    """The library's call on (B, H, S, D) tensors (a pack: (1, H, T, D) and its ``segments``)."""
    if params.get("initial_state") is not None:
        raise ImplUnavailableError(f"{contract.name}: an initial state is not passed to it (its layout is unproven)")
    if not causal and contract.variant != "softmax":
        raise ImplUnavailableError(f"{contract.name}: causal only")
    g, beta = params.get("g"), params.get("beta")
    tensors = [t for t in (q, k, v, g, beta) if isinstance(t, torch.Tensor)]
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
    arch = capability(q.device)
    refuse(contract, contract.refusal(q, arch, grad))
    if held is None:
        held = hold(contract, q, k, v, segments, **params)
    if contract.value_heads == "repeat":
        q, k = repeat_qk(q, k, v)
    lay = contract.layout
    scale = params.get("scale")
    args = Args(
        q=to_library(q, lay, contract.contiguous),
        k=to_library(k, lay, contract.contiguous),
        v=to_library(v, lay, contract.contiguous),
        g=held.get("g", to_library(g, lay, contract.contiguous) if isinstance(g, torch.Tensor) else None),
        beta=held.get("beta", to_library(beta, lay, contract.contiguous) if isinstance(beta, torch.Tensor) else None),
        scale=None if contract.variant == "softmax" else resolve_scale(scale, q.shape[-1]),
        causal=causal,
        cu_seqlens=held.get("cu_seqlens"),
        max_seqlen=segments.longest if segments is not None else q.shape[2],
        arch=arch,
        held=held,
        grad=grad,
    )
    note_backend(f"{contract.distribution} {contract.kernel_for(arch)}")
    out = contract.call(contract.entry_point(segments is not None, arch), args)
    return from_library(out, lay, q.shape[0])


def summary(contract: Contract) -> str:
    """The impl's line in ``linbench list``: the entry point, where it runs, what it takes."""
    runs = "; ".join(f"SM{major}x: {kernel}" for major, kernel in contract.kernels.items())
    none = "; ".join(f"SM{major}x: {why}" for major, why in contract.no_kernel.items())
    dims = "/".join(map(str, contract.dims)) if contract.dims else f"≤ {contract.max_dim}"
    grad = "backward on " + "/".join(f"SM{m}x" for m in contract.backward) if contract.backward else "forward only"
    return (
        f"{contract.distribution} {contract.version} {contract.entry} ({runs}{'; ' + none if none else ''}); "
        f"D {dims}, {'/'.join(contract.dtypes)}; {grad}; unverified on a GPU here"
    )


def library_impl(contract: Contract) -> Impl:
    """The impl a row declares (optional: left out with the reason where it cannot run)."""

    def fn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, held: Any = None, **params: Any) -> Any:
        return call(contract, q, k, v, causal, params, held, None)

    def packed(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, segments: Segments, causal: bool, **params: Any
    ) -> Any:
        held = params.pop("held", None)
        return call(contract, q, k, v, causal, params, held, segments)

    quadratic = contract.variant == "softmax"

    def held_for(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **params: Any) -> dict[str, Any]:
        return hold(contract, q, k, v, params.pop("segments", None), **params)

    return Impl(
        contract.impl,
        fn,
        summary(contract),
        "O(s²d)" if quadratic else "O(sd²)",
        "O(sd)",
        time_exponent=2 if quadratic else 1,
        availability=lambda device: contract.unavailable(device),  # looked up per call: tests stand it in
        shape_support=contract.shape_support,
        optional=True,
        layout="bshd",
        library=contract.distribution,
        packed=None if contract.packs == "none" else packed,
        gqa=quadratic and contract.value_heads == "native",
        gva=not quadratic and contract.value_heads == "native",
        hold=held_for,
    )
