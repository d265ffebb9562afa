"""FlashAttention 2, 3 and 4 as softmax impls (``fa2``, ``fa3``, ``fa4``), each an optional library.

Mapped from each library's documented API; both take (B, S, H, D) tensors (the impls hand them
views of linbench's (B, H, S, D) ones, drawn in that layout untimed: ``layout="bshd"``), k and v
with fewer heads than q (grouped-query attention, natively), ``softmax_scale`` None meaning
Dk^-1/2, and a pack as (T, H, D) with int32 ``cu_seqlens`` and the longest length:

- ``fa2``: flash-attn 2.8's ``flash_attn.flash_attn_func(q, k, v, dropout_p=0.0,
  softmax_scale=None, causal=False, ...)`` → out, and ``flash_attn_varlen_func(q, k, v,
  cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal)``;
  an Ampere GPU or newer (SM80+), fp16/bf16, head dims up to 256, Dk = Dv.
- ``fa3``: FlashAttention 3's Hopper build (the ``flash_attn_3`` distribution, built from the
  repository's ``hopper/`` folder; module ``flash_attn_interface``): ``flash_attn_func(q, k, v,
  softmax_scale=None, causal=False, ...)`` and ``flash_attn_varlen_func(q, k, v, cu_seqlens_q,
  cu_seqlens_k, max_seqlen_q, max_seqlen_k, ...)``; SM90 only, fp16/bf16 (and fp8, not used
  here), head dims up to 256. Its releases return out alone or (out, lse): both are taken.
- ``fa4``: flash-attn-4's ``flash_attn.cute.flash_attn_func(q, k, v, softmax_scale=None,
  causal=False, ...)`` → (out, lse), and ``flash_attn_varlen_func(q, k, v, cu_seqlens_q=...,
  cu_seqlens_k=..., max_seqlen_q=..., max_seqlen_k=..., causal=...)``; Hopper or Blackwell
  (SM90, SM100/110), fp16/bf16, head dims 8..256 on SM90 and 8..128 (or 256) on SM100.

None is verified on a GPU here; the tests bind each call to the installed function's signature
where the library installs (FlashAttention 3 installs only from a build on a Hopper machine).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from linbench.errors import ImplUnavailableError
from linbench.variants.backends import note_backend
from linbench.variants.declarations import Impl
from linbench.variants.varlen import Segments


@dataclass(frozen=True)
class Library:
    """One FlashAttention generation: where its functions are and what it runs on."""

    impl: str
    distribution: str
    module: str
    arches: tuple[int, ...]  # compute capability majors it builds for
    max_dim: int
    returns_lse: bool  # the function returns (out, lse) rather than out
    summary: str
    install: str = ""  # how to install it, where not "pip install <distribution>"


FA2 = Library(
    "fa2", "flash-attn", "flash_attn", (8, 9, 10, 12), 256, False, "FlashAttention 2 (flash-attn): SM80+, fp16/bf16"
)
FA3 = Library(
    "fa3",
    "flash_attn_3",
    "flash_attn_interface",
    (9,),
    256,
    False,
    "FlashAttention 3 (flash_attn_3, the Hopper build): SM90",
    "build it from flash-attention's hopper/ folder on a Hopper machine: not on PyPI",
)
FA4 = Library(
    "fa4",
    "flash-attn-4",
    "flash_attn.cute",
    (9, 10, 11),
    256,
    True,
    "FlashAttention 4 (flash-attn-4, CuTe DSL): SM90/SM100",
)
LIBRARIES = (FA2, FA3, FA4)


def kernel(library: Library, name: str) -> Callable[..., Any]:
    """``name`` in the library's module (looked up per call, so tests can stand one in)."""
    return getattr(importlib.import_module(library.module), name)


