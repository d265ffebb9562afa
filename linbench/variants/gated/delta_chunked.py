"""The chunkwise-parallel (gated) delta rule: the WY/UT form inside chunks, a state across them.

Yang et al. 2024 (DeltaNet, §3) and Yang, Kautz and Hatamizadeh 2024 (Gated DeltaNet, §3.3).
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

import torch

from linbench.variants.gated.numerics import GatedState, decay_matrix, to_chunks
from linbench.variants.gated.triangular import unit_lower_inverse


def _pass_states(
    state: torch.Tensor, fixed: torch.Tensor, weights: torch.Tensor, decay: torch.Tensor, keys_out: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The state entering every chunk, every chunk's written errors U, and the final state.

    fixed: Ũ (B, H, N, C, Dv); weights: W (B, H, N, C, Dk); decay: γ_C (B, H, N);
    keys_out: K ⊙ e^{b_C − b} (B, H, N, C, Dk).
    """
    entering, written = [], []
    # unbind, not fixed[:, :, n]: indexing's backward writes a zero gradient the size of all
    # chunks for every chunk, which would make the backward pass quadratic in S.
    chunks = zip(fixed.unbind(2), weights.unbind(2), decay[..., None, None].unbind(2), keys_out.unbind(2), strict=True)
    for fixed_n, weights_n, decay_n, keys_n in chunks:
        entering.append(state)
        errors = fixed_n - weights_n @ state
        written.append(errors)
        state = decay_n * state + keys_n.transpose(-1, -2) @ errors
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
    # b: (B, H, N, C) log-decay from the chunk's start, ≤ 0 (0 for deltanet); decay: Γ ⊙ M.
    b = to_chunks(g, chunk_size, seq_dim=-1).cumsum(-1) if g is not None else torch.zeros_like(betac)
    decay = decay_matrix(b)
    gamma = b.exp()
    # A = diag(β)(K Kᵀ ⊙ Γ) below the diagonal (its diagonal and upper part are never read),
    # T = (I + A)⁻¹ diag(β): β_s scales column s.
    system = betac.unsqueeze(-1) * decay * (kc @ kc.transpose(-1, -2))
    transform = unit_lower_inverse(system) * betac.unsqueeze(-2)
    fixed, weights = transform @ vc, transform @ (gamma.unsqueeze(-1) * kc)
    last = b[..., -1:]
    keys_out = kc * (last - b).exp().unsqueeze(-1)
    entering, written, final = _pass_states(carried.matrix, fixed, weights, last.squeeze(-1).exp(), keys_out)
    out = (qc * gamma.unsqueeze(-1)) @ entering + (qc @ kc.transpose(-1, -2) * decay) @ written
    return out.flatten(2, 3)[..., :seq, :], GatedState(final, carried.position + seq)
