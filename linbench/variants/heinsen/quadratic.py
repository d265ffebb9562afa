"""The reference: Heinsen's quadratic-cost formulation (Heinsen's reference code)."""

from __future__ import annotations

import torch

from linbench.variants.heinsen.logspace import log_matmul_exp
from linbench.variants.impl_helpers import causal_mask, upcast


def quadratic(q: torch.Tensor, k: torch.Tensor, log_v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """log( softmax(log(exp(Q) exp(K)^T) + mask) · exp(log V) ).

    exp(log V) is taken after shifting each column by its maximum, which cancels in the
    log and keeps large log-values from overflowing.
    """
    q, k, log_v = upcast(q, k, log_v)
    sims = log_matmul_exp(q, k.transpose(-1, -2))  # log Σ_d exp(q_id + k_jd), (B, H, S, S)
    if causal:
        seq = q.shape[-2]
        sims = sims.masked_fill(~causal_mask(seq, seq, q.device), float("-inf"))
    v_max = log_v.detach().amax(-2, keepdim=True)
    return torch.log(torch.softmax(sims, dim=-1) @ torch.exp(log_v - v_max)) + v_max
