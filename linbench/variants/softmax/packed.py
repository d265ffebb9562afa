"""Softmax attention of packed variable-length batches.

- ``sdpa`` (packed): bidirectional packs as nested (jagged) tensors, one SDPA call for the
  whole pack; causal packs one SDPA call per sequence over views of the pack, since torch's
  nested SDPA refuses ``is_causal`` (torch 2.13: "Nested tensors for query / key are not
  supported when is_causal=True").
- ``varlen``: torch's own varlen kernel, ``torch.nn.attention.varlen.varlen_attn`` (flash
  attention with cu_seqlens; a CUDA GPU, fp16 or bf16). A padded or uniform batch is handed to
  it as a pack of equal lengths, its tokens views of the (B, S, H, D) inputs drawn for it and
  its boundaries made once per (B, S).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.declarations import Impl
from linbench.variants.softmax.sdpa import sdpa
from linbench.variants.varlen import Segments


def sdpa_packed(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, segments: Segments, causal: bool, backend: str
) -> torch.Tensor:
    """SDPA on a pack: nested tensors when bidirectional, one call per sequence when causal."""
    if causal:
        parts = zip(segments.split(q), segments.split(k), segments.split(v), strict=True)
        return torch.cat([sdpa(qi, ki, vi, causal=True, backend=backend) for qi, ki, vi in parts], dim=2)
    offsets = segments.cu_seqlens(q.device)

    def nested(x: torch.Tensor) -> torch.Tensor:
        # (1, H, T, D) → (T, H, D) values → (N, j, H, D) jagged → (N, H, j, D). The values must
        # be contiguous: torch's nested SDPA finds no backend for strided ones.
        return torch.nested.nested_tensor_from_jagged(x[0].transpose(0, 1).contiguous(), offsets).transpose(1, 2)

    out = sdpa(nested(q), nested(k), nested(v), causal=False, backend=backend)
    return out.transpose(1, 2).values().transpose(0, 1).unsqueeze(0)


def varlen_kernel() -> Callable[..., torch.Tensor]:
    """torch's varlen_attn (looked up per call, so tests can put a stand-in in its place)."""
    return importlib.import_module("torch.nn.attention.varlen").varlen_attn


def varlen_unavailable(device: torch.device) -> str | None:
    """Why torch's varlen kernel cannot run on ``device`` (None: it can). Looked up, not imported:
    importing torch.nn.attention.varlen imports torch._dynamo, seconds of CPU that every `list`
    and `run` would pay for a kernel most of them never call."""
    if importlib.util.find_spec("torch.nn.attention.varlen") is None:
        return f"this torch ({torch.__version__}) has no torch.nn.attention.varlen"
    if device.type != "cuda":
        return f"torch's varlen_attn is a flash-attention kernel for CUDA GPUs, not {device.type}"
    return None


def varlen_dtypes(dim_k: int, dim_v: int, dtype: str) -> str | None:
    """Flash attention takes fp16 and bf16, and one head dim for q, k and v."""
    if dtype not in ("fp16", "bf16"):
        return f"torch's varlen_attn (flash attention) takes fp16 and bf16, not {dtype}"
    return None if dim_k == dim_v else "torch's varlen_attn takes one head dim for q, k and v (Dk = Dv)"


def varlen_packed(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, segments: Segments, causal: bool) -> Any:
    """varlen_attn on (1, H, T, D) packed tensors, as (T, H, D) it takes (views of the
    (1, T, H, D) tensors the runner draws for this impl's layout)."""
    out = _varlen(*(x[0].transpose(0, 1) for x in (q, k, v)), segments=segments, causal=causal)
    return out.transpose(0, 1).unsqueeze(0)


def varlen_uniform(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> Any:
    """varlen_attn on a (B, H, S, D) batch: B sequences of S tokens. The runner draws this
    impl's inputs as (B, S, H, D) (``layout="bshd"``), so the (B·S, H, D) tokens the kernel
    takes are views, not copies, and the batch's boundaries are made once per (B, S)."""
    batch, heads, seq, _ = q.shape

    def tokens(x: torch.Tensor) -> torch.Tensor:  # (B, H, S, D) → (B·S, H, D)
        return x.transpose(1, 2).reshape(batch * seq, heads, x.shape[-1])

    out = _varlen(tokens(q), tokens(k), tokens(v), segments=uniform_segments(batch, seq), causal=causal)
    return out.reshape(batch, seq, heads, -1).transpose(1, 2)


@functools.lru_cache(maxsize=256)
def uniform_segments(batch: int, seq: int) -> Segments:
    """B sequences of S tokens as one pack's boundaries: one object per (B, S), so that its
    cu_seqlens tensor (cached per device by Segments) is made in the first, untimed call and
    never copied from the host in a timed one."""
    return Segments(tuple(range(0, batch * seq + 1, seq)))


def _varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, segments: Segments, causal: bool) -> Any:
    """The kernel on (T, H, D) tokens and the pack's boundaries, int32 as flash attention takes them."""
    problem = varlen_unavailable(q.device)
    if problem:
        raise ImplUnavailableError(problem)
    cu = segments.cu_seqlens(q.device, torch.int32)
    longest = segments.longest
    window = (-1, 0) if causal else (-1, -1)
    return varlen_kernel()(q, k, v, cu, cu, longest, longest, window_size=window)


def varlen_impl() -> Impl:
    return Impl(
        "varlen",
        varlen_uniform,
        "torch's varlen_attn: flash attention over packed sequences with cu_seqlens (CUDA, fp16/bf16)",
        "O(s²d)",
        "O(sd)",
        time_exponent=2,
        availability=varlen_unavailable,
        shape_support=varlen_dtypes,
        packed=varlen_packed,
        layout="bshd",
        backend="torch varlen_attn (flash)",
    )
