"""The chunkwise-parallel (gated) delta rule: the WY/UT form inside chunks, a state across them.

Yang et al. 2024 (DeltaNet, arXiv:2406.06484) and Yang, Kautz and Hatamizadeh 2024 (Gated
DeltaNet, arXiv:2412.06464).
Inside a chunk of C tokens entering with state S, let b_t be the log-decay from the chunk's
start (≤ 0; b = 0 for deltanet), γ_t = e^{b_t} and Γ_ts = e^{b_t − b_s} for s ≤ t. The
written errors are u_t = β_t (v_t − γ_t Sᵀ k_t − Σ_{s<t} Γ_ts (k_tᵀ k_s) u_s), so with
A = tril(diag(β)(K Kᵀ ⊙ Γ), −1) one unit lower-triangular solve per chunk gives

    (I + A) [Ũ | W] = diag(β) [V | γ ⊙ K],     U = Ũ − W S        (T = (I + A)⁻¹ diag(β))
    O = (Q ⊙ γ) S + (Q Kᵀ ⊙ Γ ⊙ M) U,          S' = γ_C S + (K ⊙ e^{b_C − b})ᵀ U.

For kda's per-channel gate (b_t ∈ (−∞, 0]^{Dk}) the same holds with γ, e^{b_C − b} and γ_C
per key channel (γ_C scales row c of S), and Γ inside the dot products: K Kᵀ ⊙ Γ becomes
Σ_c k_tc k_sc e^{b_tc − b_sc}, and likewise Q Kᵀ ⊙ Γ, taken as gla's chunked form takes its
scores (decay_chunked.channel_scores: factored about the chunk's midpoint while every chunk's
log-decay range allows, else pair by pair), so no exponent overflows however strong the gate.

Every exponent is ≤ 0. The inversions and the C×C products of a group of chunks are batched
tensor operations (groups sized as in decay_chunked, to stay in cache); what stays sequential
is the state pass, U = Ũ − W S and S' = γ_C S + K̂ᵀ U, one pair of C×Dk×Dv products per chunk.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from linbench.variants.gated.decay_chunked import channel_scores, chunks_per_group, factorable
from linbench.variants.gated.numerics import GatedState, decay_matrix, lower_mask, to_chunks
from linbench.variants.gated.triangular import unit_lower_inverse


@dataclass(frozen=True)
class _Decays:
    """The gates' factors inside every chunk; for deltanet only the causal mask, the rest None
    (multiplying by ones would cost a pass over every tensor)."""

    pairs: torch.Tensor | None  # Γ ⊙ M: e^{b_t − b_s} for s ≤ t, else 0, (B, H, N, C, C) or (C, C)
    from_start: torch.Tensor | None  # γ_t = e^{b_t}, (B, H, N, C, 1 or Dk)
    to_end: torch.Tensor | None  # e^{b_C − b_s}, (B, H, N, C, 1 or Dk)
    whole: torch.Tensor | None  # γ_C, the decay over the whole chunk per state row, (B, H, N, 1 or Dk, 1)
    # kda: b per key channel (B, H, N, C, Dk), which stays inside the dot products (pairs None),
    # and whether its scores may be factored (decay_chunked.factorable).
    channels: torch.Tensor | None = None
    factored: bool = True

    @classmethod
    def of(cls, b: torch.Tensor | None, like: torch.Tensor, factored: bool) -> _Decays:
        """From b, the log-decay of each token from its chunk's start (B, H, n, C) per head or
        (B, H, n, C, Dk) per key channel, or None; ``like``: a (B, H, n, C, D) chunked input
        (its chunk size, dtype and device)."""
        if b is None:
            return cls(lower_mask(like.shape[-2], like.device).to(like.dtype), None, None, None)
        if b.ndim == like.ndim:
            last = b[..., -1:, :]
            whole = last.transpose(-1, -2).exp()
            return cls(None, b.exp(), (last - b).exp(), whole, channels=b, factored=factored)
        last = b[..., -1:]
        return cls(decay_matrix(b), b.exp().unsqueeze(-1), (last - b).exp().unsqueeze(-1), last.exp().unsqueeze(-1))

    def scores(self, a: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """Σ_c a_tc k_sc times the decay from s to t, for s ≤ t in every chunk, else 0."""
        if self.channels is not None:
            return channel_scores(a, k, self.channels, self.factored)
        assert self.pairs is not None
        return a @ k.transpose(-1, -2) * self.pairs


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


def _chunk_group(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: torch.Tensor,
    b: torch.Tensor | None,
    state: torch.Tensor,
    factored: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Outputs of a group of chunks (B, H, n, C, Dv) entering with ``state``, and the state
    leaving them; b is each chunk's cumulative log-gate from its start (None: deltanet)."""
    decays = _Decays.of(b, q, factored)
    # A = diag(β)(K Kᵀ ⊙ Γ) below the diagonal (its diagonal and upper part are never read),
    # T = (I + A)⁻¹ diag(β): β_s scales column s.
    system = beta.unsqueeze(-1) * decays.scores(k, k)
    transform = unit_lower_inverse(system) * beta.unsqueeze(-2)
    fixed, weights = transform @ v, transform @ _times(k, decays.from_start)
    entering, written, state = _pass_states(state, fixed, weights, decays, _times(k, decays.to_end))
    out = _times(q, decays.from_start) @ entering + decays.scores(q, k) @ written
    return out, state


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

    q, k: (B, H, S, Dk), normalised (q scaled); v: (B, H, S, Dv); beta: (B, H, S);
    g: (B, H, S) per head, (B, H, S, Dk) per key channel (kda), or None (deltanet).
    """
    carried = state if state is not None else GatedState.empty(k, v)
    seq = q.shape[-2]
    qc, kc, vc = (to_chunks(t, chunk_size) for t in (q, k, v))
    betac = to_chunks(beta, chunk_size, seq_dim=-1)  # a padded token has β = 0: it writes nothing
    size = chunks_per_group(q.shape[0] * q.shape[1], chunk_size, max(q.shape[-1], v.shape[-1]))
    pieces = [t.split(size, dim=2) for t in (qc, kc, vc, betac)]
    factored = True
    if g is not None:  # log-decay from each chunk's start, ≤ 0 (per key channel: (..., C, Dk))
        axis = -2 if g.ndim == q.ndim else -1
        b = to_chunks(g, chunk_size, seq_dim=axis).cumsum(axis)
        factored = g.ndim < q.ndim or factorable(b, q.dtype)  # one decision for the whole sequence
        pieces.append(b.split(size, dim=2))
    matrix, outs = carried.matrix, []
    # split, not slicing: a slice's backward writes a zero gradient the size of the whole input.
    for q_n, k_n, v_n, beta_n, *b_n in zip(*pieces, strict=True):
        out, matrix = _chunk_group(q_n, k_n, v_n, beta_n, b_n[0] if b_n else None, matrix, factored)
        outs.append(out)
    out = torch.cat(outs, dim=2).flatten(2, 3)[..., :seq, :]
    return out, GatedState(matrix, carried.position + seq)
