"""``mamba2:mamba-ssm``: mamba-ssm's ``mamba_chunk_scan_combined``, the Triton SSD chunk scan a
Mamba2 layer runs, forward and backward.

The call is the one mamba_ssm's ``Mamba2`` layer makes, on (B, S, H, D) views of linbench's
tensors: x = v (B, S, H, P), dt (B, S, H) raw, A = −e^{A_log} (H,), B = k and C = q
(B, S, G, N), D (H,), dt_bias (H,), ``dt_softplus=True``; the initial state as
``initial_states`` (B, H, P, N), mamba-ssm's layout, the transpose of linbench's
(B, H, N, P). A pack (1, H, T, D) goes in as the layer's varlen call: ``seq_idx`` (1, T), the
sequence of each token, which resets the state at every boundary, and ``cu_seqlens`` (which the
kernel reads only to return each sequence's final state, ``return_varlen_states``, a forward-
only option its backward refuses: linbench asks for the output alone). ``chunk_size`` is the
kernel's own (256 in Mamba2's layer).

mamba-ssm computes in fp32 (fp16, bf16 and fp32 inputs); it has no fp64 form. Under Triton's
interpreter bf16 is refused, as for fla (numpy has no bf16).
"""

from __future__ import annotations

from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.backends import note_backend
from linbench.variants.declarations import Param
from linbench.variants.feature_forms.triton_interpreter import interpreter_on
from linbench.variants.gated.mamba2 import library
from linbench.variants.gated.mamba2.inputs import A_LOG, DT_BIAS, SKIP, per_head
from linbench.variants.gated.numerics import causal_only, checked_state
from linbench.variants.impl_helpers import positive_int_problem
from linbench.variants.varlen import Segments

KERNEL = "mamba_chunk_scan_combined"
CHUNK_SIZE = Param(
    "chunk_size", 256, "tokens per chunk of mamba-ssm's SSD kernels (Mamba2's layer: 256)", check=positive_int_problem
)
INTERPRETED_BF16 = "Triton's interpreter computes bf16 wrongly on a CPU (numpy has no bf16); fp16 and fp32 run"


def refuse(dtype: torch.dtype, device: torch.device, kernel: str) -> None:
    """ImplUnavailableError for the dtypes mamba-ssm's ``kernel`` cannot compute here."""
    if dtype == torch.float64:
        raise ImplUnavailableError(f"mamba-ssm's {kernel} computes in fp32; it has no fp64 form")
    if dtype == torch.bfloat16 and device.type == "cpu" and interpreter_on():
        raise ImplUnavailableError(f"mamba-ssm's {kernel}: {INTERPRETED_BF16}")


def head_parameters(params: dict[str, Any], heads: int, like: torch.Tensor) -> dict[str, torch.Tensor]:
    """A (fp32, as the layer keeps it), dt_bias and D per head, as mamba-ssm takes them."""
    fp32 = like.new_empty(0, dtype=torch.float32)
    return {
        "A": -per_head(A_LOG.name, params.get(A_LOG.name), heads, fp32).exp(),
        "dt_bias": per_head(DT_BIAS.name, params.get(DT_BIAS.name), heads, fp32),
        "D": per_head(SKIP.name, params.get(SKIP.name), heads, fp32),
    }


def _seq_major(t: torch.Tensor) -> torch.Tensor:
    return t.transpose(1, 2)


def scan(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    dt: torch.Tensor,
    chunk_size: int,
    initial_state: torch.Tensor | None = None,
    final_state: bool = False,
    segments: Segments | None = None,
    **params: Any,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The kernel on (B, H, S, D) tensors: out (B, H, S, P) and, with ``final_state``, the state
    after the last token (B, H, N, P) in linbench's layout."""
    refuse(q.dtype, q.device, KERNEL)
    heads = v.shape[1]
    if heads % k.shape[1]:
        raise ValueError(f"mamba-ssm needs v's heads ({heads}) a multiple of the groups of q and k ({k.shape[1]})")
    kernel = library.import_kernels(library.SSD_MODULE).mamba_chunk_scan_combined
    given: dict[str, Any] = head_parameters(params, heads, q)
    if initial_state is not None:
        given["initial_states"] = initial_state.transpose(-1, -2).to(torch.float32)
    if segments is not None:
        given["seq_idx"] = sequence_index(segments, q.device)
        given["cu_seqlens"] = segments.cu_seqlens(q.device)
    note_backend(library.backend_name(KERNEL, q.device))
    result = kernel(
        _seq_major(v),
        _seq_major(dt),
        B=_seq_major(k),
        C=_seq_major(q),
        chunk_size=int(chunk_size),
        dt_softplus=True,
        return_final_states=final_state,
        **given,
    )
    out, state = result if final_state else (result, None)
    return _seq_major(out), state.transpose(-1, -2) if state is not None else None


def mamba_ssm_impl(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    dt: torch.Tensor,
    chunk_size: int,
    initial_state: Any = None,
    **params: Any,
) -> torch.Tensor:
    """Mamba2's SSD core through mamba-ssm's chunk scan (the D skip inside the kernel)."""
    causal_only("mamba2:mamba-ssm", causal)
    _check_state(initial_state, q, k, v)
    return scan(q, k, v, dt=dt, chunk_size=chunk_size, initial_state=initial_state, **params)[0]


def mamba_ssm_packed(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    segments: Segments,
    causal: bool,
    dt: torch.Tensor,
    chunk_size: int,
    initial_state: Any = None,
    **params: Any,
) -> torch.Tensor:
    """A pack in one kernel call, the state reset at each boundary (``seq_idx``)."""
    causal_only("mamba2:mamba-ssm", causal)
    if initial_state is not None:
        raise ImplUnavailableError("mamba2:mamba-ssm: a pack starts every sequence from a zero state")
    return scan(q, k, v, dt=dt, chunk_size=chunk_size, segments=segments, **params)[0]


def sequence_index(segments: Segments, device: torch.device) -> torch.Tensor:
    """(1, T) int32: the sequence of each token of a pack, as Mamba2's layer derives ``seq_idx``
    from ``cu_seqlens`` (made once per pack and device)."""

    def make() -> torch.Tensor:
        lengths = torch.tensor(segments.lengths, device=device)
        ids = torch.arange(segments.count, device=device, dtype=torch.int32)
        return ids.repeat_interleave(lengths).unsqueeze(0)

    made: torch.Tensor = segments.cached("seq_idx", device, make)
    return made


def _check_state(given: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    checked_state(given, (q.shape[0], v.shape[1], k.shape[-1], v.shape[-1]))
