"""fla-core's GDN-2 kernels as gdn2's impls: ``fla`` (``chunk_gdn2``, forward and backward) and
``fla-recurrent`` (``fused_recurrent_gdn2``, inference only: it has no backward), checked with
fla-core 0.6.0, where ``fla/ops/gdn2`` holds both and their naive references.

Called as fla's GDN-2 layer calls them: (B, S, H, D) views, g (log-decay per key channel), b
(erase, per key channel) and w (write, per value channel) as computed, q and k L2-normalised in
the kernel (``use_qk_l2norm_in_kernel=True``), ``scale``, the initial state (N, H_v, K, V) and a
pack's ``cu_seqlens``. ``fused_recurrent_gdn2`` takes more value heads than q/k heads natively
(value head j reads q/k head j // (H_v / H)); ``chunk_gdn2`` asserts q, k, g and b of one shape,
so q and k are repeated to the value heads first, as fla's layer does. chunk_gdn2's chunk is
fixed at 64 (it refuses another). No fp64 form; bf16 refused under Triton's interpreter.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.backends import note_backend
from linbench.variants.declarations import Impl, PackedFn
from linbench.variants.feature_forms import fla as fla_common
from linbench.variants.feature_forms.triton_interpreter import interpreter_on
from linbench.variants.gated import fla as gated_fla
from linbench.variants.gated.fla import CHUNK, INTERPRETED_BF16, RECURRENT
from linbench.variants.gated.numerics import causal_only, checked_state, resolve_scale
from linbench.variants.heads import repeat_qk
from linbench.variants.varlen import Segments

MODULE = "gdn2"
NAMES = {CHUNK: "chunk_gdn2", RECURRENT: "fused_recurrent_gdn2"}


def _seq_major(t: torch.Tensor) -> torch.Tensor:
    return t.transpose(1, 2)


def refuse(owner: str, name: str, q: torch.Tensor, needs_gradient: bool = False, kernel: str = CHUNK) -> None:
    """ImplUnavailableError where fla's ``name`` cannot compute: fp64, bf16 interpreted, a
    gradient of the fused recurrent kernel."""
    if q.dtype == torch.float64:
        raise ImplUnavailableError(f"{owner}: fla's {name} has no fp64 form")
    if q.dtype == torch.bfloat16 and q.device.type == "cpu" and interpreter_on():
        raise ImplUnavailableError(f"{owner}: fla's {name}: {INTERPRETED_BF16}")
    if kernel == RECURRENT and needs_gradient:
        raise ImplUnavailableError(f"{owner}: fla's fused_recurrent_gdn2 is inference only (no backward)")


def gdn2_fla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    g: torch.Tensor,
    b: torch.Tensor,
    w: torch.Tensor,
    scale: Any,
    kernel: str,
    initial_state: Any = None,
    cu_seqlens: torch.Tensor | None = None,
) -> torch.Tensor:
    """GDN-2 through fla's ``kernel`` (CHUNK or RECURRENT); out (B, H_v, S, Dv)."""
    owner, name = f"gdn2:{kernel}", NAMES[kernel]
    causal_only(owner, causal)
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v, g, b, w))
    refuse(owner, name, q, grad, kernel)
    if kernel == CHUNK:
        q, k = repeat_qk(q, k, v)
    given: dict[str, Any] = {name_: _seq_major(t) for name_, t in zip("qkvgbw", (q, k, v, g, b, w), strict=True)}
    state = checked_state(initial_state, (q.shape[0], v.shape[1], q.shape[-1], v.shape[-1]))
    if state is not None:
        given["initial_state"] = state.to(torch.float32)
    if cu_seqlens is not None:
        given["cu_seqlens"] = cu_seqlens
    note_backend(fla_common.backend_name(name, q.device))
    kernel_fn = gated_fla.fla_kernel(MODULE, name)  # looked up per call: tests stand fla in
    out, _ = kernel_fn(**given, scale=resolve_scale(scale, q.shape[-1]), use_qk_l2norm_in_kernel=True)
    return _seq_major(out)


def _packed(kernel: str) -> PackedFn:
    """A pack (1, H, T, D) in one kernel call with fla's ``cu_seqlens``."""

    def packed(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, segments: Segments, causal: bool, **params: Any
    ) -> torch.Tensor:
        return gdn2_fla(q, k, v, causal=causal, kernel=kernel, cu_seqlens=segments.cu_seqlens(q.device), **params)

    return packed


def _availability(device: torch.device) -> str | None:
    return fla_common.fla_unavailable(device, f"fla.ops.{MODULE}")


def _chunk_support(dim_k: int, dim_v: int, dtype: str) -> str | None:
    """chunk_gdn2 asserts a key head dim of at most 256 (fla-core 0.6.0, gdn2/chunk.py)."""
    if dim_k > 256:
        return f"fla's chunk_gdn2 takes a key head dim of at most 256; got {dim_k}"
    return fla_common.fla_dtype_support(dim_k, dim_v, dtype)


SUMMARIES = {
    CHUNK: "fla-core's chunk_gdn2 (chunk 64, forward and backward; q and k repeated to the value heads), "
    "L2 norms in the kernel",
    RECURRENT: "fla-core's fused_recurrent_gdn2 (inference only; value heads native), L2 norms in the kernel",
}


def gdn2_fla_impls() -> tuple[Impl, ...]:
    """gdn2's ``fla`` and ``fla-recurrent`` impls (fla-core 0.6 and a Triton GPU, or the interpreter)."""
    return tuple(
        Impl(
            kernel,
            partial(gdn2_fla, kernel=kernel),
            summary + "; fla's (B, S, H, D) layout made untimed; unverified on a GPU here",
            "O(sd²)",
            "O(sd)" if kernel == CHUNK else "O(d²)",
            time_exponent=1,
            availability=_availability,
            shape_support=_chunk_support if kernel == CHUNK else fla_common.fla_dtype_support,
            optional=True,
            layout="bshd",
            library=fla_common.DISTRIBUTION,
            packed=_packed(kernel),
            gva=kernel == RECURRENT,
        )
        for kernel, summary in SUMMARIES.items()
    )
