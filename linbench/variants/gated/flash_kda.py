"""FlashKDA (Moonshot AI's CUTLASS kernel, built from MoonshotAI/FlashKDA's source; not on
PyPI) as kda's ``flash-kda`` impl.

Mapped from FlashKDA at commit 1ce47ea (2026-07-29; ``flash_kda/__init__.py`` and its README's
"Kernel API"): ``flash_kda.fwd(q, k, v, g, beta, scale, out, A_log, dt_bias, lower_bound,
initial_state=None, final_state=None, cu_seqlens=None)`` → None, writing ``out`` in place.

- Layout: q, k, v and ``out`` (B, T, H, 128) bf16, contiguous; with ``cu_seqlens`` (int64,
  [N+1]) B is 1 and T the pack's tokens. One head count for q, k and v (no GVA: fla's own
  dispatch to it refuses HV ≠ H), so q and k are repeated to v's heads first, in the call.
- The gate is computed in the kernel, never taken as a log-gate: ``g`` (B, T, H, K) bf16 is the
  gate *before activation*, and the kernel's log-gate is lower_bound·σ(e^{A_log}·(g + dt_bias))
  (tests/torch_ref.py, in log2 units there), A_log (H,) fp32, dt_bias (H, K) fp32, lower_bound
  in [−5, 0]. linbench's kda takes its log-gate computed, so the impl hands FlashKDA the
  pre-activation that gives it back exactly: A_log = 0, dt_bias = 0, lower_bound = −5 and
  g_in = logit(g / −5), rounded to bf16 (a relative error of about |g_in|·2^-9 on each gate,
  FlashKDA's input precision). A gate below −5 has no such input: refused with its value.
- β: logits before the sigmoid the kernel applies (bf16), so the impl passes logit(β).
- q and k are L2-normalised in the kernel, always (no flag); ``scale`` a float (Dk^-1/2 by
  linbench's default).
- The state is bf16 or fp32, (B or N, H, V, K) (v-first); not passed here (unproven).
- K = V = 128; bf16 only; forward only; SM90, SM100, SM103 and SM120 (its build's
  ``SUPPORTED_CUDA_ARCHS``). Unverified on a GPU here.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.backends import note_backend
from linbench.variants.declarations import Impl
from linbench.variants.gated.library_calls import (
    GATE_FLOOR,
    library_unavailable,
    refuse_gates_below_floor,
    refuse_gradient,
    refuse_initial_state,
    refuse_non_causal,
    seq_major,
    square_bf16_support,
)
from linbench.variants.gated.numerics import resolve_scale
from linbench.variants.heads import repeat_qk
from linbench.variants.varlen import Segments

NAME = "flash-kda"
OWNER = f"kda:{NAME}"
DISTRIBUTION = "flash_kda"
FUNCTION = "fwd"
INSTALL = "build MoonshotAI/FlashKDA from source: pip install --no-build-isolation .; CUDA 12.9, SM90+"
ARCHES = ((9, 0), (10, 0), (10, 3), (12, 0))
DIMS = 128


def flash_kda_kernel() -> Any:
    """FlashKDA's fwd (looked up per call, so tests can stand one in)."""
    return getattr(importlib.import_module("flash_kda"), FUNCTION)


def unavailable(device: torch.device) -> str | None:
    """Why FlashKDA cannot run on ``device``, or None."""
    return library_unavailable(DISTRIBUTION, INSTALL, device, ARCHES, "FlashKDA", "flash_kda", flash_kda_kernel)


def shape_support(dim_k: int, dim_v: int, dtype: str) -> str | None:
    """FlashKDA's documented limits: K = V = 128, bf16."""
    return square_bf16_support("FlashKDA", DIMS, dim_k, dim_v, dtype)


def gate_logits(g: torch.Tensor) -> torch.Tensor:
    """The pre-activation x with −5·σ(x) = g (A_log 0, dt_bias 0), in bf16: logit(g / −5);
    a gate of 0 is x = −inf, one of −5 is x = +inf (σ of both exact)."""
    share = (g.float() / GATE_FLOOR).clamp(0.0, 1.0)  # in [0, 1] once the floor is checked
    return (share.log() - (-share).log1p()).to(torch.bfloat16)


def beta_logits(beta: torch.Tensor) -> torch.Tensor:
    """logit(β) in bf16: FlashKDA applies the sigmoid itself."""
    b = beta.float()
    return (b.log() - (-b).log1p()).to(torch.bfloat16)


def _run(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float,
    cu_seqlens: torch.Tensor | None = None,
) -> torch.Tensor:
    """FlashKDA on (B, H, S, D) tensors (q and k at v's heads), its output as (B, H, S, Dv)."""
    if q.dtype != torch.bfloat16:
        raise ImplUnavailableError(f"{OWNER}: FlashKDA takes bf16 only, not {q.dtype}")
    refuse_gradient(OWNER, q, k, v, g, beta)
    refuse_gates_below_floor(OWNER, g)
    heads, dim_k = q.shape[1], q.shape[-1]
    qs, ks, vs = (seq_major(x).contiguous() for x in (q, k, v))
    out = torch.empty_like(vs)
    note_backend(f"flash-kda {FUNCTION}")
    flash_kda_kernel()(
        qs,
        ks,
        vs,
        seq_major(gate_logits(g)).contiguous(),
        seq_major(beta_logits(beta)).contiguous(),
        scale,
        out,
        A_log=torch.zeros(heads, dtype=torch.float32, device=q.device),
        dt_bias=torch.zeros(heads, dim_k, dtype=torch.float32, device=q.device),
        lower_bound=GATE_FLOOR,
        cu_seqlens=cu_seqlens,
    )
    return out.transpose(1, 2)


def flash_kda(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: Any,
    initial_state: Any = None,
) -> torch.Tensor:
    """Kimi Delta Attention by FlashKDA on (B, H, S, D) tensors, each batch row a sequence."""
    refuse_initial_state(OWNER, initial_state)
    refuse_non_causal(OWNER, causal)
    q, k = repeat_qk(q, k, v)
    return _run(q, k, v, g, beta, resolve_scale(scale, q.shape[-1]))


def flash_kda_packed(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    segments: Segments,
    causal: bool,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: Any,
    initial_state: Any = None,
) -> torch.Tensor:
    """A pack (1, H, T, D) in one call with its cu_seqlens (int64), each sequence from zero."""
    refuse_initial_state(OWNER, initial_state)
    refuse_non_causal(OWNER, causal)
    q, k = repeat_qk(q, k, v)
    cu = segments.cu_seqlens(q.device, torch.int64)
    return _run(q, k, v, g, beta, resolve_scale(scale, q.shape[-1]), cu)


def flash_kda_impl() -> Impl:
    """kda's ``flash-kda`` impl (optional: left out with the reason where it cannot run)."""
    return Impl(
        NAME,
        flash_kda,
        "FlashKDA's fwd (CUTLASS; SM90/SM100/SM120, K = V = 128, bf16), the gate handed as the pre-activation "
        "logit(g/−5) it recomputes; forward only; unverified on a GPU here",
        "O(sd²)",
        "O(sd)",
        time_exponent=1,
        availability=lambda device: unavailable(device),  # looked up per call: tests stand FlashKDA in
        shape_support=shape_support,
        optional=True,
        layout="bshd",
        library=DISTRIBUTION,
        packed=flash_kda_packed,
    )
