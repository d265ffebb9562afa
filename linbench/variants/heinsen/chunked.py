"""The memory-efficient evaluation Heinsen's footnote 3 calls possible.

Chunk by chunk in log space: a masked log-matmul inside each chunk and a Dk x Dv state of
log-sums carried across chunks. Every exp() is taken relative to a running maximum, so
fp32 stays finite and accurate for inputs with |x| <= 30, where exp(q + k + log v) would
reach e^90 and overflow.
"""

from __future__ import annotations

import torch

from linbench.variants.common import causal_mask, positive_int, upcast
from linbench.variants.heinsen.logspace import log_matmul_exp


def _bidirectional(q: torch.Tensor, k: torch.Tensor, log_v: torch.Tensor) -> torch.Tensor:
    log_kv = log_matmul_exp(k.transpose(-1, -2), log_v)  # (B, H, Dk, Dv)
    log_z = torch.logsumexp(k, dim=-2).unsqueeze(-1)  # (B, H, Dk, 1)
    return log_matmul_exp(q, log_kv) - log_matmul_exp(q, log_z)


def chunked(q: torch.Tensor, k: torch.Tensor, log_v: torch.Tensor, *, causal: bool, chunk_size: int) -> torch.Tensor:
    """log Y chunk by chunk; no S x S and no S x Dk x Dv tensor."""
    size = positive_int("chunk_size", chunk_size)
    q, k, log_v = upcast(q, k, log_v)
    if not causal:
        return _bidirectional(q, k, log_v)
    seq = q.shape[-2]
    mask = causal_mask(size, size, q.device)
    log_kv: torch.Tensor | None = None  # log Σ_{earlier j} exp(k_jd + log v_je)
    log_z: torch.Tensor | None = None  # log Σ_{earlier j} exp(k_jd)
    out = log_v.new_empty(log_v.shape)
    for start in range(0, seq, size):
        stop = min(start + size, seq)
        q_c, k_c, v_c = q[..., start:stop, :], k[..., start:stop, :], log_v[..., start:stop, :]
        n = stop - start
        log_scores = log_matmul_exp(q_c, k_c.transpose(-1, -2)).masked_fill(~mask[:n, :n], float("-inf"))
        num = log_matmul_exp(log_scores, v_c)
        den = torch.logsumexp(log_scores, dim=-1, keepdim=True)
        if log_kv is not None and log_z is not None:
            num = torch.logaddexp(num, log_matmul_exp(q_c, log_kv))
            den = torch.logaddexp(den, log_matmul_exp(q_c, log_z))
        out[..., start:stop, :] = num - den
        chunk_kv = log_matmul_exp(k_c.transpose(-1, -2), v_c)
        chunk_z = torch.logsumexp(k_c, dim=-2).unsqueeze(-1)
        log_kv = chunk_kv if log_kv is None else torch.logaddexp(log_kv, chunk_kv)
        log_z = chunk_z if log_z is None else torch.logaddexp(log_z, chunk_z)
    return out
