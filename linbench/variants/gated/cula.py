"""cuLA (inclusionAI's CuTe DSL/CUTLASS kernels, ``pip install cuda-linear-attention``) as kda's
and lightning's ``cula`` impls.

Mapped from cuLA at commit fa742a2 (2026-04-24; cuda-linear-attention 0.1.x; USAGE.md and the
functions' docstrings):

- kda, Blackwell (SM100/SM103): ``cula.kda.chunk_kda(q, k, v, g, beta, scale=None,
  initial_state=None, output_final_state=False, use_qk_l2norm_in_kernel=False,
  use_gate_in_kernel=False, cu_seqlens=None, cu_seqlens_cpu=None, safe_gate=False,
  lower_bound=None, ...)`` → ``(o, final_state)``, fla's ``chunk_kda`` convention (fla-core is
  a dependency): q, k, v (B, T, H, 128) bf16 with one head count (no GVA, so q and k are
  repeated to v's heads first, in the call), g the log-gate (B, T, H, K), β (B, T, H) bf16 or
  fp32 post-sigmoid, ``cu_seqlens`` int32 with B = 1. Backward through fla's.
- kda, Hopper (SM90): ``cula.kda.kda_prefill_hopper`` (``cula_kda_prefill``), the same
  arguments, fused forward only, and only with ``safe_gate=True``.
- Both are called with ``safe_gate=True``: the kernels' M=16 tensor-core path (USAGE.md: required
  for it, the one the field benchmarks), which assumes g ∈ [−5, 0); a lower gate is refused with
  its value, never clamped. ``use_gate_in_kernel`` off: g is passed as computed;
  ``use_qk_l2norm_in_kernel=True``; ``scale`` passed. The state (N, H, K, V) fp32 is not passed.
- lightning, Blackwell (SM100/SM103): ``cula.lightning.lightning_attn_fwd(Q, K, V, decay,
  scale=1.0, initial_state=None, output_final_state=False, chunk_size=64)`` → ``(O, ht)``, Q, K,
  V (B, S, H, 128) bf16, ``decay`` (H,) fp32 the rate s_h with per-token decay e^{−s_h} (its
  benchmark passes fla ``g_gamma = −decay``), so decay = −λ_h; its default scale is 1, so
  linbench's is passed. A pack: ``lightning_attn_fwd_varlen(Q, K, V, decay, cu_seqlens,
  scale=1.0, state_pool=None, ...)``, (1, T, H, D) with int32 cu_seqlens, each sequence from a
  zero state. Forward only.
Unverified on a GPU here.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.backends import note_backend
from linbench.variants.declarations import Impl
from linbench.variants.gated.gates import lightning_log_decay
from linbench.variants.gated.library_calls import (
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

NAME = "cula"
DISTRIBUTION = "cuda-linear-attention"
INSTALL = "pip install cuda-linear-attention; a Hopper or Blackwell GPU"
BLACKWELL = ((10, 0), (10, 3))
HOPPER = ((9, 0),)
DIMS = 128
# The entry point per compute capability major: Blackwell's modular chunk_kda, Hopper's fused prefill.
KDA_FUNCTIONS = {10: "chunk_kda", 9: "kda_prefill_hopper"}


def cula_function(module: str, name: str) -> Any:
    """cuLA's ``module.name`` (looked up per call, so tests can stand one in)."""
    return getattr(importlib.import_module(module), name)


def unavailable(device: torch.device, arches: tuple[tuple[int, int], ...], module: str) -> str | None:
    """Why cuLA's ``module`` cannot run on ``device``, or None."""
    return library_unavailable(
        DISTRIBUTION, INSTALL, device, arches, f"cuLA's {module}", module, lambda: importlib.import_module(module)
    )


def shape_support(dim_k: int, dim_v: int, dtype: str) -> str | None:
    """cuLA's limits for kda and lightning: K = V = 128, bf16."""
    return square_bf16_support("cuLA", DIMS, dim_k, dim_v, dtype)


def _bf16_only(owner: str, q: torch.Tensor) -> None:
    if q.dtype != torch.bfloat16:
        raise ImplUnavailableError(f"{owner}: cuLA takes bf16 only, not {q.dtype}")


def _kda_run(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, **kw: Any
) -> torch.Tensor:
    """cuLA's kda entry for the device on (B, H, S, D) tensors (q and k at v's heads)."""
    owner = "kda:cula"
    _bf16_only(owner, q)
    # The entry for the GPU (availability admits SM90 and SM100/SM103 only); Blackwell's on a
    # CPU, where only the tests' stand-in runs.
    major = torch.cuda.get_device_capability(q.device)[0] if q.device.type == "cuda" else 10
    function = KDA_FUNCTIONS.get(major, KDA_FUNCTIONS[10])
    if function != "chunk_kda":  # Hopper's fused kernel has no backward
        refuse_gradient(f"{owner} ({function})", q, k, v, g, beta)
    refuse_gates_below_floor(owner, g)
    note_backend(f"cula {function}")
    out, _ = cula_function("cula.kda", function)(
        *(seq_major(x) for x in (q, k, v, g, beta)),
        use_qk_l2norm_in_kernel=True,
        use_gate_in_kernel=False,
        safe_gate=True,
        **kw,
    )
    return out.transpose(1, 2)


