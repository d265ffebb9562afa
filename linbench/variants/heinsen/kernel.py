"""heinsen on the csrc linear-attention kernel: exponential features, shifted into range.

log Y_i = log Σ_j exp(q_i)·exp(k_j) exp(log v_j) − log Σ_j exp(q_i)·exp(k_j) is a linear
attention with features exp(q), exp(k) and values [exp(log v), 1]. Taken literally, the
exponentials overflow fp32 from |x| ≈ 30 on, so every factor is shifted:
- exp(q_i − max q_i): a per-row factor, which cancels between numerator and denominator;
- exp(k_j − max k_j): the row's maximum moves into the values, [exp(log v_j + m_j), exp(m_j)];
- the values, in causal mode, by their running maximum up to the end of each chunk: the
  kernel's state is then rescaled by exp(old max − new max) between chunks (its ``decay``),
  the maxima carried with the state as in online softmax. Bidirectional rows all read one
  state, so one maximum over the sequence does.
Every shift is detached: they cancel exactly, so they carry no gradient.

The features go to the kernel in fp32 even for bf16/fp16 inputs: rounding exp(q) and
exp(k) to 8 bits of mantissa put the bf16 gradient of q at twice the tolerance the other
impls meet, where the fp32 features meet it.
"""

from __future__ import annotations

import torch

from linbench.kernels import ops as kernel_ops
from linbench.variants.impl_helpers import positive_int, upcast


def running_chunk_maxima(w: torch.Tensor, chunk: int) -> torch.Tensor:
    """(B, H, n_chunks, D): the maximum of w's rows up to the end of each chunk."""
    batch, heads, seq, dim = w.shape
    n_chunks = -(-seq // chunk)
    padded = w.new_full((batch, heads, n_chunks * chunk, dim), float("-inf"))
    padded[..., :seq, :] = w
    return padded.view(batch, heads, n_chunks, chunk, dim).amax(-2).cummax(-2).values


def _causal(fq: torch.Tensor, fk: torch.Tensor, w: torch.Tensor, chunk: int) -> torch.Tensor:
    frames = running_chunk_maxima(w.detach(), chunk)
    decay = torch.ones_like(frames)
    decay[..., 1:, :] = torch.exp(frames[..., :-1, :] - frames[..., 1:, :])
    row_frames = frames.repeat_interleave(chunk, dim=-2)[..., : w.shape[-2], :]
    fv = torch.exp(w - row_frames)
    num = kernel_ops.linear_attention(fq, fk, fv, causal=True, eps=None, chunk=chunk, decay=decay)
    return torch.log(num) + row_frames


def _bidirectional(fq: torch.Tensor, fk: torch.Tensor, w: torch.Tensor, chunk: int) -> torch.Tensor:
    top = w.detach().amax(-2, keepdim=True)
    num = kernel_ops.linear_attention(fq, fk, torch.exp(w - top), causal=False, eps=None, chunk=chunk)
    return torch.log(num) + top


def kernel(q: torch.Tensor, k: torch.Tensor, log_v: torch.Tensor, *, causal: bool, chunk_size: int) -> torch.Tensor:
    """log Y through the kernel; extra memory O(S·D)."""
    chunk = positive_int("chunk_size", chunk_size)
    q, k, log_v = upcast(q, k, log_v)
    fq = torch.exp(q - q.detach().amax(-1, keepdim=True))
    k_max = k.detach().amax(-1, keepdim=True)
    fk = torch.exp(k - k_max)
    # log of the values [v_j, 1] times exp(k_max_j): the last column becomes the normaliser.
    w = torch.cat((log_v + k_max, k_max), dim=-1)
    log_num = _causal(fq, fk, w, chunk) if causal else _bidirectional(fq, fk, w, chunk)
    return log_num[..., :-1] - log_num[..., -1:]
