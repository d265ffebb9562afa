"""(I + A)⁻¹ for a batch of strictly lower-triangular A, by blocks: the UT transform's T.

torch's batched triangular solve runs one small solve per matrix and is slow on the CPU
(about 2 GFLOP/s for 64×64 systems, a tenth of a batched matmul). Like the delta-rule
kernels, this inverts the 16×16 diagonal blocks by solves and joins them by matmuls,
halving recursively: for L = [[L₁₁, 0], [L₂₁, L₂₂]], L⁻¹ = [[L₁₁⁻¹, 0], [−L₂₂⁻¹ L₂₁ L₁₁⁻¹, L₂₂⁻¹]].
Everything is differentiable by autograd.
"""

from __future__ import annotations

import torch

BASE = 16  # blocks this small are inverted by one batched triangular solve


def unit_lower_inverse(strict: torch.Tensor) -> torch.Tensor:
    """(I + A)⁻¹ for A the strictly lower part of ``strict`` (..., n, n); the diagonal and
    the upper part of ``strict`` are never read."""
    size = strict.shape[-1]
    if size <= BASE:
        eye = torch.eye(size, dtype=strict.dtype, device=strict.device).expand_as(strict)
        return torch.linalg.solve_triangular(strict, eye, upper=False, unitriangular=True)
    half = size // 2
    top = unit_lower_inverse(strict[..., :half, :half])
    bottom = unit_lower_inverse(strict[..., half:, half:])
    corner = -(bottom @ (strict[..., half:, :half] @ top))
    upper = torch.cat((top, top.new_zeros(*top.shape[:-1], size - half)), dim=-1)
    return torch.cat((upper, torch.cat((corner, bottom), dim=-1)), dim=-2)
