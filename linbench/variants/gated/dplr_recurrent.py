"""The diagonal-plus-low-rank (DPLR) recurrence, token by token: gdn2's and rwkv7's reference.

    S_t = diag(e^{g_t}) S_{t−1} + b_t (a_tᵀ S_{t−1}) + k_t v_tᵀ,      o_t = S_tᵀ q_t

with S_t a Dk×Dv state per head, g_t ∈ (−∞, 0]^{Dk} a log-decay per key channel, and a_t, b_t
∈ R^{Dk} the low-rank term's read and write vectors: fla-core's generalized delta rule
(``fla/ops/generalized_delta_rule/dplr/naive.py``'s ``dplr_recurrence``: the low-rank term
reads the state before the step's decay). Each family reduces its own inputs to it:

- gdn2: S_t = (I − k_t (β_t ⊙ k_t)ᵀ) D_t S_{t−1} + k_t (w_t ⊙ v_t)ᵀ is a_t = −e^{g_t} ⊙ β_t ⊙ k_t
  (the erase read after the decay, moved before it: every factor ≤ 1), b_t = k_t, v ← w_t ⊙ v_t;
- rwkv7: a_t = −κ̂_t, b_t = κ̂_t ⊙ a_t^{ICLR} (fla's ``chunk_rwkv7`` hands exactly these to
  ``chunk_dplr_delta_rule``).

In fp64 this form is the reference the chunked and quadratic forms are tested against.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from linbench.variants.gated.numerics import GatedState, Rows


@dataclass(frozen=True)
class DplrInputs:
    """S_t = diag(e^{g_t}) S_{t−1} + b_t (a_tᵀ S_{t−1}) + k_t v_tᵀ, o_t = S_tᵀ q_t (q scaled)."""

    q: torch.Tensor  # (B, H, S, Dk)
    k: torch.Tensor  # (B, H, S, Dk)
    v: torch.Tensor  # (B, H, S, Dv)
    a: torch.Tensor  # (B, H, S, Dk): what the low-rank term reads of the state
    b: torch.Tensor  # (B, H, S, Dk): along which it writes it back
    g: torch.Tensor  # (B, H, S, Dk): log-decay per key channel, ≤ 0


def dplr_step(
    state: torch.Tensor,
    q_t: torch.Tensor,
    k_t: torch.Tensor,
    v_t: torch.Tensor,
    a_t: torch.Tensor,
    b_t: torch.Tensor,
    g_t: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One token: the output (B, H, Dv) and the new state (B, H, Dk, Dv)."""
    read = (a_t.unsqueeze(-2) @ state).squeeze(-2)  # a_tᵀ S_{t−1}, (B, H, Dv)
    state = g_t.exp().unsqueeze(-1) * state + b_t.unsqueeze(-1) * read.unsqueeze(-2)
    state = state + k_t.unsqueeze(-1) * v_t.unsqueeze(-2)
    return (q_t.unsqueeze(-2) @ state).squeeze(-2), state


def dplr_scan(x: DplrInputs, *, state: GatedState | None = None) -> tuple[torch.Tensor, GatedState]:
    """Causal outputs for every token, continuing from ``state``, and the state after the last."""
    carried = state if state is not None else GatedState.empty(x.k, x.v)
    matrix = carried.matrix
    rows = Rows(x.v, x.q.shape[-2], x.q, x.k, x.v, x.a, x.b, x.g, matrix)
    # unbind, not x.q[..., t, :]: indexing's backward writes a full-length zero gradient per token.
    tokens = zip(*(t.unbind(-2) for t in (x.q, x.k, x.v, x.a, x.b, x.g)), strict=True)
    for q_t, k_t, v_t, a_t, b_t, g_t in tokens:
        row, matrix = dplr_step(matrix, q_t, k_t, v_t, a_t, b_t, g_t)
        rows.add(row)
    return rows.stacked(x.v), GatedState(matrix, carried.position + x.q.shape[-2])
