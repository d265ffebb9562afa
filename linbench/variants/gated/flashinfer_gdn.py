"""FlashInfer's Gated DeltaNet prefill as gated-deltanet's ``flashinfer`` impl, and cuDNN's fused
linear-attention engine through it as ``cudnn`` (``pip install flashinfer-python``; cuDNN's also
``nvidia-cudnn-frontend``).

Mapped from flashinfer-python 0.7.2's documented API: ``flashinfer.chunk_gated_delta_rule(q, k, v,
g, beta, scale=None, initial_state=None, output_final_state=False, cu_seqlens=...,
use_qk_l2norm_in_kernel=False, ..., backend="auto")`` and
``flashinfer.cudnn.cudnn_chunk_gated_delta_rule`` ("argument meanings match"), both on packed
tokens: q, k, v (T, H, D) with ``cu_seqlens`` (required; a batch of B sequences of S tokens is B
sequences back to back), g and β (T, H) in fp32. Unlike fla, g is the forget gate in linear
space, alpha = e^g ("all ones when None"), so the impl hands it exp of linbench's log-gate.
Forward only (prefill: no backward), Dk = Dv; FlashInfer on SM90 or SM100 (SM100: head size
128), cuDNN's engine on SM100 with head size 128. Unverified on a GPU here; the tests bind each
call to the installed function's signature.
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
from linbench.variants.gated.library_calls import import_problem
from linbench.variants.gated.numerics import resolve_scale
from linbench.variants.varlen import Segments


@dataclass(frozen=True)
class Engine:
    """One way in: the impl's name, the function, the packages it needs and the GPUs it runs on."""

    impl: str
    module: str
    function: str
    distributions: tuple[str, ...]
    arches: tuple[int, ...]  # compute capability majors
    dims: tuple[int, ...] | None  # the head sizes it takes (None: any Dk = Dv)
    summary: str


FLASHINFER = Engine(
    "flashinfer",
    "flashinfer",
    "chunk_gated_delta_rule",
    ("flashinfer-python",),
    (9, 10),
    None,
    "FlashInfer's Gated DeltaNet prefill (chunk_gated_delta_rule; SM90, SM100 at head size 128)",
)
CUDNN = Engine(
    "cudnn",
    "flashinfer.cudnn",
    "cudnn_chunk_gated_delta_rule",
    ("flashinfer-python", "nvidia-cudnn-frontend"),
    (10,),
    (128,),
    "cuDNN's fused linear-attention engine through FlashInfer (cudnn_chunk_gated_delta_rule; SM100, D 128)",
)
ENGINES = (FLASHINFER, CUDNN)


def kernel(engine: Engine) -> Callable[..., Any]:
    """The engine's function (looked up per call, so tests can stand one in)."""
    return getattr(importlib.import_module(engine.module), engine.function)


def unavailable(engine: Engine, device: torch.device) -> str | None:
    """Why ``engine`` cannot run on ``device``, or None."""
    for distribution in engine.distributions:
        try:
            importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            return f"{distribution} is not installed (pip install {distribution}; a Hopper or Blackwell GPU)"
    if device.type != "cuda":
        return f"{engine.summary.split(' (')[0]} is a CUDA kernel, not for {device.type}"
    major, minor = torch.cuda.get_device_capability(device)
    if major not in engine.arches:
        return f"{engine.summary}: not for SM{major}{minor}"
    return import_problem(engine.module, lambda: kernel(engine))


def shape_support(engine: Engine) -> Callable[[int, int, str], str | None]:
    def support(dim_k: int, dim_v: int, dtype: str) -> str | None:
        if dtype not in ("fp16", "bf16"):
            return f"{engine.impl}: fp16 and bf16 only, not {dtype}"
        if dim_k != dim_v:
            return f"{engine.impl}: one head size for q, k and v (Dk = Dv)"
        if engine.dims is not None and dim_k not in engine.dims:
            return f"{engine.impl}: head size {engine.dims[0]} only, not {dim_k}"
        return None

    return support


def _run(
    engine: Engine, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor, **kw: Any
) -> torch.Tensor:
    """The engine on (1, H, T, D) packed tensors and (1, H, T) gates; the output as (1, H, T, Dv)."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v, g, beta)):
        raise ImplUnavailableError(f"gated-deltanet:{engine.impl}: a prefill kernel, forward only (no backward)")
    if q.dtype not in (torch.float16, torch.bfloat16):
        raise ImplUnavailableError(f"gated-deltanet:{engine.impl}: fp16 and bf16 only, not {q.dtype}")
    tokens = [x[0].transpose(0, 1) for x in (q, k, v)]  # (T, H, D) views
    alpha, b = (x[0].transpose(0, 1).float() for x in (g.exp(), beta))  # (T, H), linear-space gate
    note_backend(f"flashinfer {engine.function}")
    out = kernel(engine)(*tokens, g=alpha, beta=b, use_qk_l2norm_in_kernel=True, **kw)
    return out.transpose(0, 1).unsqueeze(0)


def gdn(
    engine: Engine,
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
    """A (B, H, S, D) batch as B sequences of S tokens back to back (views of the bshd drawing)."""
    _no_initial_state(engine, initial_state)
    if not causal:
        raise ImplUnavailableError(f"gated-deltanet:{engine.impl}: causal only")
    batch, heads, seq, _ = q.shape
    segments = Segments(tuple(range(0, batch * seq + 1, seq)))

    def packed(x: torch.Tensor) -> torch.Tensor:  # (B, H, S, ...) → (1, H, B·S, ...)
        return x.transpose(0, 1).reshape(heads, batch * seq, *x.shape[3:]).unsqueeze(0)

    out = gdn_packed(
        engine,
        *(packed(x) for x in (q, k, v)),
        segments=segments,
        causal=causal,
        g=packed(g),
        beta=packed(beta),
        scale=scale,
    )
    return out[0].reshape(heads, batch, seq, -1).transpose(0, 1)


def gdn_packed(
    engine: Engine,
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
    """A pack (1, H, T, D) in one call with its cu_seqlens."""
    _no_initial_state(engine, initial_state)
    if not causal:
        raise ImplUnavailableError(f"gated-deltanet:{engine.impl}: causal only")
    cu = segments.cu_seqlens(q.device, torch.int32)
    return _run(engine, q, k, v, g, beta, scale=resolve_scale(scale, q.shape[-1]), cu_seqlens=cu)


def _no_initial_state(engine: Engine, initial_state: Any) -> None:
    """FlashInfer's prefill takes an initial state, but its layout (k-last or v-last) could not be
    proven without a GPU: a state given is refused, never passed in a layout that may be wrong."""
    if initial_state is not None:
        raise ImplUnavailableError(
            f"gated-deltanet:{engine.impl}: an initial state is not passed to it (unproven here)"
        )


def _availability(engine: Engine, device: torch.device) -> str | None:
    return unavailable(engine, device)  # looked up per call: tests stand the library in


def flashinfer_impls() -> tuple[Impl, ...]:
    """gated-deltanet's ``flashinfer`` and ``cudnn`` impls (optional; forward only)."""
    return tuple(
        Impl(
            engine.impl,
            partial(gdn, engine),
            f"{engine.summary}; alpha = e^g; forward only; unverified on a GPU here",
            "O(sd²)",
            "O(sd)",
            time_exponent=1,
            availability=partial(_availability, engine),
            shape_support=shape_support(engine),
            optional=True,
            layout="bshd",
            library=engine.distributions[0],
            packed=partial(gdn_packed, engine),
        )
        for engine in ENGINES
    )
