"""softmax's library impls, one ``Contract`` row each: FlashAttention 2, 3 and 4 and FlashInfer's
single prefill. Each takes (B, S, H, D) views (a pack: (T, H, D) tokens with cu_seqlens; FlashInfer's
single prefill: one sequence, batch 1), k and v with fewer heads natively (grouped-query), and
scales by Dk^-1/2 when given None."""

from __future__ import annotations

from functools import partial
from typing import Any

import torch

from linbench.variants.libraries.contract import Args, Contract


def _flash_attn(returns_lse: bool, fn: Any, a: Args) -> torch.Tensor:
    if a.cu_seqlens is None:
        out = fn(a.q, a.k, a.v, softmax_scale=None, causal=a.causal)
    else:  # a pack (1, T, H, D) as tokens (T, H, D)
        bounds = {"cu_seqlens_q": a.cu_seqlens, "cu_seqlens_k": a.cu_seqlens}
        lengths = {"max_seqlen_q": a.max_seqlen, "max_seqlen_k": a.max_seqlen}
        out = fn(a.q[0], a.k[0], a.v[0], **bounds, **lengths, softmax_scale=None, causal=a.causal)
    out = out[0] if returns_lse or isinstance(out, tuple) else out  # FA3's releases return out or (out, lse)
    return out if a.cu_seqlens is None else out.unsqueeze(0)


def _flashinfer_prefill(fn: Any, a: Args) -> torch.Tensor:
    """The one sequence (the row refuses a batch of more) as (S, H, D) NHD views; its output
    given back as a view, never copied."""
    return fn(a.q[0], a.k[0], a.v[0], causal=a.causal, kv_layout="NHD", sm_scale=None).unsqueeze(0)


_SOFTMAX = dict(
    layout="bshd", dtypes=("bf16", "fp16"), dims=(), max_dim=256, scale_default="Dk^-1/2 (softmax_scale None)"
)

FA2 = Contract(
    "softmax", "fa2", "flash-attn", "2.8",
    ("flash-attn 2.8 flash_attn/flash_attn_interface.py: flash_attn_func(q, k, v, dropout_p, softmax_scale, causal,"
     " ...) -> out; flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, ...)",),
    "flash_attn", "flash_attn_func", partial(_flash_attn, False),
    packed_entry="flash_attn_varlen_func", kernels={m: "flash_attn_func (FlashAttention 2)" for m in (8, 9, 10, 12)},
    backward=(8, 9, 10, 12), **_SOFTMAX,  # type: ignore[arg-type]
)  # fmt: skip
FA3 = Contract(
    "softmax", "fa3", "flash_attn_3", "0251105",
    ("flash-attention 0251105 hopper/flash_attn_interface.py: flash_attn_func(q, k, v, softmax_scale, causal, ...,"
     " return_attn_probs=False) returns out, or (out, softmax_lse) with return_attn_probs",),
    "flash_attn_interface", "flash_attn_func", partial(_flash_attn, False),
    install="build it from flash-attention's hopper/ folder on a Hopper machine: not on PyPI",
    packed_entry="flash_attn_varlen_func", kernels={9: "flash_attn_func (FlashAttention 3, Hopper)"},
    backward=(9,), **_SOFTMAX,  # type: ignore[arg-type]
)  # fmt: skip
FA4 = Contract(
    "softmax", "fa4", "flash-attn-4", "0251105",
    ("flash-attention 0251105 flash_attn/cute/interface.py: FlashAttnFunc.forward ends 'return out, lse'",),
    "flash_attn.cute", "flash_attn_func", partial(_flash_attn, True),
    packed_entry="flash_attn_varlen_func",
    kernels=dict.fromkeys((9, 10, 11), "flash_attn_func (FlashAttention 4, CuTe DSL)"),
    backward=(9, 10, 11), **_SOFTMAX,  # type: ignore[arg-type]
)  # fmt: skip
FLASHINFER_PREFILL = Contract(
    "softmax", "flashinfer", "flashinfer-python", "0.7.2.post1",
    ("flashinfer-python 0.7.2.post1 flashinfer/prefill.py:1235-1259: single_prefill_with_kv_cache(q, k, v, ...,"
     " causal, kv_layout='NHD', ..., sm_scale) -> out; q [S, H, D], k and v [S, Hkv, D]",),
    "flashinfer", "single_prefill_with_kv_cache", _flashinfer_prefill,
    kernels={m: "single_prefill_with_kv_cache (one sequence)" for m in (8, 9, 10, 12)},
    packs="none", layout="bshd", dtypes=("bf16", "fp16"), dims=(64, 128, 256),
    one_sequence=(
        "FlashInfer's single_prefill_with_kv_cache takes one sequence, and it runs a batch with its"
        " batched prefill (BatchPrefillWithRaggedKVCacheWrapper), which this impl does not wrap;"
        " calls in turn would time neither (batch 1 only)"
    ),
    scale_default="Dk^-1/2 (sm_scale None)",
)  # fmt: skip

ROWS = (FA2, FA3, FA4, FLASHINFER_PREFILL)