def unavailable(library: Library, device: torch.device) -> str | None:
    """Why ``library`` cannot run on ``device``, or None."""
    try:
        importlib.metadata.version(library.distribution)
    except importlib.metadata.PackageNotFoundError:
        how = library.install or f"pip install {library.distribution}"
        return f"{library.distribution} is not installed ({how}; a CUDA GPU)"
    if device.type != "cuda":
        return f"{library.summary.split(':')[0]} is a CUDA kernel, not for {device.type}"
    major, minor = torch.cuda.get_device_capability(device)
    if major not in library.arches:
        return f"{library.summary}: not built for SM{major}{minor}"
    try:
        kernel(library, "flash_attn_func")
    except Exception as exc:  # a broken install says why, in list, instead of crashing a run
        return f"{library.module} cannot be imported: {' '.join(str(exc).split())[:200]}"
    return None


def shape_support(library: Library) -> Callable[[int, int, str], str | None]:
    def support(dim_k: int, dim_v: int, dtype: str) -> str | None:
        if dtype not in ("fp16", "bf16"):
            return f"{library.impl}: FlashAttention takes fp16 and bf16 only, not {dtype}"
        if dim_k != dim_v:
            return f"{library.impl}: one head dim for q, k and v (Dk = Dv) here"
        if dim_k > library.max_dim or dim_k % 8:
            return f"{library.impl}: head dims up to {library.max_dim}, multiples of 8, not {dim_k}"
        return None

    return support


def _out(library: Library, result: Any) -> torch.Tensor:
    """The output of a call that returns it alone or first (with the log-sum-exp): FlashAttention
    3's releases have done both."""
    return result[0] if library.returns_lse or isinstance(result, tuple) else result


def attend(library: Library, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """Softmax attention by ``library`` on (B, S, H, D) views; the output back as (B, H, S, D)."""
    if q.dtype not in (torch.float16, torch.bfloat16):
        raise ImplUnavailableError(f"softmax:{library.impl}: FlashAttention takes fp16 and bf16 only, not {q.dtype}")
    note_backend(f"{library.distribution} flash_attn_func")
    views = (t.transpose(1, 2) for t in (q, k, v))
    return _out(library, kernel(library, "flash_attn_func")(*views, softmax_scale=None, causal=causal)).transpose(1, 2)


def attend_packed(
    library: Library, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, segments: Segments, causal: bool
) -> torch.Tensor:
    """The pack (1, H, T, D) as (T, H, D) with its boundaries: one varlen call."""
    if q.dtype not in (torch.float16, torch.bfloat16):
        raise ImplUnavailableError(f"softmax:{library.impl}: FlashAttention takes fp16 and bf16 only, not {q.dtype}")
    cu = segments.cu_seqlens(q.device, torch.int32)
    longest = segments.longest
    note_backend(f"{library.distribution} flash_attn_varlen_func")
    tokens = (x[0].transpose(0, 1) for x in (q, k, v))
    bounds = {"cu_seqlens_q": cu, "cu_seqlens_k": cu, "max_seqlen_q": longest, "max_seqlen_k": longest}
    out = _out(library, kernel(library, "flash_attn_varlen_func")(*tokens, **bounds, softmax_scale=None, causal=causal))
    return out.transpose(0, 1).unsqueeze(0)


def _availability(library: Library, device: torch.device) -> str | None:
    return unavailable(library, device)  # looked up per call: tests stand the library in


def flash_attn_impls() -> tuple[Impl, ...]:
    """``fa2``, ``fa3`` and ``fa4``: optional, left out with the reason where their library cannot run."""
    return tuple(
        Impl(
            library.impl,
            partial(attend, library),
            f"{library.summary}, fp16/bf16, GQA natively, packs by cu_seqlens; unverified on a GPU here",
            "O(s²d)",
            "O(sd)",
            time_exponent=2,
            availability=partial(_availability, library),
            shape_support=shape_support(library),
            optional=True,
            layout="bshd",
            library=library.distribution,
            packed=partial(attend_packed, library),
            gqa=True,
        )
        for library in LIBRARIES
    )
