"""The chunkwise-parallel form: masked matmuls inside a chunk, a Dk x Dv state across chunks.

Memory beyond the inputs and output is one state, one key sum and one chunk's C x C
scores, so the forward pass is O(S·D) with no S x S and no S x Dk x Dv tensor. Under
autograd each chunk's state is saved for the backward: (S/C)·Dk·Dv, still linear in S.
"""

from __future__ import annotations

import torch


def _bidirectional(fq: torch.Tensor, fk: torch.Tensor, fv: torch.Tensor, eps: float | None) -> torch.Tensor:
    """fq (fk^T fv): the whole sequence's state read by every query (Cottention eq. 5)."""
    num = fq @ (fk.transpose(-1, -2) @ fv)
    if eps is None:
        return num
    den = fq @ fk.sum(-2).unsqueeze(-1)
    return num / (den + eps)


def chunked_linear_attention(
    fq: torch.Tensor,
    fk: torch.Tensor,
    fv: torch.Tensor,
    *,
    causal: bool,
    eps: float | None,
    chunk_size: int,
) -> torch.Tensor:
    """sum_{j<=i} (fq_i . fk_j) fv_j chunk by chunk; normalised when eps is given."""
    if not causal:
        return _bidirectional(fq, fk, fv, eps)
    batch, heads, seq, dim_k = fq.shape
    dim_v = fv.shape[-1]
    state = fq.new_zeros(batch, heads, dim_k, dim_v)
    key_sum = fq.new_zeros(batch, heads, dim_k, 1) if eps is not None else None
    out = fv.new_empty(batch, heads, seq, dim_v)
    for start in range(0, seq, chunk_size):
        stop = min(start + chunk_size, seq)
        q_c, k_c, v_c = fq[..., start:stop, :], fk[..., start:stop, :], fv[..., start:stop, :]
        scores = (q_c @ k_c.transpose(-1, -2)).tril()  # within the chunk: j <= i
        num = scores @ v_c + q_c @ state  # this chunk's keys, then every earlier chunk's
        if key_sum is not None:
            den = scores.sum(-1, keepdim=True) + q_c @ key_sum
            num = num / (den + eps)
            key_sum = key_sum + k_c.sum(-2).unsqueeze(-1)
        out[..., start:stop, :] = num
        state = state + k_c.transpose(-1, -2) @ v_c
    return out
