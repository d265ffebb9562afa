"""gdn2's ``fla-recurrent`` decoder: fla-core's ``fused_recurrent_gdn2`` for the prefill and each
step, the state a (B, H_v, Dk, Dv) fp32 matrix (``GatedState``, as linbench's own decoder).

Served (``linbench decode --pool``), ``fused_recurrent_gdn2_fwd`` (fla-core 0.6.0,
``fla/ops/gdn2/fused_recurrent.py``; the function the public one calls) takes the pool itself,
as ``fused_recurrent_kda_fwd`` does for kda (linbench/variants/gated/fla_decoder.py): the whole
pool as ``initial_state`` (k-last with ``state_v_first``), each request's slot as
``ssm_state_indices`` ((B, T) for T > 1: the state after token t goes to slot [b, t]),
``num_accepted_tokens`` the slot the step starts from, and ``inplace_final_state`` writing the
states back in the pool's own dtype. Inputs go in fla's (B, S, H, D) layout, made contiguous.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from linbench.variants.backends import note_backend
from linbench.variants.declarations import Decoder
from linbench.variants.feature_forms import fla as fla_common
from linbench.variants.gated import fla as gated_fla
from linbench.variants.gated.fla import RECURRENT
from linbench.variants.gated.gdn2.fla import MODULE, refuse
from linbench.variants.gated.numerics import GatedState, resolve_scale

KERNEL, POOLED = "fused_recurrent_gdn2", "fused_recurrent_gdn2_fwd"


def _inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **gates: torch.Tensor) -> dict[str, torch.Tensor]:
    tensors = {"q": q, "k": k, "v": v} | gates
    return {name: t.transpose(1, 2).contiguous() for name, t in tensors.items()}


def _stream(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    state: GatedState | None = None,
    g: torch.Tensor,
    b: torch.Tensor,
    w: torch.Tensor,
    scale: Any = None,
    initial_state: Any = None,
    **_: Any,
) -> tuple[torch.Tensor, GatedState]:
    """Tokens through fla's fused recurrent kernel from the carried state: (out, new state)."""
    refuse("gdn2:fla-recurrent", KERNEL, q)
    if state is None:
        zeros = k.new_zeros(k.shape[0], v.shape[1], k.shape[-1], v.shape[-1], dtype=torch.float32)
        state = GatedState(initial_state.to(torch.float32) if initial_state is not None else zeros, 0)
    note_backend(fla_common.backend_name(KERNEL, q.device))
    out, final = gated_fla.fla_kernel(MODULE, KERNEL)(
        **_inputs(q, k, v, g=g, b=b, w=w),
        scale=resolve_scale(scale, q.shape[-1]),
        initial_state=state.matrix.float().contiguous(),
        output_final_state=True,
        use_qk_l2norm_in_kernel=True,
    )
    return out.transpose(1, 2), GatedState(final, state.position + q.shape[-2])


def pooled_gdn2(
    pool: torch.Tensor,
    slots: torch.Tensor,
    accepted: torch.Tensor | None,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    k_last: bool,
    g: torch.Tensor,
    b: torch.Tensor,
    w: torch.Tensor,
    scale: Any = None,
    **_: Any,
) -> torch.Tensor:
    """One step of every request with the pool handed to fla's kernel (module doc)."""
    refuse("gdn2:fla-recurrent", POOLED, q)
    if slots.ndim == 1 and q.shape[-2] > 1:
        raise ValueError(f"{POOLED} needs a slot per request and token for {q.shape[-2]} tokens a step")
    note_backend(f"{fla_common.backend_name(POOLED, q.device)} pooled")
    out, _ = gated_fla.fla_kernel(f"{MODULE}.fused_recurrent", POOLED)(
        **_inputs(q, k, v, g=g, b=b, w=w),
        scale=resolve_scale(scale, q.shape[-1]),
        initial_state=pool,
        inplace_final_state=True,
        state_v_first=k_last,
        ssm_state_indices=slots.contiguous(),
        num_accepted_tokens=accepted,
        use_qk_l2norm_in_kernel=True,
    )
    return out.transpose(1, 2)


def _availability(device: torch.device) -> str | None:
    return fla_common.fla_unavailable(device, f"fla.ops.{MODULE}")


def gdn2_fla_decoder() -> Decoder:
    """gdn2's ``fla-recurrent`` decoder (fla-core 0.6 and a Triton GPU, or the interpreter)."""
    decoder = Decoder.from_stream(
        RECURRENT,
        f"fla-core's {KERNEL} for the prefill and each step (.[fla], a CUDA GPU); served, the kernel takes the "
        "pool and slots",
        _stream,
        "O(d²)",
        "O(d²)",
    )
    return replace(decoder, availability=_availability, library=fla_common.DISTRIBUTION, pooled=pooled_gdn2)
