"""Turn a variant's feature map into its naive, chunked and recurrent impls."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from linbench.kernels import ops as kernel_ops
from linbench.variants.declarations import Decoder, Impl, ImplFn, Param, PrefillFn, StreamFn
from linbench.variants.feature_forms.chunked import chunked_linear_attention, chunked_scan
from linbench.variants.feature_forms.naive import naive_linear_attention
from linbench.variants.feature_forms.packed import masked_form, packed_chunked, packed_recurrent
from linbench.variants.feature_forms.recurrent import LinearState, recurrent_bidirectional, recurrent_scan
from linbench.variants.impl_helpers import positive_int, positive_int_problem

CHUNK_SIZE = Param(
    "chunk_size", 128, "tokens per chunk: the C x C masked product inside a chunk", check=positive_int_problem
)
# The chunk sizes csrc/ takes (csrc/op_checks.cpp, csrc/linear_attention_launch.h): any of
# 1..1024 on the CPU, 64 alone on CUDA (its tiles are laid out for it).
KERNEL_MAX_CHUNK = 1024
KERNEL_CUDA_CHUNK = 64


def kernel_chunk_refusal(size: Any, device_type: str) -> str | None:
    """Why the csrc kernel cannot run chunks of ``size`` tokens on ``device_type``, or None."""
    if device_type == "cuda" and size != KERNEL_CUDA_CHUNK:
        return f"the CUDA kernel runs chunks of {KERNEL_CUDA_CHUNK} tokens only; chunk sizes it takes: 64"
    if not 1 <= size <= KERNEL_MAX_CHUNK:
        return f"the kernel takes chunks of 1..{KERNEL_MAX_CHUNK} tokens"
    return None


# The widest q/k features and v the CUDA kernel's tiles hold (csrc/linear_attention_launch.h:
# kMaxDimK, kMaxDimV); the CPU kernel takes any.
KERNEL_CUDA_MAX_FEATURES = 512
KERNEL_CUDA_MAX_DIM_V = 256


def kernel_dims_refusal(feature_width: int) -> Callable[[int, int, str], str | None]:
    """Why the kernel of features ``feature_width``·Dk wide cannot take (Dk, Dv) on a device type."""

    def refusal(dim_k: int, dim_v: int, device_type: str) -> str | None:
        if device_type != "cuda":
            return None
        if dim_k * feature_width <= KERNEL_CUDA_MAX_FEATURES and dim_v <= KERNEL_CUDA_MAX_DIM_V:
            return None
        widest = KERNEL_CUDA_MAX_FEATURES // feature_width
        return f"the CUDA kernel takes Dk up to {widest} and Dv up to {KERNEL_CUDA_MAX_DIM_V} (the CPU kernel any)"

    return refusal


KERNEL_CHUNK_SIZE = Param(
    "chunk_size",
    64,
    "tokens per chunk of the csrc kernel (the CUDA kernel takes 64 only)",
    check=positive_int_problem,
    device_check=kernel_chunk_refusal,
)
# The sources of the compiled library the kernel impls load (linbench/kernels/build.py builds it).
COMPILED_SOURCES = "csrc/"
KERNEL_SUMMARY = "csrc/ chunked kernel (C++ on CPU, CUDA on GPU): fp32 state, recomputing backward"


@dataclass(frozen=True)
class Features:
    """The variant's maths reduced to sum_j (q_i . k_j) v_j [/ (sum_j q_i . k_j + eps)]."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    eps: float | None  # None: no row normaliser
    # A factor on the outputs, per query head (1, H, 1, 1), where it cannot go on v: cosine's
    # per-head 1 / s^σ(m) when v has fewer heads than q (grouped-query attention).
    out_scale: torch.Tensor | None = None

    def finish(self, out: torch.Tensor) -> torch.Tensor:
        """The form's outputs with ``out_scale`` applied."""
        return out if self.out_scale is None else out * self.out_scale


# Maps inputs to features: called as ``features(q, k, v, offset=..., **params)``, where ``offset``
# is the position of the first token (for streaming) and the params are the variant's own
# keyword arguments (cosine's norm_const and seq_len, cosFormer's M and eps). A Protocol with
# ``**params: Any`` would reject every real feature map, whose params are named, so the type
# says only what every one returns.
FeatureMap = Callable[..., Features]


def _naive(features: FeatureMap) -> ImplFn:
    def naive(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, **params: Any) -> torch.Tensor:
        f = features(q, k, v, offset=0, **params)
        return f.finish(naive_linear_attention(f.q, f.k, f.v, causal=causal, eps=f.eps))

    return naive


def _chunked(features: FeatureMap) -> ImplFn:
    def chunked(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, chunk_size: int, **params: Any
    ) -> torch.Tensor:
        size = positive_int("chunk_size", chunk_size)
        f = features(q, k, v, offset=0, **params)
        return f.finish(chunked_linear_attention(f.q, f.k, f.v, causal=causal, eps=f.eps, chunk_size=size))

    return chunked


