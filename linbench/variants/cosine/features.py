"""Cosine attention's maths (Cottention eq. 4): N(Q) N(K)^T V / s^sigmoid(m)."""

from __future__ import annotations

import math
import numbers
from typing import Any

import torch
import torch.nn.functional as F

from linbench.variants.feature_forms.impls import Features
from linbench.variants.impl_helpers import positive_number, upcast


def norm_const_tensor(norm_const: torch.Tensor, heads: int, like: torch.Tensor) -> torch.Tensor:
    """A learnable m as a (1, H, 1, 1) or (1, 1, 1, 1) tensor that keeps its autograd graph."""
    if norm_const.ndim == 0:
        m = norm_const.reshape(1, 1, 1, 1)
    elif tuple(norm_const.shape) == (heads,):
        m = norm_const.reshape(1, heads, 1, 1)
    else:
        raise ValueError(
            f"norm_const must be a number or a tensor of shape (H,) = ({heads},); got shape {tuple(norm_const.shape)}"
        )
    return m.to(device=like.device, dtype=like.dtype)


def value_scale(
    norm_const: Any, seq_len: Any, heads: int, default_len: int, like: torch.Tensor
) -> torch.Tensor | float:
    """1 / s^sigmoid(m), per head, with s = seq_len (the sequence length by default).

    A plain number m gives a plain float: making a one-element GPU tensor of it would copy
    from the host and wait for the device on every call (0.5 ms at 1k tokens on an H100,
    more than the attention), and could not be captured in a CUDA graph.
    """
    s = positive_number("seq_len", default_len if seq_len is None else seq_len)
    if isinstance(norm_const, torch.Tensor):
        # s as a 0-d tensor: the gradient of s^x needs log s, which torch.compile cannot take of
        # the symbolic float a length becomes under dynamic shapes, but can of a tensor.
        base = like.new_full((), s)
        return torch.pow(base, -torch.sigmoid(norm_const_tensor(norm_const, heads, like)))
    if isinstance(norm_const, bool) or not isinstance(norm_const, numbers.Real):
        raise ValueError(f"norm_const must be a number or a tensor of shape (H,); got {norm_const!r}")
    return float(s) ** -(1.0 / (1.0 + math.exp(-float(norm_const))))


def cosine_features(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, offset: int, norm_const: Any, seq_len: Any
) -> Features:
    """N(q), N(k) and v / s^sigmoid(m): cosine attention as an unnormalised linear attention.
    A per-head m with fewer key/value heads than query heads scales the outputs instead of v
    (the same product: the scale is constant along the sequence)."""
    del offset  # cosine attention has no positional term
    q, k, v = upcast(q, k, v)
    scale = value_scale(norm_const, seq_len, q.shape[1], q.shape[-2], v)
    nq, nk = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    if isinstance(scale, torch.Tensor) and v.shape[1] != q.shape[1]:
        return Features(nq, nk, v, eps=None, out_scale=scale)
    return Features(nq, nk, v * scale, eps=None)
