"""The chunkwise-parallel (gated) delta rule: the WY/UT form inside chunks, a state across them.

Yang et al. 2024 (DeltaNet, arXiv:2406.06484) and Yang, Kautz and Hatamizadeh 2024 (Gated
DeltaNet, arXiv:2412.06464).
Inside a chunk of C tokens entering with state S, let b_t be the log-decay from the chunk's
start (≤ 0; b = 0 for deltanet), γ_t = e^{b_t} and Γ_ts = e^{b_t − b_s} for s ≤ t. The
written errors are u_t = β_t (v_t − γ_t Sᵀ k_t − Σ_{s<t} Γ_ts (k_tᵀ k_s) u_s), so with
A = tril(diag(β)(K Kᵀ ⊙ Γ), −1) one unit lower-triangular solve per chunk gives

    (I + A) [Ũ | W] = diag(β) [V | γ ⊙ K],     U = Ũ − W S        (T = (I + A)⁻¹ diag(β))
    O = (Q ⊙ γ) S + (Q Kᵀ ⊙ Γ ⊙ M) U,          S' = γ_C S + (K ⊙ e^{b_C − b})ᵀ U.

Every exponent is ≤ 0. The solves and the C×C products of every chunk are batched tensor
operations; what stays sequential is the state pass, U = Ũ − W S and S' = γ_C S + K̂ᵀ U, one
pair of C×Dk×Dv products per chunk.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from linbench.variants.gated.numerics import GatedState, decay_matrix, lower_mask, to_chunks
from linbench.variants.gated.triangular import unit_lower_inverse


@dataclass(frozen=True)
class _Decays:
    """The gates' factors inside every chunk; for deltanet only the causal mask, the rest None
    (multiplying by ones would cost a pass over every tensor)."""

    pairs: torch.Tensor  # Γ ⊙ M: e^{b_t − b_s} for s ≤ t, else 0, (B, H, N, C, C) or (C, C)
    from_start: torch.Tensor | None  # γ_t = e^{b_t}, (B, H, N, C, 1)
    to_end: torch.Tensor | None  # e^{b_C − b_s}, (B, H, N, C, 1)
    whole: torch.Tensor | None  # γ_C, the decay over the whole chunk, (B, H, N, 1, 1)

    @classmethod
    def of(cls, g: torch.Tensor | None, chunk_size: int, like: torch.Tensor) -> _Decays:
        if g is None:
            return cls(lower_mask(chunk_size, like.device).to(like.dtype), None, None, None)
        b = to_chunks(g, chunk_size, seq_dim=-1).cumsum(-1)  # log-decay from the chunk's start, ≤ 0
        last = b[..., -1:]
        return cls(decay_matrix(b), b.exp().unsqueeze(-1), (last - b).exp().unsqueeze(-1), last.exp().unsqueeze(-1))


def _times(x: torch.Tensor, factor: torch.Tensor | None) -> torch.Tensor:
    return x if factor is None else x * factor


def _pass_states(
    state: torch.Tensor, fixed: torch.Tensor, weights: torch.Tensor, decays: _Decays, keys_out: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The state entering every chunk, every chunk's written errors U, and the final state.

    fixed: Ũ (B, H, N, C, Dv); weights: W (B, H, N, C, Dk); keys_out: K ⊙ e^{b_C − b}.
    """
    entering, written = [], []
    # unbind, not fixed[:, :, n]: indexing's backward writes a zero gradient the size of all
    # chunks for every chunk, which would make the backward pass quadratic in S.
    whole = decays.whole.unbind(2) if decays.whole is not None else (None,) * fixed.shape[2]
    for fixed_n, weights_n, whole_n, keys_n in zip(
        fixed.unbind(2), weights.unbind(2), whole, keys_out.unbind(2), strict=True
    ):
        entering.append(state)
        errors = fixed_n - weights_n @ state
        written.append(errors)
        state = _times(state, whole_n) + keys_n.transpose(-1, -2) @ errors
    return torch.stack(entering, dim=2), torch.stack(written, dim=2), state


def delta_chunked_scan(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: torch.Tensor,
    g: torch.Tensor | None,
    *,
    chunk_size: int,
    state: GatedState | None = None,
) -> tuple[torch.Tensor, GatedState]:
    """Causal outputs chunk by chunk, continuing from ``state``, and the state after the last token.

    q, k: (B, H, S, Dk), normalised (q scaled); v: (B, H, S, Dv); beta, g: (B, H, S).
    """
    carried = state if state is not None else GatedState.empty(k, v)
    seq = q.shape[-2]
    qc, kc, vc = (to_chunks(t, chunk_size) for t in (q, k, v))
    betac = to_chunks(beta, chunk_size, seq_dim=-1)  # a padded token has β = 0: it writes nothing
    decays = _Decays.of(g, chunk_size, q)
    # A = diag(β)(K Kᵀ ⊙ Γ) below the diagonal (its diagonal and upper part are never read),
    # T = (I + A)⁻¹ diag(β): β_s scales column s.
    system = betac.unsqueeze(-1) * decays.pairs * (kc @ kc.transpose(-1, -2))
    transform = unit_lower_inverse(system) * betac.unsqueeze(-2)
    fixed, weights = transform @ vc, transform @ _times(kc, decays.from_start)
    keys_out = _times(kc, decays.to_end)
    entering, written, final = _pass_states(carried.matrix, fixed, weights, decays, keys_out)
    out = _times(qc, decays.from_start) @ entering + (qc @ kc.transpose(-1, -2) * decays.pairs) @ written
    return out.flatten(2, 3)[..., :seq, :], GatedState(final, carried.position + seq)
