"""The parallel form of the (gated) delta rule: the UT transform over the whole sequence.

Write the recurrence as S_t = S̃_t + k_t u_tᵀ, with S̃_t = e^{g_t} S_{t−1} and the written
error u_t = β_t (v_t − S̃_tᵀ k_t). From the start, S̃_t = Σ_{s<t} Γ_ts k_s u_sᵀ with
Γ_ts = e^{G_t − G_s} (G the cumulative log-gate; Γ = 1 for deltanet), so

    u_t = β_t v_t − β_t Σ_{s<t} Γ_ts (k_tᵀ k_s) u_s,   i.e.   (I + A) U = diag(β) V,
    A = tril(diag(β) (K Kᵀ ⊙ Γ), −1),

a unit lower-triangular system: U = T V with T = (I + A)⁻¹ diag(β) (the UT transform of
Yang et al. 2024, arXiv:2406.06484). Then o_t = Σ_{s≤t} Γ_ts (q_tᵀ k_s) u_s: O = (Q Kᵀ ⊙ Γ ⊙ M) U.
O(S²) memory and O(S²·(Dk + Dv)) time, the triangular solve included.

kda's per-channel gate does not leave the dot products: Γ_ts (k_tᵀ k_s) becomes
Σ_c k_tc k_sc e^{G_tc − G_sc}, and likewise for q, each pair and channel exponentiated from
its own difference ≤ 0 (gla's quadratic scores, decay_quadratic.channel_pair_scores): exact for
any gate, at O(S²·Dk) memory.
"""

from __future__ import annotations

import torch

from linbench.variants.gated.decay_quadratic import channel_pair_scores
from linbench.variants.gated.numerics import decay_matrix


def delta_quadratic(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor, g: torch.Tensor | None
) -> torch.Tensor:
    """O for q, k: (B, H, S, Dk) normalised (q scaled); v: (B, H, S, Dv); beta: (B, H, S);
    g: (B, H, S) per head, (B, H, S, Dk) per key channel, or None."""
    if g is not None and g.ndim == q.ndim:
        keys, scores = channel_pair_scores(k, k, g), channel_pair_scores(q, k, g)
    else:
        # Γ ⊙ M: e^{G_t − G_s} for s ≤ t, else 0 (ones on and below the diagonal for deltanet).
        decay = decay_matrix(g.cumsum(-1) if g is not None else q.new_zeros(q.shape[:-1]))
        keys, scores = k @ k.transpose(-1, -2) * decay, q @ k.transpose(-1, -2) * decay
    system = (beta.unsqueeze(-1) * keys).tril(-1)
    # solve_triangular reads only the strict lower part when unitriangular: (I + A) U = βV.
    written = torch.linalg.solve_triangular(system, beta.unsqueeze(-1) * v, upper=False, unitriangular=True)
    return scores @ written
