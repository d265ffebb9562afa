"""FlashInfer's Kimi Delta Attention (``pip install flashinfer-python``) as kda's ``flashinfer``
impl.

Mapped from flashinfer-python 0.7.2.post1's ``flashinfer/kda.py`` (its docstring and code):
``flashinfer.recurrent_kda(q, k, v, g, beta, A_log=None, dt_bias=None, scale=None,
initial_state=None, output_final_state=False, use_qk_l2norm_in_kernel=True,
use_gate_in_kernel=False, lower_bound=None, cu_seqlens=None, ..., beta_is_logit=False, ...,
backend="auto")`` → ``(output, final_state)``.

- Layout: q and k (B, T, H, K), v (B, T, HV, V), g (B, T, HV, K), β (B, T, HV), all bf16
  ("must be bfloat16"); a pack is (1, T, ...) with ``cu_seqlens`` (int32 or int64). More value
  heads than q/k heads are taken natively ("GQA is applied when HV != H"), value head j
  reading q/k head j // (HV / H) (``kda_kernels/recurrent_kda.py``: ``query_head_idx =
  value_head_idx // (HV // H)``), linbench's convention. Every tensor is handed contiguous (a
  no-op for q, k and v drawn bshd).
- g the log-gate per key channel when precomputed (``use_gate_in_kernel=False``), passed in
  bf16: linbench's fp32 gate rounded (a relative error of 2^-9 per gate). β post-sigmoid
  (``beta_is_logit=False``). q and k L2-normalised in the kernel
  (``use_qk_l2norm_in_kernel=True``); ``scale`` passed.
- ``backend="auto"``: FlashInfer picks its kernel per call (CuTe DSL prefill kernels on SM100/
  SM103 and SM120, its frozen Cake schedules, else its recurrent CuTe DSL kernel); the row's
  backend says ``recurrent_kda (auto)``, not which one answered. cuDNN's engine through it
  (``backend="cudnn"``) is not used: kda's ``cudnn`` impl calls cuDNN itself.
- The state (N, HV, V, K), updated in place, is not passed (unproven here).
- Forward only (no autograd); head size 128 (its prefill kernels'); SM90, SM100/SM103, SM120.
Unverified on a GPU here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.backends import note_backend
from linbench.variants.declarations import Impl
from linbench.variants.gated.library_calls import (
    library_unavailable,
    refuse_gradient,
    refuse_initial_state,
    refuse_non_causal,
    seq_major,
    square_bf16_support,
)
from linbench.variants.gated.numerics import resolve_scale
from linbench.variants.varlen import Segments

NAME = "flashinfer"
OWNER = f"kda:{NAME}"
DISTRIBUTION = "flashinfer-python"
FUNCTION = "recurrent_kda"
ARCHES = ((9, 0), (10, 0), (10, 3), (12, 0))
DIMS = 128


def flashinfer_kda_kernel() -> Callable[..., Any]:
    """FlashInfer's recurrent_kda (looked up per call, so tests can stand one in)."""
    return getattr(importlib.import_module("flashinfer"), FUNCTION)


def unavailable(device: torch.device) -> str | None:
    """Why FlashInfer's KDA cannot run on ``device``, or None."""
    install = "pip install flashinfer-python; a Hopper or Blackwell GPU"
    return library_unavailable(
        DISTRIBUTION, install, device, ARCHES, "FlashInfer's KDA", "flashinfer", flashinfer_kda_kernel
    )


def shape_support(dim_k: int, dim_v: int, dtype: str) -> str | None:
    """FlashInfer's KDA: K = V = 128, bf16."""
    return square_bf16_support("FlashInfer's KDA", DIMS, dim_k, dim_v, dtype)


def _run(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, **kw: Any
) -> torch.Tensor:
    """FlashInfer's KDA on (B, H, S, D) tensors (v, g and β at the value heads); (B, HV, S, Dv) out."""
    if q.dtype != torch.bfloat16:
        raise ImplUnavailableError(f"{OWNER}: bf16 only, not {q.dtype}")
    refuse_gradient(OWNER, q, k, v, g, beta)
    note_backend(f"flashinfer {FUNCTION} (auto)")
    out, _ = flashinfer_kda_kernel()(
        *(seq_major(x).contiguous() for x in (q, k, v)),
        seq_major(g).to(torch.bfloat16).contiguous(),
        seq_major(beta).to(torch.bfloat16).contiguous(),
        use_qk_l2norm_in_kernel=True,
        use_gate_in_kernel=False,
        beta_is_logit=False,
        backend="auto",
        **kw,
    )
    return out.transpose(1, 2)


def flashinfer_kda(
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
    """Kimi Delta Attention by FlashInfer on (B, H, S, D) tensors, each batch row a sequence."""
    refuse_initial_state(OWNER, initial_state)
    refuse_non_causal(OWNER, causal)
    return _run(q, k, v, g, beta, scale=resolve_scale(scale, q.shape[-1]))


def flashinfer_kda_packed(
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
    """A pack (1, H, T, D) in one call with its cu_seqlens (int64)."""
    refuse_initial_state(OWNER, initial_state)
    refuse_non_causal(OWNER, causal)
    cu = segments.cu_seqlens(q.device, torch.int64)
    return _run(q, k, v, g, beta, scale=resolve_scale(scale, q.shape[-1]), cu_seqlens=cu)


def flashinfer_kda_impl() -> Impl:
    """kda's ``flashinfer`` impl (optional: left out with the reason where it cannot run)."""
    return Impl(
        NAME,
        flashinfer_kda,
        "FlashInfer's recurrent_kda (backend auto: its CuTe DSL / Cake kernels; K = V = 128, bf16 with a bf16 "
        "log-gate), value heads native; forward only; unverified on a GPU here",
        "O(sd²)",
        "O(sd)",
        time_exponent=1,
        availability=lambda device: unavailable(device),  # looked up per call: tests stand FlashInfer in
        shape_support=shape_support,
        optional=True,
        layout="bshd",
        library=DISTRIBUTION,
        packed=flashinfer_kda_packed,
        gva=True,
    )
