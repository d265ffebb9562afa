"""The reference: cosine attention exactly as eq. 4 writes it, with the S x S matrix."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from linbench.variants.cosine.features import value_scale
from linbench.variants.impl_helpers import upcast


def quadratic(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, norm_const: Any, seq_len: Any
) -> torch.Tensor:
    """(N(Q) N(K)^T ⊙ M) V / s^sigmoid(m)."""
    q, k, v = upcast(q, k, v)
    similarity = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-1, -2)
    if causal:
        similarity = similarity.tril()
    return (similarity @ v) * value_scale(norm_const, seq_len, q.shape[1], q.shape[-2], v)
