"""cosFormer (Qin et al., 2022): ReLU features re-weighted by cos(π/2 · (i − j) / M)."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from linbench.variants.feature_forms.impls import Features
from linbench.variants.impl_helpers import apply_scores, positive_number, upcast


def resolve_m(M: Any, seq: int) -> float:
    """The re-weighting scale: M when given (it must be positive), else the sequence length."""
    return positive_number("M", seq if M is None else M)


def _angles(offset: int, length: int, big_m: float, like: torch.Tensor) -> torch.Tensor:
    """π/2 · i / M for positions i = offset .. offset + length − 1, shape (length, 1)."""
    positions = torch.arange(offset, offset + length, device=like.device, dtype=like.dtype)
    return (positions * (math.pi / (2.0 * big_m))).unsqueeze(-1)


def cosformer_features(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, offset: int, M: Any, eps: Any) -> Features:
    """Ptolemy's decomposition: cos(a − b) = cos a cos b + sin a sin b, so the re-weighted
    score is one dot product of width 2·Dk between [φq cos, φq sin] and [φk cos, φk sin]."""
    q, k, v = upcast(q, k, v)
    big_m = resolve_m(M, q.shape[-2])
    angles = _angles(offset, q.shape[-2], big_m, q)
    cos, sin = torch.cos(angles), torch.sin(angles)
    fq, fk = F.relu(q), F.relu(k)
    return Features(
        torch.cat((fq * cos, fq * sin), dim=-1),
        torch.cat((fk * cos, fk * sin), dim=-1),
        v,
        eps=positive_number("eps", eps),
    )


def quadratic(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, M: Any, eps: Any) -> torch.Tensor:
    """The reference, straight from the definition: w_ij = cos(π/2 · (i − j) / M) times
    φ(q_i)·φ(k_j), applied to V and divided by its row sums plus eps."""
    q, k, v = upcast(q, k, v)
    seq = q.shape[-2]
    big_m = resolve_m(M, seq)
    positions = torch.arange(seq, device=q.device, dtype=q.dtype)
    weights = torch.cos((positions.unsqueeze(-1) - positions) * (math.pi / (2.0 * big_m)))
    scores = (F.relu(q) @ F.relu(k).transpose(-1, -2)) * weights
    return apply_scores(scores, v, causal=causal, eps=positive_number("eps", eps))
