"""The memory-efficient evaluation Heinsen's footnote 3 calls possible.

Chunk by chunk in log space: a masked log-matmul inside each chunk and a Dk x Dv state of
log-sums carried across chunks. Every exp() is taken relative to a running maximum, so
fp32 stays finite and accurate for inputs with |x| <= 30, where exp(q + k + log v) would
reach e^90 and overflow. The causal scan can start from a carried state and returns the
state after its last token: how a decoder absorbs a prompt.
"""

from __future__ import annotations

import torch

from linbench.variants.feature_forms.impls import CHUNK_SIZE
from linbench.variants.heads import per_kv_head
from linbench.variants.heinsen.logspace import log_matmul_exp
from linbench.variants.heinsen.recurrent import LogState
from linbench.variants.impl_helpers import causal_mask, positive_int, upcast


def _bidirectional(q: torch.Tensor, k: torch.Tensor, log_v: torch.Tensor) -> torch.Tensor:
    log_kv = log_matmul_exp(k.transpose(-1, -2), log_v)  # (B, H, Dk, Dv)
    log_z = torch.logsumexp(k, dim=-2).unsqueeze(-1)  # (B, H, Dk, 1)
    return log_matmul_exp(q, log_kv) - log_matmul_exp(q, log_z)


@per_kv_head
def chunked_scan(
    q: torch.Tensor, k: torch.Tensor, log_v: torch.Tensor, *, chunk_size: int, state: LogState | None = None
) -> tuple[torch.Tensor, LogState]:
    """Causal log Y chunk by chunk, continuing from ``state``; the outputs and the state
    after the last token (in the compute dtype: fp32 for fp16/bf16 inputs)."""
    size = positive_int("chunk_size", chunk_size)
    q, k, log_v = upcast(q, k, log_v)
    seq = q.shape[-2]
    mask = causal_mask(size, size, q.device)
    # log Σ_{earlier j} exp(k_jd + log v_je) and log Σ_{earlier j} exp(k_jd); None before any token.
    log_kv = state.log_kv if state is not None and state.position > 0 else None
    log_z = state.log_z.unsqueeze(-1) if state is not None and state.position > 0 else None
    # Chunks by split and outputs joined by cat, never sliced or written in place: under
    # autograd each slice costs a full-size gradient, which made the backward quadratic in S.
    outs = []
    for q_c, k_c, v_c in zip(*(x.split(size, dim=-2) for x in (q, k, log_v)), strict=True):
        n = q_c.shape[-2]
        log_scores = log_matmul_exp(q_c, k_c.transpose(-1, -2)).masked_fill(~mask[:n, :n], float("-inf"))
        num = log_matmul_exp(log_scores, v_c)
        den = torch.logsumexp(log_scores, dim=-1, keepdim=True)
        if log_kv is not None and log_z is not None:
            num = torch.logaddexp(num, log_matmul_exp(q_c, log_kv))
            den = torch.logaddexp(den, log_matmul_exp(q_c, log_z))
        outs.append(num - den)
        chunk_kv = log_matmul_exp(k_c.transpose(-1, -2), v_c)
        chunk_z = torch.logsumexp(k_c, dim=-2).unsqueeze(-1)
        log_kv = chunk_kv if log_kv is None else torch.logaddexp(log_kv, chunk_kv)
        log_z = chunk_z if log_z is None else torch.logaddexp(log_z, chunk_z)
    out = torch.cat(outs, dim=-2) if outs else q.new_empty(*q.shape[:-1], log_v.shape[-1])
    position = (state.position if state is not None else 0) + seq
    if log_kv is None or log_z is None:  # no token at all: the state stays empty
        return out, state if state is not None else LogState.empty(k, log_v)
    return out, LogState(log_kv, log_z.squeeze(-1), position)


@per_kv_head
def chunked(q: torch.Tensor, k: torch.Tensor, log_v: torch.Tensor, *, causal: bool, chunk_size: int) -> torch.Tensor:
    """log Y chunk by chunk; no S x S and no S x Dk x Dv tensor."""
    if not causal:
        q, k, log_v = upcast(q, k, log_v)
        return _bidirectional(q, k, log_v)
    return chunked_scan(q, k, log_v, chunk_size=chunk_size)[0]


def prefill(
    q: torch.Tensor, k: torch.Tensor, log_v: torch.Tensor, *, state: LogState | None, capacity: int
) -> LogState:
    """A prompt absorbed by the chunked form, for decoding (the state is Dk x Dv whatever ``capacity``)."""
    del capacity
    return chunked_scan(q, k, log_v, chunk_size=CHUNK_SIZE.default, state=state)[1]
