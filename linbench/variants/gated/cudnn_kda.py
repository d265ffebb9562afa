"""cuDNN's Kimi Delta Attention (``pip install nvidia-cudnn-frontend``) as kda's ``cudnn`` impl.

Mapped from nvidia-cudnn-frontend 1.32.0's ``cudnn/linear_attention/ops/kda.py`` (its docstring
and code): ``cudnn.linear_attention.ops.kda.kimi_delta_attention(q, k, v, g, beta,
cu_seqlens, scale=None, initial_state=None, output_final_state=False,
use_qk_l2norm_in_kernel=False, batch_invariant=False, use_beta_sigmoid_in_kernel=False,
allow_neg_eigval=False, safe_gate=False, gate_lower_bound=None, gate_domain="log", a_log=None,
dt_bias=None, ...)`` → ``(o, final_state)``.

- Layout THD, token-packed: q (T, H, K), k (T, HK, K) with HK = H or HV, v (T, HV, V), g
  (T, HO, K) and β (T, HO) with HO = max(H, HV), ``cu_seqlens`` [N+1] int32 or int64 required
  (a batch of B sequences is B sequences back to back). Value head j reads q/k head
  j // (HV / H) (its cuTile kernel's ``i_h = i_hv // (HV // H)``), linbench's convention: GVA
  is native.
- g is the log-gate per key channel (``gate_domain="log"``, α = e^g), float32 accepted: passed
  as linbench computes it. β post-sigmoid in the io dtype (``use_beta_sigmoid_in_kernel``
  off). ``safe_gate`` off: no gate is recomputed, so no bound applies.
- q and k L2-normalised in the kernel (``use_qk_l2norm_in_kernel=True``); ``scale`` passed.
- The state is (N, HO, V, K) fp32 or bf16; not passed here (unproven).
- Forward and backward (a ``torch.library`` custom op with autograd): dq, dk, dv, dg, dβ.
- Its engines: FROST on SM100/SM103/SM107 (head size 64 or 128), two Hopper engines on SM90
  (head size 128), cuTile as the fallback; the io dtype fp16 or bf16. A shape no engine takes
  raises cuDNN's not-supported error in the call. Unverified on a GPU here.
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
    refuse_initial_state,
    refuse_non_causal,
    tokens,
    untokens,
)
from linbench.variants.gated.numerics import resolve_scale
from linbench.variants.varlen import Segments

NAME = "cudnn"
OWNER = f"kda:{NAME}"
DISTRIBUTION = "nvidia-cudnn-frontend"
MODULE = "cudnn.linear_attention.ops.kda"
FUNCTION = "kimi_delta_attention"
ARCHES = ((9, 0), (10, 0), (10, 3), (10, 7))
HOPPER_DIMS = (128,)
DIMS = (64, 128)


def cudnn_kda_kernel() -> Callable[..., Any]:
    """cuDNN's kimi_delta_attention (looked up per call, so tests can stand one in)."""
    return getattr(importlib.import_module(MODULE), FUNCTION)


def unavailable(device: torch.device) -> str | None:
    """Why cuDNN's KDA cannot run on ``device``, or None."""
    install = "pip install nvidia-cudnn-frontend; a Hopper or Blackwell GPU"
    return library_unavailable(DISTRIBUTION, install, device, ARCHES, "cuDNN's KDA", MODULE, cudnn_kda_kernel)


def shape_support(dim_k: int, dim_v: int, dtype: str) -> str | None:
    """cuDNN's KDA engines: head size 64 or 128 (one for q, k and v), fp16 or bf16."""
    if dtype not in ("fp16", "bf16"):
        return f"cuDNN's KDA takes fp16 and bf16 only, not {dtype}"
    if dim_k != dim_v or dim_k not in DIMS:
        return f"cuDNN's KDA takes one head size of 64 or 128, not Dk {dim_k}, Dv {dim_v}"
    return None


def _hopper_dims(device: torch.device, dim: int) -> None:
    if device.type == "cuda" and torch.cuda.get_device_capability(device)[0] == 9 and dim not in HOPPER_DIMS:
        raise ImplUnavailableError(f"{OWNER}: cuDNN's Hopper KDA engines take head size 128 only, not {dim}")


def _run(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    cu_seqlens: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    """cuDNN's KDA on (T, H, D) tokens, (T, HV, K) gates and (T, HV) β; the output (T, HV, Dv)."""
    if q.dtype not in (torch.float16, torch.bfloat16):
        raise ImplUnavailableError(f"{OWNER}: fp16 and bf16 only, not {q.dtype}")
    _hopper_dims(q.device, q.shape[-1])
    note_backend(f"cudnn {FUNCTION}")
    out, _ = cudnn_kda_kernel()(
        q,
        k,
        v,
        g,
        beta,
        cu_seqlens,
        scale=scale,
        use_qk_l2norm_in_kernel=True,
        gate_domain="log",
    )
    return out


def cudnn_kda(
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
    """A (B, H, S, D) batch as B sequences of S tokens back to back (views of the bshd drawing)."""
    refuse_initial_state(OWNER, initial_state)
    refuse_non_causal(OWNER, causal)
    batch, _, seq, dim_k = q.shape
    cu = Segments(tuple(range(0, batch * seq + 1, seq))).cu_seqlens(q.device, torch.int32)
    tq, tk, tv, tg, tbeta = (tokens(x) for x in (q, k, v, g, beta))
    return untokens(_run(tq, tk, tv, tg, tbeta, cu, resolve_scale(scale, dim_k)), batch)


def cudnn_kda_packed(
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
    """A pack (1, H, T, D) in one call with its cu_seqlens (int32)."""
    refuse_initial_state(OWNER, initial_state)
    refuse_non_causal(OWNER, causal)
    cu = segments.cu_seqlens(q.device, torch.int32)
    tq, tk, tv, tg, tbeta = (tokens(x) for x in (q, k, v, g, beta))
    return untokens(_run(tq, tk, tv, tg, tbeta, cu, resolve_scale(scale, q.shape[-1])), 1)


def cudnn_kda_impl() -> Impl:
    """kda's ``cudnn`` impl (optional: left out with the reason where it cannot run)."""
    return Impl(
        NAME,
        cudnn_kda,
        "cuDNN's kimi_delta_attention (FROST on SM100, Hopper engines on SM90; THD with cu_seqlens), the log-gate "
        "as given, L2 norms in the kernel, value heads native; forward and backward; unverified on a GPU here",
        "O(sd²)",
        "O(sd)",
        time_exponent=1,
        availability=lambda device: unavailable(device),  # looked up per call: tests stand cuDNN in
        shape_support=shape_support,
        optional=True,
        layout="bshd",
        library=DISTRIBUTION,
        packed=cudnn_kda_packed,
        gva=True,
    )
