"""cosine on the csrc kernel, its L2 normalisation of q and k fused into the kernel's loads.

Done in PyTorch, normalising q and k takes three passes over each (norms, division, and the
copy the division writes); at S = 16k those passes cost about as much as the kernel itself.
v's per-head scale 1 / s^σ(m) is fused too when m is a plain number: the kernel multiplies
its output (and, backward, the incoming gradient) by it, so v is never copied. A tensor m
(learnable, per head) keeps the scale in PyTorch, so that its gradient reaches ``norm_const``.
"""

from __future__ import annotations

from typing import Any

import torch

from linbench.kernels import ops as kernel_ops
from linbench.variants.cosine.features import value_scale
from linbench.variants.impl_helpers import compute_dtype, positive_int


def kernel(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, chunk_size: int, norm_const: Any, seq_len: Any
) -> torch.Tensor:
    size = positive_int("chunk_size", chunk_size)
    heads, seq = q.shape[1], q.shape[-2]
    if isinstance(norm_const, torch.Tensor):
        v_up = v.to(compute_dtype(v.dtype))
        scaled_v = (v_up * value_scale(norm_const, seq_len, heads, seq, v_up)).to(v.dtype)
        return kernel_ops.linear_attention(q, k, scaled_v, causal=causal, eps=None, chunk=size, feature_map="l2")
    scale = float(value_scale(norm_const, seq_len, heads, seq, v))
    return kernel_ops.linear_attention(q, k, v, causal=causal, eps=None, chunk=size, feature_map="l2", v_scale=scale)