def _recurrent(features: FeatureMap) -> ImplFn:
    def recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, **params: Any) -> torch.Tensor:
        f = features(q, k, v, offset=0, **params)
        if causal:
            return f.finish(recurrent_scan(f.q, f.k, f.v, eps=f.eps)[0])
        return f.finish(recurrent_bidirectional(f.q, f.k, f.v, eps=f.eps))

    return recurrent


def _kernel(features: FeatureMap) -> ImplFn:
    def kernel(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, chunk_size: int, **params: Any
    ) -> torch.Tensor:
        size = positive_int("chunk_size", chunk_size)
        f = features(q, k, v, offset=0, **params)
        # The feature maps compute in fp32; the kernel takes them back in the input's dtype
        # (it loads bf16/fp16 and accumulates in fp32 itself), so it moves half the bytes.
        fq, fk, fv = (t.to(q.dtype) for t in (f.q, f.k, f.v))
        return kernel_ops.linear_attention(fq, fk, fv, causal=causal, eps=f.eps, chunk=size)

    return kernel


def kernel_impl(fn: ImplFn, summary: str = KERNEL_SUMMARY, feature_width: int = 1) -> Impl:
    """The ``kernel`` impl: ``fn`` runs the csrc op, which is built on first use, on features
    ``feature_width``·Dk wide (cosformer's cos and sin halves: 2)."""
    return Impl(
        "kernel",
        fn,
        summary,
        "O(sd²)",
        "O(sd)",
        time_exponent=1,
        params=(KERNEL_CHUNK_SIZE,),
        availability=kernel_ops.unavailable_reason,
        device_shape_support=kernel_dims_refusal(feature_width),
        sources=(COMPILED_SOURCES,),
        backend="linbench csrc",
    )


def feature_map_impls(
    features: FeatureMap, summaries: Mapping[str, str], kernel: ImplFn | None = None, feature_width: int = 1
) -> tuple[Impl, ...]:
    """The impls named in ``summaries`` (naive, chunked, recurrent, kernel), computing ``features``.

    ``kernel`` replaces the generic kernel impl (features in PyTorch, then the op) by one that
    hands the op its own feature map to fuse.
    """
    makers = {
        "naive": lambda: Impl(
            "naive",
            _naive(features),
            summaries.get("naive", ""),
            "O(sd²)",
            "O(sd²)",
            time_exponent=1,
            key_masked=masked_form(features, "naive"),
            gqa=True,
        ),
        "chunked": lambda: Impl(
            "chunked",
            _chunked(features),
            summaries.get("chunked", ""),
            "O(sd²)",
            "O(sd)",
            time_exponent=1,
            params=(CHUNK_SIZE,),
            packed=packed_chunked(features),
            key_masked=masked_form(features, "chunked"),
            gqa=True,
        ),
        "recurrent": lambda: Impl(
            "recurrent",
            _recurrent(features),
            summaries.get("recurrent", ""),
            "O(sd²)",
            "O(d²)",
            time_exponent=1,
            packed=packed_recurrent(features),
            key_masked=masked_form(features, "recurrent"),
            gqa=True,
        ),
        "kernel": lambda: kernel_impl(
            kernel or _kernel(features), summaries.get("kernel") or KERNEL_SUMMARY, feature_width
        ),
    }
    unknown = set(summaries) - set(makers)
    if unknown:
        raise ValueError(f"unknown linear forms {sorted(unknown)}; forms: {', '.join(makers)}")
    return tuple(makers[name]() for name in summaries)


def feature_map_stream(features: FeatureMap) -> StreamFn:
    """Causal recurrent attention that continues from a carried state (decoding, streaming)."""

    def stream(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, state: LinearState | None = None, **params: Any
    ) -> tuple[torch.Tensor, LinearState]:
        f = features(q, k, v, offset=state.position if state is not None else 0, **params)
        out, new_state = recurrent_scan(f.q, f.k, f.v, eps=f.eps, state=state)
        return f.finish(out), new_state

    return stream


def feature_map_prefill(features: FeatureMap) -> PrefillFn:
    """A prompt absorbed by the chunked form (the fast parallel one), continuing from ``state``."""

    def prefill(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, state: LinearState | None, capacity: int, **params: Any
    ) -> LinearState:
        del capacity  # the state is Dk x Dv however many tokens it will absorb
        f = features(q, k, v, offset=state.position if state is not None else 0, **params)
        return chunked_scan(f.q, f.k, f.v, eps=f.eps, chunk_size=CHUNK_SIZE.default, state=state)[1]

    return prefill


def feature_map_decoder(features: FeatureMap) -> Decoder:
    """Decoding as an RNN (Cottention §5.1): chunked prefill, then one recurrent step per token."""
    return Decoder(
        "recurrent",
        "chunked prefill into a Dk×Dv state, then H_t = H_{t−1} + k_t v_tᵀ per token",
        feature_map_prefill(features),
        feature_map_stream(features),
        state_memory="O(d²)",
        step_time="O(d²)",
        state_exponent=0,
        step_exponent=0,
        gqa=True,
    )
