"""The parallel (quadratic) form of decaying linear attention: O = (Q Kᵀ ⊙ D) V.

With G_t = Σ_{r≤t} g_r the cumulative log-gate, unrolling the recurrence gives
o_t = Σ_{s≤t} (Σ_c q_tc k_sc e^{G_tc − G_sc}) v_s. For a scalar gate the decay factors out of
the dot product: D_ts = e^{G_t − G_s} (retention's γ^{t−s}), one S×S matrix. For gla's
per-channel gate it does not, and the form keeps a factor per pair and key channel, an
S×S×Dk tensor: every pair is exponentiated from its own difference G_t − G_s ≤ 0, so the
form is exact for any gate, where e^{G_t}·e^{−G_s} would overflow once G passes ~88 (fp32).
"""

from __future__ import annotations

import torch

from linbench.variants.gated.numerics import decay_matrix, lower_mask


def scalar_decay_quadratic(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """(Q Kᵀ ⊙ D) V with D_ts = e^{G_t − G_s} (s ≤ t); g: (B, H, S, 1)."""
    decay = decay_matrix(g.squeeze(-1).cumsum(-1))
    return (q @ k.transpose(-1, -2) * decay) @ v


def channel_pair_scores(q: torch.Tensor, k: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Σ_c q_tc k_sc e^{G_tc − G_sc} for s ≤ t, else 0, per pair in log space; g: (B, H, S, Dk).
    Also kda's Q Kᵀ and K Kᵀ over the whole sequence (linbench/variants/gated/delta_quadratic.py)."""
    cumulative = g.cumsum(-2)
    diff = cumulative.unsqueeze(-2) - cumulative.unsqueeze(-3)  # (B, H, S, S, Dk): G_t − G_s
    seq = q.shape[-2]
    keep = lower_mask(seq, q.device).unsqueeze(-1)
    # Above the diagonal G_t − G_s > 0 could overflow: those pairs are set to −∞ before exp.
    factors = diff.masked_fill(~keep, float("-inf")).exp()
    return (q.unsqueeze(-2) * k.unsqueeze(-3) * factors).sum(-1)


def channel_decay_quadratic(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Σ_{s≤t} (Σ_c q_tc k_sc e^{G_tc − G_sc}) v_s, per pair in log space; g: (B, H, S, Dk)."""
    return channel_pair_scores(q, k, g) @ v
