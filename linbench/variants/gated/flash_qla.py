"""FlashQLA (the Qwen team's TileLang kernels, ``pip install flash-qla``) as gated-deltanet's
``flash-qla`` impl.

Mapped from its documented API, flash-qla 0.1.3's ``flash_qla.chunk_gated_delta_rule(q, k, v, g,
beta, scale=None, initial_state=None, output_final_state=False, use_qk_l2norm_in_kernel=False,
cu_seqlens=None, ...)`` → ``(o, final_state)``: q and k (B, T, H, K), v (B, T, HV, V), g and β
(B, T, HV), g the log-gate, scale None meaning K^-1/2: fla's convention, so the mapping is fla's
chunk kernel's (fla.py), q and k L2-normalised in the kernel. Its own limits, refused here with
the reason before a call: a Hopper or Blackwell GPU (SM90, SM100/103, SM120/121; it raises on
import elsewhere), K = V = 128, fp16 or bf16. A pack runs one call per sequence (its cu_seqlens
path is not wired: it could not be checked without such a GPU).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.backends import note_backend
from linbench.variants.declarations import Impl
from linbench.variants.extra_inputs import ExtraInput
from linbench.variants.gated.library_calls import import_problem
from linbench.variants.gated.numerics import resolve_scale
from linbench.variants.varlen import per_sequence

NAME = "flash-qla"
DISTRIBUTION = "flash-qla"
KERNEL = "chunk_gated_delta_rule"
# The compute capabilities FlashQLA builds for (it raises on import on any other GPU).
ARCHES = ((9, 0), (10, 0), (10, 3), (12, 0), (12, 1))
DIMS = 128
DTYPES = ("bf16", "fp16")


# FlashQLA takes an initial state, but its layout could not be proven without a GPU: not passed.
NO_INITIAL_STATE = "gated-deltanet:flash-qla: an initial state is not passed to FlashQLA (unproven here)"


def flash_qla_kernel() -> Any:
    """FlashQLA's chunk_gated_delta_rule (looked up per call, so tests can stand one in)."""
    return importlib.import_module("flash_qla").chunk_gated_delta_rule


def unavailable(device: torch.device) -> str | None:
    """Why FlashQLA cannot run on ``device``, or None."""
    try:
        version = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "flash-qla is not installed (pip install flash-qla; a Hopper or Blackwell GPU and tilelang)"
    if device.type != "cuda":
        return f"FlashQLA's TileLang kernels need a Hopper or Blackwell CUDA GPU, not {device.type}"
    arch = torch.cuda.get_device_capability(device)
    if arch not in ARCHES:
        return f"FlashQLA {version} builds for SM90, SM100/103 and SM120/121 only, not SM{arch[0]}{arch[1]}"
    return import_problem("flash_qla", flash_qla_kernel)


def shape_support(dim_k: int, dim_v: int, dtype: str) -> str | None:
    """FlashQLA's documented limits: K = V = 128, fp16 or bf16."""
    if (dim_k, dim_v) != (DIMS, DIMS):
        return f"FlashQLA takes K = V = {DIMS} only, not Dk {dim_k}, Dv {dim_v}"
    if dtype not in DTYPES:
        return f"FlashQLA takes fp16 and bf16 only, not {dtype}"
    return None


def flash_qla(
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
    """The gated delta rule by FlashQLA on (B, S, H, D) views of linbench's (B, H, S, D) tensors."""
    if initial_state is not None:
        raise ImplUnavailableError(NO_INITIAL_STATE)
    if not causal:
        raise ImplUnavailableError("gated-deltanet:flash-qla: FlashQLA's kernel is causal only")
    if q.dtype not in (torch.bfloat16, torch.float16):
        raise ImplUnavailableError(f"gated-deltanet:flash-qla: FlashQLA takes fp16 and bf16 only, not {q.dtype}")
    seq_major = [t.transpose(1, 2) for t in (q, k, v, g, beta)]
    note_backend(f"flash-qla {KERNEL}")
    out, _ = flash_qla_kernel()(
        q=seq_major[0],
        k=seq_major[1],
        v=seq_major[2],
        g=seq_major[3],
        beta=seq_major[4],
        scale=resolve_scale(scale, q.shape[-1]),
        use_qk_l2norm_in_kernel=True,
    )
    return out.transpose(1, 2)


def flash_qla_impl(extra_inputs: tuple[ExtraInput, ...]) -> Impl:
    """gated-deltanet's ``flash-qla`` impl (optional: left out with the reason where it cannot run)."""
    return Impl(
        NAME,
        flash_qla,
        "FlashQLA's chunk_gated_delta_rule (TileLang; SM90/SM100/SM120, K = V = 128, fp16/bf16), L2 norms in the "
        "kernel; unverified on a GPU here",
        "O(sd²)",
        "O(sd)",
        time_exponent=1,
        availability=lambda device: unavailable(device),  # looked up per call: tests stand FlashQLA in
        shape_support=shape_support,
        optional=True,
        layout="bshd",
        library=DISTRIBUTION,
        packed=per_sequence(flash_qla, extra_inputs),
    )
