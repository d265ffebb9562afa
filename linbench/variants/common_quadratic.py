"""Applying an explicit S x S score matrix, the way the quadratic references do."""

from __future__ import annotations

import torch


def apply_scores(scores: torch.Tensor, v: torch.Tensor, *, causal: bool, eps: float | None) -> torch.Tensor:
    """(scores ⊙ M) v, divided row-wise by sum_j (scores ⊙ M)_ij + eps when eps is given."""
    if causal:
        scores = scores.tril()
    out = scores @ v
    if eps is None:
        return out
    return out / (scores.sum(-1, keepdim=True) + eps)
