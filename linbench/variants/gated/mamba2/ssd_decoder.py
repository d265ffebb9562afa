"""The ``mamba-ssm`` decoder of mamba2: the prefill through ``mamba_chunk_scan_combined``
(its final state), each step through ``selective_state_update``, the Triton kernel Mamba2's
layer decodes with (one token of every request per call, the state updated in place).

The step's arguments are the layer's: x (B, H, P), dt (B, H, P) and A (H, P, N), dt_bias and D
(H, P) broadcast over the head dim with stride 0 (the kernel then ties them, ``tie_hdim``),
B and C (B, G, N), ``dt_softplus=True``; the state (B, H, P, N), mamba-ssm's layout (linbench's
matrix (B, H, N, P) seen transposed: the kernel takes strides).

Plain decoding copies the carried state once a step before the kernel updates it in place
(linbench's serving keeps each token's state for a rollback). Served with a pool
(``linbench decode --pool``) the kernel takes the pool itself: ``state_batch_indices`` is
each request's slot, and the kernel updates the slots in place, as vLLM's Mamba2 layers call it.
A pool in k-last layout (H, Dv, Dk) is mamba-ssm's own; a v-last one is handed over
transposed. With T > 1 tokens a step (speculative decoding), mamba-ssm 2.3's kernel takes one
token and one slot a call: each token's slot is first copied from the previous token's (from
the slot of the last accepted token for the first), then stepped in place.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from linbench.variants.backends import note_backend
from linbench.variants.declarations import Decoder
from linbench.variants.gated.mamba2 import library
from linbench.variants.gated.mamba2.ssd import CHUNK_SIZE, head_parameters, refuse, scan
from linbench.variants.gated.numerics import GatedState

KERNEL = "selective_state_update"


def _kernel() -> Any:
    return library.import_kernels(library.STEP_MODULE).selective_state_update


def _token_arguments(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, dt: torch.Tensor, t: int, tied: dict[str, torch.Tensor]
) -> dict[str, torch.Tensor]:
    """Token t of every request as the kernel takes it, the per-head values tied over P."""
    x = v[:, :, t]
    return {"x": x, "dt": dt[:, :, t, None].expand_as(x), "B": k[:, :, t], "C": q[:, :, t], **tied}


def _tied(params: dict[str, Any], q: torch.Tensor, v: torch.Tensor) -> dict[str, torch.Tensor]:
    """A (H, P, N), dt_bias and D (H, P): per head, broadcast over the head dim with stride 0."""
    heads, dim_v, dim_k = v.shape[1], v.shape[-1], q.shape[-1]
    per_head = head_parameters(params, heads, q)
    return {
        "A": per_head["A"][:, None, None].expand(heads, dim_v, dim_k),
        "dt_bias": per_head["dt_bias"][:, None].expand(heads, dim_v),
        "D": per_head["D"][:, None].expand(heads, dim_v),
    }


def _steps(
    matrix: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    dt: torch.Tensor,
    params: dict[str, Any],
    slots: torch.Tensor | None = None,
) -> torch.Tensor:
    """Every token of the step through the kernel on ``matrix`` (…, H, N, P), in place; with
    ``slots`` (B, T), token t updates slot slots[:, t] of the pool ``matrix``, copied first from
    the previous token's slot. Outputs (B, H, T, P)."""
    refuse(q.dtype, q.device, KERNEL)
    kernel, tied, rows = _kernel(), _tied(params, q, v), []
    note_backend(library.backend_name(KERNEL, q.device) + (" pooled" if slots is not None else ""))
    for t in range(q.shape[-2]):
        index = None
        if slots is not None:
            # contiguous: the kernel reads request b's slot at offset b (it takes no stride)
            index = slots[:, t].contiguous()
            if t > 0:
                matrix.index_copy_(0, index, matrix.index_select(0, slots[:, t - 1]))
        given = _token_arguments(q, k, v, dt, t, tied)
        rows.append(kernel(matrix.transpose(-1, -2), **given, dt_softplus=True, state_batch_indices=index))
    return torch.stack(rows, dim=2)


def _prefill(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    state: GatedState | None,
    capacity: int,
    dt: torch.Tensor,
    initial_state: Any = None,
    **params: Any,
) -> GatedState:
    del capacity  # the state does not grow
    start = state.matrix if state is not None else initial_state
    _, final = scan(q, k, v, dt=dt, chunk_size=CHUNK_SIZE.default, initial_state=start, final_state=True, **params)
    assert final is not None
    position = state.position if state is not None else 0
    return GatedState(final.contiguous(), position + q.shape[-2])


def _step(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    state: GatedState | None = None,
    dt: torch.Tensor,
    initial_state: Any = None,
    **params: Any,
) -> tuple[torch.Tensor, GatedState]:
    """Tokens from the carried state (a copy of it updated in place by the kernel)."""
    if state is None:
        zeros = q.new_zeros(q.shape[0], v.shape[1], q.shape[-1], v.shape[-1], dtype=torch.float32)
        state = GatedState(initial_state if initial_state is not None else zeros, 0)
    matrix = state.matrix.to(torch.float32).clone()
    out = _steps(matrix, q, k, v, dt, params)
    return out, GatedState(matrix, state.position + q.shape[-2])


def pooled_step(
    pool: torch.Tensor,
    slots: torch.Tensor,
    accepted: torch.Tensor | None,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    k_last: bool,
    dt: torch.Tensor,
    **params: Any,
) -> torch.Tensor:
    """One step of every request with the pool handed to the kernel (``state_batch_indices``)."""
    matrix = pool.transpose(-1, -2) if k_last else pool  # (slots, H, N, P) as _steps takes it
    if slots.ndim == 1:
        if q.shape[-2] > 1:
            raise ValueError(f"{KERNEL} needs a slot per request and token for {q.shape[-2]} tokens a step")
        slots = slots.unsqueeze(1)
    elif accepted is not None:  # the first token starts from the last accepted token's slot
        rows = torch.arange(slots.shape[0], device=slots.device)
        matrix.index_copy_(0, slots[:, 0], matrix.index_select(0, slots[rows, accepted.to(slots.device) - 1]))
    params.pop("initial_state", None)
    return _steps(matrix, q, k, v, dt, params, slots=slots)


def mamba_ssm_decoder() -> Decoder:
    """mamba2's ``mamba-ssm`` decoder (mamba-ssm installed, a CUDA GPU or the interpreter)."""
    decoder = Decoder(
        "mamba-ssm",
        "mamba-ssm's mamba_chunk_scan_combined for the prefill, selective_state_update for each step; served, "
        "the kernel takes the pool and slots (state_batch_indices)",
        _prefill,
        _step,
        state_memory="O(d²)",
        step_time="O(d²)",
    )
    return replace(decoder, availability=library.unavailable, library=library.DISTRIBUTION, pooled=pooled_step)
