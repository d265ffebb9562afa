"""The chunkwise-parallel form: masked matmuls inside a chunk, a Dk x Dv state across chunks.

Memory beyond the inputs and output is one state, one key sum and one chunk's C x C
scores, so the forward pass is O(S·D) with no S x S and no S x Dk x Dv tensor. Under
autograd each chunk's state is saved for the backward: (S/C)·Dk·Dv, still linear in S.
With fewer key/value heads than query heads (``per_kv_head``) the state is one per key/value
head, read by the query heads of its group.
The causal scan can start from a carried state and returns the state after its last
token, which is how a decoder absorbs a prompt before generating token by token.
"""

from __future__ import annotations

import torch

from linbench.variants.feature_forms.recurrent import LinearState
from linbench.variants.heads import per_kv_head


def _bidirectional(fq: torch.Tensor, fk: torch.Tensor, fv: torch.Tensor, eps: float | None) -> torch.Tensor:
    """fq (fk^T fv): the whole sequence's state read by every query (Cottention eq. 5)."""
    num = fq @ (fk.transpose(-1, -2) @ fv)
    if eps is None:
        return num
    den = fq @ fk.sum(-2).unsqueeze(-1)
    return num / (den + eps)


@per_kv_head
def chunked_scan(
    fq: torch.Tensor,
    fk: torch.Tensor,
    fv: torch.Tensor,
    *,
    eps: float | None,
    chunk_size: int,
    state: LinearState | None = None,
) -> tuple[torch.Tensor, LinearState]:
    """Causal sum_{j<=i} (fq_i . fk_j) fv_j chunk by chunk, continuing from ``state``; the
    outputs and the state after the last token. Normalised when eps is given."""
    if state is None:
        state = LinearState.empty(fk, fv, normalised=eps is not None)
    elif (state.key_sum is None) != (eps is None):
        raise ValueError("a carried state has a key sum exactly when the scan is normalised (eps given)")
    kv = state.kv
    # The key sum as a column, so that q_c @ key_sum is one matmul per chunk.
    key_sum = state.key_sum.unsqueeze(-1) if state.key_sum is not None else None
    seq = fq.shape[-2]
    # Chunks by split and outputs joined by cat, never sliced or written in place: under
    # autograd each slice costs a full-size gradient, which made the backward quadratic in S.
    outs = []
    for q_c, k_c, v_c in zip(*(x.split(chunk_size, dim=-2) for x in (fq, fk, fv)), strict=True):
        scores = (q_c @ k_c.transpose(-1, -2)).tril()  # within the chunk: j <= i
        num = scores @ v_c + q_c @ kv  # this chunk's keys, then every earlier token's
        if key_sum is not None and eps is not None:  # both or neither (checked above)
            den = scores.sum(-1, keepdim=True) + q_c @ key_sum
            num = num / (den + eps)
            key_sum = key_sum + k_c.sum(-2).unsqueeze(-1)
        outs.append(num)
        kv = kv + k_c.transpose(-1, -2) @ v_c
    new_key_sum = key_sum.squeeze(-1) if key_sum is not None else None
    out = torch.cat(outs, dim=-2) if outs else fq.new_empty(*fq.shape[:-1], fv.shape[-1])
    return out, LinearState(kv=kv, key_sum=new_key_sum, position=state.position + seq)


@per_kv_head
def chunked_linear_attention(
    fq: torch.Tensor,
    fk: torch.Tensor,
    fv: torch.Tensor,
    *,
    causal: bool,
    eps: float | None,
    chunk_size: int,
) -> torch.Tensor:
    """sum_{j<=i} (fq_i . fk_j) fv_j chunk by chunk (every j when bidirectional)."""
    if not causal:
        return _bidirectional(fq, fk, fv, eps)
    return chunked_scan(fq, fk, fv, eps=eps, chunk_size=chunk_size)[0]
