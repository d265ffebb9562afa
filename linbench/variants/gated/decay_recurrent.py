"""The recurrent form of decaying linear attention (retention, simple-gla, gla).

S_t = diag(e^{g_t}) S_{t−1} + k_t v_tᵀ and o_t = S_tᵀ q_t, one token at a time, where the
log-gate g_t ≤ 0 is one number per head (retention, simple-gla: every row of S decays alike)
or one per key channel (gla). Evaluated in fp64 it is the reference every other form is
tested against: it is the papers' definition, read off literally. Its state can be carried
from call to call, which is how a model decodes with a constant-size state.
"""

from __future__ import annotations

import torch

from linbench.variants.gated.numerics import GatedState, Rows


def decay_step(
    state: torch.Tensor, q_t: torch.Tensor, k_t: torch.Tensor, v_t: torch.Tensor, g_t: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """One token: the output (B, H, Dv) and the new state (B, H, Dk, Dv).

    g_t is (B, H, 1) for a scalar gate or (B, H, Dk) for a per-channel one. Out of place, so
    autograd can differentiate through every step.
    """
    state = g_t.exp().unsqueeze(-1) * state + k_t.unsqueeze(-1) * v_t.unsqueeze(-2)
    return (q_t.unsqueeze(-2) @ state).squeeze(-2), state


def decay_scan(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    *,
    state: GatedState | None = None,
) -> tuple[torch.Tensor, GatedState]:
    """Causal outputs for every token, continuing from ``state``, and the state after the last.

    q, k: (B, H, S, Dk) (q already scaled); v: (B, H, S, Dv); g: (B, H, S, 1) or (B, H, S, Dk).
    """
    carried = state if state is not None else GatedState.empty(k, v)
    matrix = carried.matrix
    rows = Rows(v, q.shape[-2], q, k, v, g, matrix)
    # unbind, not q[..., t, :]: indexing's backward writes a full-length zero gradient per
    # token, which would make the backward pass quadratic in S.
    for q_t, k_t, v_t, g_t in zip(q.unbind(-2), k.unbind(-2), v.unbind(-2), g.unbind(-2), strict=True):
        row, matrix = decay_step(matrix, q_t, k_t, v_t, g_t)
        rows.add(row)
    return rows.stacked(v), GatedState(matrix, carried.position + q.shape[-2])
