"""fla-core's RWKV-7 kernels as rwkv7's impls: ``fla`` (``chunk_rwkv7``, which is
``chunk_dplr_delta_rule``: forward and backward) and ``fla-recurrent`` (``fused_recurrent_rwkv7``,
``fused_recurrent_dplr_delta_rule``: inference only, its backward raises), checked with
fla-core 0.6.0 (``fla/ops/rwkv7``); and the ``fla-recurrent`` decoder on ``fused_recurrent_rwkv7``.

Called as fla's RWKV7Attention calls them: (B, S, H, D) views of r, w (log-decay), k, v and
a = −κ̂, b = κ̂ ⊙ a, ``scale`` always given (the two kernels' defaults differ: 1.0 for
``chunk_rwkv7``, Dk^-1/2 for ``fused_recurrent_rwkv7``), the initial state (N, H, K, V) and a
pack's ``cu_seqlens``. More value heads than r/k heads (RWKV-7 has none) get r and k repeated.
No fp64 form; bf16 refused under
Triton's interpreter.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.backends import note_backend
from linbench.variants.declarations import Decoder, Impl, PackedFn
from linbench.variants.feature_forms import fla as fla_common
from linbench.variants.feature_forms.triton_interpreter import interpreter_on
from linbench.variants.gated import fla as gated_fla
from linbench.variants.gated.fla import CHUNK, INTERPRETED_BF16, RECURRENT
from linbench.variants.gated.numerics import GatedState, causal_only, checked_state
from linbench.variants.heads import repeat_qk
from linbench.variants.varlen import Segments

MODULE = "rwkv7"
NAMES = {CHUNK: "chunk_rwkv7", RECURRENT: "fused_recurrent_rwkv7"}


def _seq_major(t: torch.Tensor) -> torch.Tensor:
    return t.transpose(1, 2)


def rwkv7_fla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    w: torch.Tensor,
    kk: torch.Tensor,
    a: torch.Tensor,
    scale: Any,
    kernel: str,
    initial_state: Any = None,
    cu_seqlens: torch.Tensor | None = None,
) -> torch.Tensor:
    """RWKV-7's core through fla's ``kernel`` (CHUNK or RECURRENT); out (B, H, S, Dv)."""
    owner, name = f"rwkv7:{kernel}", NAMES[kernel]
    causal_only(owner, causal)
    if q.dtype == torch.float64:
        raise ImplUnavailableError(f"{owner}: fla's {name} has no fp64 form")
    if q.dtype == torch.bfloat16 and q.device.type == "cpu" and interpreter_on():
        raise ImplUnavailableError(f"{owner}: fla's {name}: {INTERPRETED_BF16}")
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v, w, kk, a))
    if kernel == RECURRENT and grad:
        raise ImplUnavailableError(f"{owner}: fla's fused_recurrent_rwkv7 is inference only (no backward)")
    q, k = repeat_qk(q, k, v)  # the DPLR kernels take one r/k head per value head
    given: dict[str, Any] = {"r": q, "w": w, "k": k, "v": v, "a": -kk, "b": kk * a.to(kk.dtype)}
    given = {key: _seq_major(value) for key, value in given.items()}
    state = checked_state(initial_state, (q.shape[0], v.shape[1], q.shape[-1], v.shape[-1]))
    if state is not None:
        given["initial_state"] = state.to(torch.float32)
    if cu_seqlens is not None:
        given["cu_seqlens"] = cu_seqlens
    note_backend(fla_common.backend_name(name, q.device))
    kernel_fn = gated_fla.fla_kernel(MODULE, name)  # looked up per call: tests stand fla in
    out, _ = kernel_fn(**given, scale=float(scale), output_final_state=False)
    return _seq_major(out)


def _packed(kernel: str) -> PackedFn:
    """A pack (1, H, T, D) in one kernel call with fla's ``cu_seqlens``."""

    def packed(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, segments: Segments, causal: bool, **params: Any
    ) -> torch.Tensor:
        return rwkv7_fla(q, k, v, causal=causal, kernel=kernel, cu_seqlens=segments.cu_seqlens(q.device), **params)

    return packed


def _availability(device: torch.device) -> str | None:
    return fla_common.fla_unavailable(device, f"fla.ops.{MODULE}")


SUMMARIES = {
    CHUNK: "fla-core's chunk_rwkv7 (chunk_dplr_delta_rule; forward and backward)",
    RECURRENT: "fla-core's fused_recurrent_rwkv7 (fused_recurrent_dplr_delta_rule; inference only)",
}


def rwkv7_fla_impls() -> tuple[Impl, ...]:
    """rwkv7's ``fla`` and ``fla-recurrent`` impls (fla-core 0.6 and a Triton GPU, or the interpreter)."""
    return tuple(
        Impl(
            kernel,
            partial(rwkv7_fla, kernel=kernel),
            summary + "; fla's (B, S, H, D) layout made untimed; unverified on a GPU here",
            "O(sd²)",
            "O(sd)" if kernel == CHUNK else "O(d²)",
            time_exponent=1,
            availability=_availability,
            shape_support=lambda dim_k, dim_v, dtype: fla_common.fla_dtype_support(dim_k, dim_v, dtype),
            optional=True,
            layout="bshd",
            library=fla_common.DISTRIBUTION,
            packed=_packed(kernel),
        )
        for kernel, summary in SUMMARIES.items()
    )


def _stream(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    state: GatedState | None = None,
    w: torch.Tensor,
    kk: torch.Tensor,
    a: torch.Tensor,
    scale: Any,
    initial_state: Any = None,
    **_: Any,
) -> tuple[torch.Tensor, GatedState]:
    """Tokens through ``fused_recurrent_rwkv7`` from the carried state: (out, new state)."""
    name = NAMES[RECURRENT]
    if q.dtype == torch.float64:
        raise ImplUnavailableError(f"rwkv7:{RECURRENT}: fla's {name} has no fp64 form")
    if q.dtype == torch.bfloat16 and q.device.type == "cpu" and interpreter_on():
        raise ImplUnavailableError(f"rwkv7:{RECURRENT}: fla's {name}: {INTERPRETED_BF16}")
    if state is None:
        zeros = k.new_zeros(k.shape[0], v.shape[1], k.shape[-1], v.shape[-1], dtype=torch.float32)
        state = GatedState(initial_state.to(torch.float32) if initial_state is not None else zeros, 0)
    q, k = repeat_qk(q, k, v)
    given = {"r": q, "w": w, "k": k, "v": v, "a": -kk, "b": kk * a.to(kk.dtype)}
    note_backend(fla_common.backend_name(name, q.device))
    out, final = gated_fla.fla_kernel(MODULE, name)(
        **{key: value.transpose(1, 2).contiguous() for key, value in given.items()},
        scale=float(scale),
        initial_state=state.matrix.float().contiguous(),
        output_final_state=True,
    )
    return out.transpose(1, 2), GatedState(final, state.position + q.shape[-2])


def rwkv7_fla_decoder() -> Decoder:
    """rwkv7's ``fla-recurrent`` decoder: ``fused_recurrent_rwkv7`` for the prefill and each step
    (it takes no state indices: served, linbench gathers the pool's states)."""
    decoder = Decoder.from_stream(
        RECURRENT,
        "fla-core's fused_recurrent_rwkv7 for the prefill and each step (.[fla], a CUDA GPU); served, the pool "
        "gathered by linbench",
        _stream,
        "O(d²)",
        "O(d²)",
    )
    return replace(decoder, availability=_availability, library=fla_common.DISTRIBUTION)
