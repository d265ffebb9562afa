"""The recurrent form of the delta rule (deltanet) and the gated delta rule (gated-deltanet, kda).

S_t = (I − β_t k_t k_tᵀ) diag(e^{g_t}) S_{t−1} + β_t k_t v_tᵀ and o_t = S_tᵀ q_t, one token at
a time: g = 0 for deltanet, one log-gate per head for gated-deltanet (where diag(e^{g_t}) is
the scalar e^{g_t}, which commutes), one per key channel for kda. Written as the papers'
online-learning step, in that order (fla's naive_recurrent_kda too): decay the state, read
what it predicts for k_t, and write β_t times the error, u_t = β_t (v_t − S̃ᵀ k_t), along k_t.
Evaluated in fp64 it is the reference every other form is tested against. Its state can be
carried from call to call, which is how a model decodes with a constant-size state.
"""

from __future__ import annotations

import torch

from linbench.variants.gated.numerics import GatedState, Rows


def delta_step(
    state: torch.Tensor,
    q_t: torch.Tensor,
    k_t: torch.Tensor,
    v_t: torch.Tensor,
    beta_t: torch.Tensor,
    g_t: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One token: the output (B, H, Dv) and the new state (B, H, Dk, Dv); beta_t: (B, H);
    g_t: (B, H) one gate per head, or (B, H, Dk) one per key channel (row of the state)."""
    if g_t is not None:
        # (B, H) → (B, H, 1, 1): the whole state; (B, H, Dk) → (B, H, Dk, 1): row c by e^{g_tc}.
        decay = g_t.exp().unsqueeze(-1)
        if g_t.ndim == beta_t.ndim:
            decay = decay.unsqueeze(-1)
        state = decay * state
    predicted = (k_t.unsqueeze(-2) @ state).squeeze(-2)  # S̃ᵀ k_t, (B, H, Dv)
    error = beta_t.unsqueeze(-1) * (v_t - predicted)
    state = state + k_t.unsqueeze(-1) * error.unsqueeze(-2)
    return (q_t.unsqueeze(-2) @ state).squeeze(-2), state


def delta_scan(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: torch.Tensor,
    g: torch.Tensor | None,
    *,
    state: GatedState | None = None,
) -> tuple[torch.Tensor, GatedState]:
    """Causal outputs for every token, continuing from ``state``, and the state after the last.

    q, k: (B, H, S, Dk), already normalised (and q scaled); v: (B, H, S, Dv); beta: (B, H, S);
    g: (B, H, S) or (B, H, S, Dk), or None.
    """
    carried = state if state is not None else GatedState.empty(k, v)
    matrix = carried.matrix
    rows = Rows(v, q.shape[-2], q, k, v, beta, *([g] if g is not None else []), matrix)
    # unbind, not q[..., t, :]: indexing's backward writes a full-length zero gradient per
    # token, which would make the backward pass quadratic in S.
    gates = g.unbind(2) if g is not None else (None,) * q.shape[-2]
    tokens = zip(q.unbind(-2), k.unbind(-2), v.unbind(-2), beta.unbind(-1), gates, strict=True)
    for q_t, k_t, v_t, beta_t, g_t in tokens:
        row, matrix = delta_step(matrix, q_t, k_t, v_t, beta_t, g_t)
        rows.add(row)
    return rows.stacked(v), GatedState(matrix, carried.position + q.shape[-2])
