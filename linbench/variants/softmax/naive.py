"""Softmax attention with the S x S scores in memory: the O(s²) baseline of every paper."""

from __future__ import annotations

import math

import torch

from linbench.variants.heads import per_kv_head
from linbench.variants.impl_helpers import causal_mask


@per_kv_head
def naive(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """softmax(Q K^T / sqrt(Dk) + mask) V; the softmax runs in fp32 for fp16/bf16 inputs."""
    scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        seq = q.shape[-2]
        scores = scores.masked_fill(~causal_mask(seq, seq, q.device), float("-inf"))
    weights = torch.softmax(scores, dim=-1, dtype=torch.promote_types(q.dtype, torch.float32))
    return weights.to(v.dtype) @ v


def naive_masked(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, key_mask: torch.Tensor, causal: bool
) -> torch.Tensor:
    """``naive`` on a padded batch: the pads' keys (``key_mask`` False) get no weight."""
    scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    keep = key_mask[:, None, None, :]
    if causal:
        seq = q.shape[-2]
        keep = keep & causal_mask(seq, seq, q.device)
    scores = scores.masked_fill(~keep, float("-inf"))
    weights = torch.softmax(scores, dim=-1, dtype=torch.promote_types(q.dtype, torch.float32))
    return weights.to(v.dtype) @ v
