"""cosine:fla: cosine attention on fla-core's chunk kernel (linbench/variants/feature_forms/fla.py
loads fla and maps its layout): q and k L2-normalised in PyTorch, ``normalize=False``, the value
scale s^-σ(m) as fla's ``scale`` for a number m, or onto v for a per-head tensor m."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from linbench.variants.cosine.features import value_scale
from linbench.variants.feature_forms.fla import causal_only, run_fla

COSINE_SUMMARY = (
    "fla-core's Triton chunk kernel (chunk_linear_attn, normalize=False) on F.normalize'd q, k; "
    "s^-σ(m) as fla's scale (on v for a per-head m); fla's (B, S, H, D) layout made untimed"
)


def cosine_fla(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    norm_const: Any,
    seq_len: Any,
    segments: Any = None,
) -> torch.Tensor:
    """Cosine attention on fla: N(q)·N(k)ᵀ applied to v, times s^-σ(m) (a pack's: ``segments``)."""
    causal_only("cosine:fla", causal)
    scale = value_scale(norm_const, seq_len, q.shape[1], q.shape[-2], v)
    nq, nk = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    if isinstance(scale, torch.Tensor):  # a per-head m: scale v, so the gradient reaches m
        return run_fla(nq, nk, (v * scale).to(v.dtype), scale=1.0, normalize=False, segments=segments)
    return run_fla(nq, nk, v, scale=scale, normalize=False, segments=segments)
