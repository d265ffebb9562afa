"""The chunkwise form with every chunk at once: the shape torch.compile can take whole.

``chunked.py`` walks the chunks in a Python loop, which a compiler would unroll into S/C
copies of the body: a graph that grows with the length and is traced again for every
length. Here the chunks are one more batch axis: each chunk's keys and values make a
Dk×Dv state, an exclusive cumulative sum over the chunk axis gives the state before each
chunk, and the C×C masked products inside every chunk are one batched matmul. The graph is
the same for every length, so one compile with dynamic shapes serves them all.

The price is memory: the state before every chunk is held at once, (S/C)·Dk·Dv elements
(what the loop form keeps under autograd anyway), O(s·d) for C ≥ Dk.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from linbench.variants.feature_forms.chunked import chunked_linear_attention
from linbench.variants.heads import per_kv_head


def _chunks(x: torch.Tensor, size: int) -> torch.Tensor:
    """(B, H, S, D) zero-padded to whole chunks, as (B, H, S/C, C, D). Zero keys add nothing
    to a state; the padded queries' rows are cut off the output."""
    pad = (-x.shape[-2]) % size
    padded = F.pad(x, (0, 0, 0, pad))
    return padded.reshape(*x.shape[:-2], padded.shape[-2] // size, size, x.shape[-1])


def _before_each_chunk(per_chunk: torch.Tensor, axis: int) -> torch.Tensor:
    """The exclusive prefix sum over the chunk axis: what every earlier chunk added."""
    total = per_chunk.cumsum(axis)
    return torch.cat((torch.zeros_like(total.narrow(axis, 0, 1)), total.narrow(axis, 0, total.shape[axis] - 1)), axis)


@per_kv_head
def parallel_chunked_attention(
    fq: torch.Tensor,
    fk: torch.Tensor,
    fv: torch.Tensor,
    *,
    causal: bool,
    eps: float | None,
    chunk_size: int,
) -> torch.Tensor:
    """sum_{j<=i} (fq_i . fk_j) fv_j [/ (sum_{j<=i} fq_i . fk_j + eps)], all chunks at once."""
    if not causal:  # no scan to parallelise: one state for the whole sequence
        return chunked_linear_attention(fq, fk, fv, causal=False, eps=eps, chunk_size=chunk_size)
    seq = fq.shape[-2]
    q, k, v = (_chunks(t, chunk_size) for t in (fq, fk, fv))
    mask = torch.ones(chunk_size, chunk_size, dtype=torch.bool, device=fq.device).tril()
    scores = (q @ k.transpose(-1, -2)).masked_fill(~mask, 0.0)
    axis = fq.ndim - 2  # the chunk axis of (B, H, S/C, C, D), a group axis (per_kv_head) included
    states = _before_each_chunk(k.transpose(-1, -2) @ v, axis)  # (B, H, S/C, Dk, Dv)
    num = scores @ v + q @ states
    if eps is not None:
        key_sums = _before_each_chunk(k.sum(-2), axis).unsqueeze(-1)  # (B, H, S/C, Dk, 1)
        num = num / (scores.sum(-1, keepdim=True) + q @ key_sums + eps)
    return num.reshape(*num.shape[:-3], -1, fv.shape[-1])[..., :seq, :]
