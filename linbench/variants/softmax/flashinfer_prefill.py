"""FlashInfer's prefill attention as softmax's ``flashinfer`` impl (``pip install
flashinfer-python``).

Mapped from flashinfer-python 0.7.2's documented API: ``flashinfer.single_prefill_with_kv_cache(q,
k, v, ..., causal=False, kv_layout="NHD", ..., sm_scale=None, ...)`` → out, one request: q
(S, H, D), k and v (S, Hkv, D) in the NHD layout (fewer key/value heads: grouped-query attention,
natively), sm_scale None meaning Dk^-1/2. A batch is one call per sequence (the batch wrappers,
which plan on the host before they run, are not mapped), and so is a pack. A CUDA GPU (SM80+),
fp16/bf16, Dk = Dv of 64, 128 or 256. Unverified on a GPU here; the tests bind the call to the
installed function's signature.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable
from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.backends import note_backend
from linbench.variants.declarations import Impl
from linbench.variants.varlen import Segments

DISTRIBUTION = "flashinfer-python"
FUNCTION = "single_prefill_with_kv_cache"
DIMS = (64, 128, 256)


def kernel() -> Callable[..., Any]:
    """FlashInfer's single prefill (looked up per call, so tests can stand one in)."""
    return getattr(importlib.import_module("flashinfer"), FUNCTION)


def unavailable(device: torch.device) -> str | None:
    """Why FlashInfer's prefill cannot run on ``device``, or None."""
    try:
        importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return f"{DISTRIBUTION} is not installed (pip install {DISTRIBUTION}; a CUDA GPU)"
    if device.type != "cuda":
        return f"FlashInfer's prefill is a CUDA kernel, not for {device.type}"
    major, minor = torch.cuda.get_device_capability(device)
    if major < 8:
        return f"FlashInfer's prefill needs SM80 or newer, not SM{major}{minor}"
    try:
        kernel()
    except Exception as exc:  # a broken install says why, in list, instead of crashing a run
        return f"flashinfer cannot be imported: {' '.join(str(exc).split())[:200]}"
    return None


def shape_support(dim_k: int, dim_v: int, dtype: str) -> str | None:
    if dtype not in ("fp16", "bf16"):
        return f"flashinfer: fp16 and bf16 only, not {dtype}"
    if dim_k != dim_v or dim_k not in DIMS:
        return f"flashinfer: Dk = Dv of {', '.join(map(str, DIMS))} here, not Dk {dim_k}, Dv {dim_v}"
    return None


def _one(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """One sequence, (H, S, D) tensors, as FlashInfer's (S, H, D) NHD views; the output back as (H, S, D)."""
    nhd = (t.transpose(0, 1) for t in (q, k, v))
    return kernel()(*nhd, causal=causal, kv_layout="NHD", sm_scale=None).transpose(0, 1)


def _dtype_only(q: torch.Tensor) -> None:
    if q.dtype not in (torch.float16, torch.bfloat16):
        raise ImplUnavailableError(f"softmax:flashinfer: fp16 and bf16 only, not {q.dtype}")


def prefill(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """A (B, H, S, D) batch, one call per sequence."""
    _dtype_only(q)
    note_backend(f"flashinfer {FUNCTION}")
    return torch.stack([_one(q[b], k[b], v[b], causal) for b in range(q.shape[0])])


def prefill_packed(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, segments: Segments, causal: bool
) -> torch.Tensor:
    """A pack (1, H, T, D), one call per sequence over views of it."""
    _dtype_only(q)
    note_backend(f"flashinfer {FUNCTION}")
    parts = zip(segments.split(q), segments.split(k), segments.split(v), strict=True)
    return torch.cat([_one(qi[0], ki[0], vi[0], causal).unsqueeze(0) for qi, ki, vi in parts], dim=2)


def flashinfer_impl() -> Impl:
    return Impl(
        "flashinfer",
        prefill,
        "FlashInfer's single_prefill_with_kv_cache (SM80+, fp16/bf16, D 64/128/256), GQA natively, a call per "
        "sequence; unverified on a GPU here",
        "O(s²d)",
        "O(sd)",
        time_exponent=2,
        availability=lambda device: unavailable(device),  # looked up per call: tests stand FlashInfer in
        shape_support=shape_support,
        optional=True,
        layout="bshd",
        library=DISTRIBUTION,
        packed=prefill_packed,
        gqa=True,
    )