def cula_kda(
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
    """Kimi Delta Attention by cuLA on (B, H, S, D) tensors, each batch row a sequence."""
    refuse_initial_state("kda:cula", initial_state)
    refuse_non_causal("kda:cula", causal)
    q, k = repeat_qk(q, k, v)
    return _kda_run(q, k, v, g, beta, scale=resolve_scale(scale, q.shape[-1]))


def cula_kda_packed(
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
    refuse_initial_state("kda:cula", initial_state)
    refuse_non_causal("kda:cula", causal)
    q, k = repeat_qk(q, k, v)
    cu = segments.cu_seqlens(q.device, torch.int32)
    return _kda_run(q, k, v, g, beta, scale=resolve_scale(scale, q.shape[-1]), cu_seqlens=cu)


def _lightning_run(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layer: Any, layers: Any, scale: Any, cu: Any = None
) -> torch.Tensor:
    """cuLA's lightning attention on (B, H, S, D) tensors (q and k at v's heads)."""
    owner = "lightning:cula"
    _bf16_only(owner, q)
    refuse_gradient(owner, q, k, v)
    like = torch.empty(0, dtype=torch.float32, device=q.device)
    rates = -lightning_log_decay(layer, layers, q.shape[1], like)  # s_h = −λ_h ≥ 0, per head, fp32
    factor = resolve_scale(scale, q.shape[-1])
    qs, ks, vs = (seq_major(x).contiguous() for x in (q, k, v))
    if cu is None:
        note_backend("cula lightning_attn_fwd")
        out, _ = cula_function("cula.lightning", "lightning_attn_fwd")(qs, ks, vs, rates, scale=factor)
    else:
        note_backend("cula lightning_attn_fwd_varlen")
        out, _ = cula_function("cula.lightning", "lightning_attn_fwd_varlen")(qs, ks, vs, rates, cu, scale=factor)
    return out.transpose(1, 2)


def cula_lightning(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    layer: Any,
    layers: Any,
    scale: Any,
    initial_state: Any = None,
) -> torch.Tensor:
    """Lightning attention by cuLA on (B, H, S, D) tensors, each batch row a sequence."""
    refuse_initial_state("lightning:cula", initial_state)
    refuse_non_causal("lightning:cula", causal)
    q, k = repeat_qk(q, k, v)
    return _lightning_run(q, k, v, layer, layers, scale)


def cula_lightning_packed(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    segments: Segments,
    causal: bool,
    layer: Any,
    layers: Any,
    scale: Any,
    initial_state: Any = None,
) -> torch.Tensor:
    """A pack (1, H, T, D) in one call with its cu_seqlens (int32), each sequence from zero."""
    refuse_initial_state("lightning:cula", initial_state)
    refuse_non_causal("lightning:cula", causal)
    q, k = repeat_qk(q, k, v)
    return _lightning_run(q, k, v, layer, layers, scale, segments.cu_seqlens(q.device, torch.int32))


def _kda_availability(device: torch.device) -> str | None:
    return unavailable(device, (*BLACKWELL, *HOPPER), "cula.kda")  # looked up per call: tests stand cuLA in


def _lightning_availability(device: torch.device) -> str | None:
    return unavailable(device, BLACKWELL, "cula.lightning")


def cula_kda_impl() -> Impl:
    """kda's ``cula`` impl (optional)."""
    return Impl(
        NAME,
        cula_kda,
        "cuLA's chunk_kda (SM100/SM103; backward through fla's) or kda_prefill_hopper (SM90, forward only), "
        "safe_gate (g ≥ −5), K = V = 128, bf16; unverified on a GPU here",
        "O(sd²)",
        "O(sd)",
        time_exponent=1,
        availability=lambda device: _kda_availability(device),
        shape_support=shape_support,
        optional=True,
        layout="bshd",
        library=DISTRIBUTION,
        packed=cula_kda_packed,
    )


def cula_lightning_impl() -> Impl:
    """lightning's ``cula`` impl (optional; forward only)."""
    return Impl(
        NAME,
        cula_lightning,
        "cuLA's lightning_attn_fwd (CuTe DSL; SM100/SM103, D 128, bf16; packs through lightning_attn_fwd_varlen); "
        "forward only; unverified on a GPU here",
        "O(sd²)",
        "O(sd)",
        time_exponent=1,
        availability=lambda device: _lightning_availability(device),
        shape_support=shape_support,
        optional=True,
        layout="bshd",
        library=DISTRIBUTION,
        packed=cula_lightning_packed,
    )
