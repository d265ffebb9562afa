"""Katharopoulos et al. (2020) linear attention: φ(x) = elu(x) + 1 with a row normaliser."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from linbench.variants.feature_forms.impls import Features
from linbench.variants.impl_helpers import apply_scores, positive_number, upcast


def elu_plus_one(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = elu(x) + 1: positive, so the normaliser never crosses zero."""
    return F.elu(x) + 1.0


def linear_features(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, offset: int, eps: Any) -> Features:
    del offset  # no positional term
    q, k, v = upcast(q, k, v)
    return Features(elu_plus_one(q), elu_plus_one(k), v, eps=positive_number("eps", eps))


def quadratic(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, eps: Any) -> torch.Tensor:
    """The reference: (φ(Q) φ(K)^T ⊙ M) V / ((φ(Q) φ(K)^T ⊙ M) 1 + eps)."""
    q, k, v = upcast(q, k, v)
    scores = elu_plus_one(q) @ elu_plus_one(k).transpose(-1, -2)
    return apply_scores(scores, v, causal=causal, eps=positive_number("eps", eps))
