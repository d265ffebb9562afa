"""Heinsen's linearised form (Heinsen's reference code, eqs. 5–6): two logcumsumexp scans.

Keeps every latent state, B·H·S·Dk·Dv values, "memory-inefficient but easier to write"
(the paper's footnote 3).
"""

from __future__ import annotations

import torch

from linbench.variants.heads import per_kv_head
from linbench.variants.impl_helpers import upcast


def _scan(x: torch.Tensor, causal: bool) -> torch.Tensor:
    """Log-sum over positions j <= i (causal) or all j, along dim -3."""
    return torch.logcumsumexp(x, dim=-3) if causal else torch.logsumexp(x, dim=-3, keepdim=True)


@per_kv_head
def naive(q: torch.Tensor, k: torch.Tensor, log_v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    """log S − log Z with H_S = LCSE(K + log V), H_Z = LCSE(K), log S = LSE(Q + H_S)."""
    q, k, log_v = upcast(q, k, log_v)
    q, k, log_v = q.unsqueeze(-1), k.unsqueeze(-1), log_v.unsqueeze(-2)
    h_s = _scan(k + log_v, causal)  # (B, H, S, Dk, Dv)
    h_z = _scan(k, causal)  # (B, H, S, Dk, 1)
    log_s = torch.logsumexp(q + h_s, dim=-2)  # (B, H, S, Dv)
    log_z = torch.logsumexp(q + h_z, dim=-2)  # (B, H, S, 1)
    return log_s - log_z
