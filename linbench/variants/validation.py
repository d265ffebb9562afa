"""Checks on attention inputs: nothing is silently broadcast or cast."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def _shapes(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> str:
    return f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """Raise ValueError unless q: (B, H, S, Dk), k: (B, H_kv, S, Dk) and v: (B, H_kv, S, Dv)
    agree, H_kv dividing H (grouped-query attention when smaller: linbench/variants/heads.py),
    or v: (B, H_v, S, Dv) with H_v a multiple of H = H_kv (more value heads, GVA; whether the
    variant takes them is ``Variant.value_heads``). The two groupings do not combine.

    Also rejects mixed dtypes, mixed devices, meta tensors, non-floating tensors and empty dimensions,
    since each of those would otherwise be cast or broadcast behind the caller's back.
    """
    import torch

    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not (q.ndim == k.ndim == v.ndim == 4):
        raise ValueError(f"q, k, v must be 4-D (B, H, S, D); got {_shapes(q, k, v)}")
    if not (q.shape[0] == k.shape[0] == v.shape[0] and q.shape[2] == k.shape[2] == v.shape[2]):
        raise ValueError(f"q, k, v must agree in batch and sequence (B, S); got {_shapes(q, k, v)}")
    if k.shape[1] < 1 or q.shape[1] % k.shape[1]:
        raise ValueError(f"k must have a number of heads H_kv dividing q's heads H; got {_shapes(q, k, v)}")
    if k.shape[1] != v.shape[1]:
        _check_value_heads(q, k, v)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same head dimension Dk; got {_shapes(q, k, v)}")
    if 0 in q.shape or 0 in v.shape:
        raise ValueError(f"every dimension must be at least 1; got {_shapes(q, k, v)}")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k, v must share one dtype; got {q.dtype}, {k.dtype}, {v.dtype}")
    if not q.dtype.is_floating_point:
        raise ValueError(f"q, k, v must be floating point; got {q.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k, v must be on one device; got {q.device}, {k.device}, {v.device}")
    if q.device.type == "meta":  # a meta tensor has shapes but no values: no impl can compute on it
        raise ValueError("q, k, v are meta tensors (shapes without data); give them on a device that holds data")


def _check_value_heads(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """v with more heads than k: GVA, which needs as many k heads as q heads."""
    if v.shape[1] % k.shape[1]:
        raise ValueError(
            f"v must have as many heads as k, or a multiple of them (more value heads); got {_shapes(q, k, v)}"
        )
    if q.shape[1] != k.shape[1]:
        raise ValueError(
            "more value heads than q/k heads (GVA) and fewer k heads than q heads (GQA) do not combine; "
            f"got {_shapes(q, k, v)}"
        )
