"""fla-core's fused recurrent kernels as decoders: ``gated-deltanet:fla-recurrent`` and
``kda:fla-recurrent``, on the ``.[fla]`` extra.

Each prefills and steps with fla's fused recurrent kernel (one launch over the block's tokens,
q and k L2-normalised in the kernel as fla's layers call it), the state a (B, H, Dk, Dv) fp32
matrix as fla keeps it (``GatedState``, as linbench's own ``recurrent`` decoder).

Served (``linbench decode --pool``), the two differ, as fla-core 0.6.0's kernels do:

- ``fused_recurrent_kda_fwd`` (the function vLLM's KDA layers call) takes the pool itself:
  ``initial_state`` is the whole pool [slots, H, K, V] (or [slots, H, V, K] with
  ``state_v_first``, the k-last layout), ``ssm_state_indices`` each request's slot (B,), or for
  T > 1 one slot per request and token (B, T), the state after token t written to slot [b, t];
  ``num_accepted_tokens`` (B,) says from which of them the next step starts (slot
  [b, accepted − 1]): the rollback of speculative decoding is the choice of slot, and nothing
  is copied. ``inplace_final_state`` writes the states back into the pool, in the pool's own
  dtype (loaded and stored in it, computed in fp32): a bf16 pool is native. ``pooled_kda`` hands
  it all that.
- ``fused_recurrent_gated_delta_rule`` takes none of those arguments (fla-core 0.6.0): the
  serving layer gathers the requests' states, the kernel steps them from ``initial_state``,
  and the layer writes them back (linbench/variants/serving.py), as for every other decoder.

The inputs are handed to the kernels as fla's (B, S, H, D) layout, made contiguous in the step
(T tokens of every request: small beside the state, which is what a decode step moves).
Proven on the CPU under Triton's interpreter (tests/variants/fla_serving_interpreted.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.backends import note_backend
from linbench.variants.declarations import Decoder
from linbench.variants.feature_forms import fla as fla_common
from linbench.variants.feature_forms.triton_interpreter import interpreter_on
from linbench.variants.gated.fla import INTERPRETED_BF16, RECURRENT, fla_kernel
from linbench.variants.gated.numerics import GatedState, resolve_scale

# Variant → fla's module and its fused recurrent kernel (the public one, with input_guard).
KERNELS = {
    "gated-deltanet": ("gated_delta_rule", "fused_recurrent_gated_delta_rule"),
    "kda": ("kda", "fused_recurrent_kda"),
}
# The variants whose kernel takes a state pool with per-request slots (fla-core 0.6.0).
POOLED = {"kda": ("kda.fused_recurrent", "fused_recurrent_kda_fwd")}


def _fla_layout(t: torch.Tensor) -> torch.Tensor:
    """(B, H, S[, D]) → fla's (B, S, H[, D]), contiguous: the _fwd kernels index it raw."""
    return t.transpose(1, 2).contiguous()


def _refuse(dtype: torch.dtype, device: torch.device, kernel: str) -> None:
    if dtype == torch.float64:
        raise ImplUnavailableError(f"fla's {kernel} has no fp64 form")
    if dtype == torch.bfloat16 and device.type == "cpu" and interpreter_on():
        raise ImplUnavailableError(f"fla's {kernel}: {INTERPRETED_BF16}")


def _inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor) -> dict[str, Any]:
    return {
        "q": _fla_layout(q),
        "k": _fla_layout(k),
        "v": _fla_layout(v),
        "g": _fla_layout(g),
        "beta": _fla_layout(beta),
    }


def _start(state: GatedState | None, initial_state: Any, k: torch.Tensor, v: torch.Tensor) -> GatedState:
    if state is not None:
        return state
    if initial_state is not None:
        return GatedState(initial_state.to(device=k.device, dtype=torch.float32), 0)
    return GatedState(k.new_zeros(k.shape[0], v.shape[1], k.shape[-1], v.shape[-1], dtype=torch.float32), 0)


def _stream(variant: str) -> Callable[..., tuple[torch.Tensor, GatedState]]:
    """Tokens through fla's fused recurrent kernel from the carried state: (out, new state)."""
    module, name = KERNELS[variant]

    def stream(
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        *,
        state: GatedState | None = None,
        g: torch.Tensor,
        beta: torch.Tensor,
        scale: Any = None,
        initial_state: Any = None,
        **_: Any,
    ) -> tuple[torch.Tensor, GatedState]:
        _refuse(q.dtype, q.device, name)
        carried = _start(state, initial_state, k, v)
        note_backend(fla_common.backend_name(name, q.device))
        out, final = fla_kernel(module, name)(
            **_inputs(q, k, v, g, beta),
            scale=resolve_scale(scale, q.shape[-1]),
            initial_state=carried.matrix.float().contiguous(),
            output_final_state=True,
            use_qk_l2norm_in_kernel=True,
        )
        return out.transpose(1, 2), GatedState(final, carried.position + q.shape[-2])

    return stream


def pooled_kda(
    pool: torch.Tensor,
    slots: torch.Tensor,
    accepted: torch.Tensor | None,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    k_last: bool,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: Any = None,
    **_: Any,
) -> torch.Tensor:
    """One step of every request with the pool handed to fla's kernel: it reads each request's
    state from its slot (``accepted``: from the slot of the previous step's last accepted token),
    and writes the state after every token back into ``slots`` in place. Outputs (B, H, T, Dv)."""
    module, name = POOLED["kda"]
    _refuse(q.dtype, q.device, name)
    if slots.ndim == 1 and q.shape[-2] > 1:
        # fla reads slot [b, t] at offset b·stride + t: one slot per request is only for T = 1.
        raise ValueError(f"{name} needs a slot per request and token for {q.shape[-2]} tokens a step")
    note_backend(f"{fla_common.backend_name(name, q.device)} pooled")
    out, _ = fla_kernel(module, name)(
        **_inputs(q, k, v, g, beta),
        scale=resolve_scale(scale, q.shape[-1]),
        initial_state=pool,
        inplace_final_state=True,
        state_v_first=k_last,
        ssm_state_indices=slots.contiguous(),
        num_accepted_tokens=accepted,
        use_qk_l2norm_in_kernel=True,
    )
    return out.transpose(1, 2)


def _availability(variant: str) -> Callable[[torch.device], str | None]:
    def availability(device: torch.device) -> str | None:
        return fla_common.fla_unavailable(device, f"fla.ops.{KERNELS[variant][0]}")

    return availability


def fla_decoder(variant: str) -> Decoder:
    """``variant``'s ``fla-recurrent`` decoder (gated-deltanet, kda): fla's fused recurrent kernel
    for the prefill and the step; kda's takes a serving pool natively."""
    stream = _stream(variant)
    pooled = "the kernel takes the pool and slots" if variant in POOLED else "the pool gathered by linbench"
    decoder = Decoder.from_stream(
        RECURRENT,
        f"fla-core's {KERNELS[variant][1]} for the prefill and each step (.[fla], a CUDA GPU); served, {pooled}",
        stream,
        "O(d²)",
        "O(d²)",
    )
    return replace(
        decoder,
        availability=_availability(variant),
        library=fla_common.DISTRIBUTION,
        pooled=pooled_kda if variant in POOLED else None,
    )


def fla_decoders(variant: str) -> tuple[Decoder, ...]:
    """The fla decoders ``variant`` has (none but for gated-deltanet and kda)."""
    return (fla_decoder(variant),) if variant in KERNELS else ()
