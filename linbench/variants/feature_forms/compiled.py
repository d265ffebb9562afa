"""The ``compiled`` impl: a variant's feature map and the chunked form under torch.compile.

Mode: torch.compile's default mode (Inductor, no CUDA graphs, no autotuning), with dynamic
shapes. The gain torch.compile can bring to the chunked form is fusion of the glue around
its matmuls (feature maps, masks, the normaliser, the state sums); the default mode does
that. ``reduce-overhead`` adds CUDA graphs, which do nothing on CPU and on a GPU would time
replays out of a static memory pool whose peak is not the call's; ``max-autotune`` tries
matmul templates cuBLAS and oneDNN already cover, for many times the compile time.

Compiling happens outside the timed calls: the runner's warm-up call compiles, and the graph
is shape-generic, so the point's own length reuses it. For that, the inputs are padded to
whole chunks, and to at least ``MIN_CHUNKS`` of them, before the compiled function sees
them (a length of 1 or 2 chunks would be specialised and compiled again at the real length),
and the parameters derived from the length are resolved from the unpadded length first.
The seconds spent compiling in this process are read by ``linbench.measure.compile_time``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.nn.functional as F

from linbench.variants.declarations import TORCH_COMPILE, Impl, ImplFn
from linbench.variants.feature_forms.impls import CHUNK_SIZE, FeatureMap
from linbench.variants.feature_forms.parallel_chunks import parallel_chunked_attention
from linbench.variants.impl_helpers import positive_int

MODE = "default"
MIN_CHUNKS = 3
SUMMARY = "the chunked form (all chunks at once) and the feature map under torch.compile (Inductor, default mode)"


def compile_unavailable(device: torch.device) -> str | None:
    """Why torch.compile cannot run here: Inductor needs a C++ compiler on CPU, Triton on CUDA."""
    try:
        if device.type == "cpu":
            from torch._inductor.cpp_builder import get_cpp_compiler

            get_cpp_compiler()
        elif device.type == "cuda":
            from torch.utils._triton import has_triton

            if not has_triton():
                return "torch.compile on CUDA needs Triton, which is not installed"
        else:
            return f"torch.compile is not measured on {device.type}"
    except Exception as exc:  # a missing compiler or a broken Inductor import: say which
        return f"torch.compile cannot build kernels here: {' '.join(str(exc).split())[:200]}"
    return None


def _pad_to_chunks(x: torch.Tensor, size: int) -> torch.Tensor:
    """``x`` zero-padded at the end to whole chunks, MIN_CHUNKS of them at least. The padded
    positions come after every real one, so in causal attention they change nothing real."""
    seq = x.shape[-2]
    padded = max(-(-seq // size), MIN_CHUNKS) * size
    return x if padded == seq else F.pad(x, (0, 0, 0, padded - seq))


def _body(features: FeatureMap) -> Callable[..., torch.Tensor]:
    def body(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, chunk_size: int, params: dict[str, Any]
    ) -> torch.Tensor:
        f = features(q, k, v, offset=0, **params)
        return f.finish(parallel_chunked_attention(f.q, f.k, f.v, causal=causal, eps=f.eps, chunk_size=chunk_size))

    return body


def _compiled(features: FeatureMap, length_params: Iterable[str]) -> ImplFn:
    from_length = tuple(length_params)
    compiled = None

    def run(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, chunk_size: int, **params: Any
    ) -> torch.Tensor:
        nonlocal compiled
        if compiled is None:  # torch.compile is imported on first use, not with the variant
            compiled = torch.compile(_body(features), dynamic=True, mode=MODE)
        size = positive_int("chunk_size", chunk_size)
        seq = q.shape[-2]
        # Lengths the maths reads (cosine's s, cosformer's M) are the real one, not the padded one.
        # As floats: dynamo would compile again for every new int.
        bound = {name: float(seq) if name in from_length and value is None else value for name, value in params.items()}
        if not causal:  # one state for the whole sequence: nothing to pad
            return compiled(q, k, v, False, size, bound)
        padded = (_pad_to_chunks(t, size) for t in (q, k, v))
        return compiled(*padded, True, size, bound)[..., :seq, :]

    return run


def compiled_impl(features: FeatureMap, length_params: Iterable[str] = (), summary: str = SUMMARY) -> Impl:
    """The ``compiled`` impl of a feature-map variant; ``length_params`` are its parameters
    whose default is the sequence length."""
    return Impl(
        "compiled",
        _compiled(features, length_params),
        summary,
        "O(sd²)",
        "O(sd)",
        time_exponent=1,
        params=(CHUNK_SIZE,),
        availability=functools.lru_cache(maxsize=None)(compile_unavailable),
        by_name=True,
        backend=TORCH_COMPILE,
    )
