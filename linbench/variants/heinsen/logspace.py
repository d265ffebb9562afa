"""Log-space arithmetic that stays finite where exp() of the inputs would overflow."""

from __future__ import annotations

import torch


def _finite_or_zero(x: torch.Tensor) -> torch.Tensor:
    return torch.where(torch.isfinite(x), x, torch.zeros_like(x))


def log_matmul_exp(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """log(exp(a) @ exp(b)) without overflow.

    Each row of ``a`` is shifted by its maximum and each column of ``b`` by its maximum,
    so the largest term of every inner sum is exp(0) times a factor no smaller than
    exp(−(range of the other operand)). With inputs in [−30, 30] the smallest such factor is
    exp(−60) ≈ 1e−26, far above fp32's smallest normal number, so no sum underflows to
    zero and no log returns −inf. Entries of −inf (masked) contribute zero.
    The shifts are detached: they cancel exactly, so they carry no gradient.
    """
    a_max = _finite_or_zero(a.detach().amax(-1, keepdim=True))
    b_max = _finite_or_zero(b.detach().amax(-2, keepdim=True))
    return torch.log(torch.exp(a - a_max) @ torch.exp(b - b_max)) + a_max + b_max
