"""Inputs and a dense reference for the kernel tests (CPU and CUDA)."""

from __future__ import annotations

import torch


def dense_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool,
    eps: float | None,
    decay: torch.Tensor | None = None,
    chunk: int = 64,
) -> torch.Tensor:
    """(QKᵀ ⊙ M)V [/ row sums + eps], with the decay as factors between the chunks of i and j."""
    scores = q @ k.transpose(-1, -2)
    if causal:
        scores = scores.tril()
    if decay is not None:
        chunk_of = torch.arange(q.shape[-2], device=q.device) // chunk
        log_decay = torch.log(decay).cumsum(-2)[..., chunk_of, :]  # (B, H, S, Dv)
        factors = torch.exp(log_decay.unsqueeze(-2) - log_decay.unsqueeze(-3))  # (B, H, i, j, Dv)
        return torch.einsum("bhij,bhje,bhije->bhie", scores, v, factors)
    num = scores @ v
    return num if eps is None else num / (scores.sum(-1, keepdim=True) + eps)


def random_inputs(
    seq: int,
    dim_k: int,
    dim_v: int,
    dtype: torch.dtype = torch.float64,
    batch: int = 2,
    heads: int = 2,
    device: str = "cpu",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seq * 1000 + dim_k + dim_v)
    # Positive features, as every mapped variant hands the kernel (the normaliser stays away from 0).
    return tuple(
        torch.rand(batch, heads, seq, d, generator=gen, dtype=dtype).to(device).requires_grad_()
        for d in (dim_k, dim_k, dim_v)
    )


def assert_close_at_case_scale(
    actual: torch.Tensor, expected: torch.Tensor, tol: float, case_scale: float, name: str = ""
) -> None:
    """|actual − expected| ≤ tol · (max(max|expected|, case_scale / 100) + |expected|), elementwise.

    ``case_scale`` is the largest magnitude among the case's reference tensors (output and
    gradients). A tensor far smaller than that is computed from quantities of the case's
    size and is exact only to within their rounding: at S = 1 a normalised attention
    returns v whatever q and k are, so the gradients of q and k are zero up to eps (about
    1e-7 here) and come out of fp32 arithmetic as differences of O(1) terms. Judging them
    relative to themselves would demand a relative accuracy fp32 cannot have; their floor is
    one hundredth of the case's scale (as linbench.check.correctness.compare does for check).
    """
    scale = max(expected.abs().max().item(), case_scale / 100)
    torch.testing.assert_close(
        actual.double().cpu(), expected.double().cpu(), rtol=tol, atol=tol * scale, msg=lambda m: f"{name}: {m}"
    )
