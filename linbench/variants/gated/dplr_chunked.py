"""The chunkwise-parallel and quadratic forms of the DPLR recurrence (dplr_recurrent.py).

Inside a chunk of C tokens entering with state S, let G_t be the per-channel log-decay from the
chunk's start to token t (inclusive, ≤ 0) and G'_t = G_t − g_t the same up to t − 1; let
w_t = S_{t−1}ᵀ a_t be what the low-rank term reads. Unrolled from the chunk's start,

    S_t = e^{G_t} ⊙ S + Σ_{s≤t} e^{G_t − G_s} ⊙ (b_s w_sᵀ + k_s v_sᵀ)

so the reads solve one unit lower-triangular system per chunk,

    (I − A_ab) W = (A ⊙ e^{G'}) S + A_ak V,   A_ab[t, s] = Σ_c a_tc b_sc e^{G'_tc − G_sc} (s < t)

(A_ak likewise with k), i.e. W = T (A ⊙ e^{G'}) S + T A_ak V with T = (I − A_ab)⁻¹, and

    O = (Q ⊙ e^{G}) S + Q_b W + Q_k V,   Q_b[t, s] = Σ_c q_tc b_sc e^{G_tc − G_sc} (s ≤ t),
    S' = e^{G_C} ⊙ S + (B ⊙ e^{G_C − G})ᵀ W + (K ⊙ e^{G_C − G})ᵀ V.

Every exponent is ≤ 0. The per-channel scores are factored about the middle of the chunk's
log-decay range (q ⊙ e^{G − m}, k ⊙ e^{m − G}) when that range is within the factor limit of
decay_chunked.py, else each pair is exponentiated from its own difference, a few chunks at a
time. Only the state pass is sequential (W = W_fixed + W_state S, then S'). The quadratic form
is the same algorithm with the whole sequence as one chunk and every pair exponentiated on its
own (O(S²·Dk) memory).
"""

from __future__ import annotations

import torch

from linbench.variants.gated.decay_chunked import FACTOR_LIMIT, PAIR_BUDGET, chunks_per_group
from linbench.variants.gated.dplr_recurrent import DplrInputs
from linbench.variants.gated.numerics import GatedState, lower_mask, to_chunks
from linbench.variants.gated.triangular import unit_lower_inverse


def _pairwise(
    rows: torch.Tensor, rows_log: torch.Tensor, cols: torch.Tensor, cols_log: torch.Tensor, keep: torch.Tensor
) -> torch.Tensor:
    """Σ_c rows_tc cols_sc e^{rows_log_tc − cols_log_sc} where ``keep``, else 0, each pair from
    its own exponent, a few chunks at a time to bound memory."""
    size, dim = rows.shape[-2], rows.shape[-1]
    step = max(1, PAIR_BUDGET // (size * size * dim * rows.shape[0] * rows.shape[1]))
    parts = []
    for start in range(0, rows.shape[2], step):
        part = slice(start, start + step)
        diff = rows_log[:, :, part].unsqueeze(-2) - cols_log[:, :, part].unsqueeze(-3)  # (B, H, n, C, C, Dk)
        factors = diff.masked_fill(~keep.unsqueeze(-1), float("-inf")).exp()
        parts.append((rows[:, :, part].unsqueeze(-2) * cols[:, :, part].unsqueeze(-3) * factors).sum(-1))
    return torch.cat(parts, dim=2)


def pair_scores(
    rows: torch.Tensor,
    rows_log: torch.Tensor,
    cols: torch.Tensor,
    cols_log: torch.Tensor,
    diagonal: int,
    middle: torch.Tensor | None,
) -> torch.Tensor:
    """Σ_c rows_tc cols_sc e^{rows_log_tc − cols_log_sc} for s ≤ t + diagonal in every chunk,
    else 0; factored about ``middle`` (..., 1, Dk) when given, else pair by pair."""
    keep = lower_mask(rows.shape[-2], rows.device, diagonal)
    if middle is None:
        return _pairwise(rows, rows_log, cols, cols_log, keep)
    scores = (rows * (rows_log - middle).exp()) @ (cols * (middle - cols_log).exp()).transpose(-1, -2)
    # Above the kept part the factors' product may exceed 1 (even overflow): never read.
    return scores.masked_fill(~keep, 0.0)


def _chunk_group(
    x: DplrInputs, decay: torch.Tensor, state: torch.Tensor, factored: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Outputs of a group of chunks (B, H, n, C, Dv) entering with ``state``, and the state
    leaving them; ``decay`` is G, each chunk's cumulative log-decay from its start."""
    before = decay - x.g  # G': the decay up to the token before
    last = decay[..., -1:, :]
    middle = (last / 2).detach() if factored else None  # G runs from 0 to G_C in every chunk
    solve = unit_lower_inverse(-pair_scores(x.a, before, x.b, decay, -1, middle))  # (I − A_ab)⁻¹
    fixed = solve @ (pair_scores(x.a, before, x.k, decay, -1, middle) @ x.v)
    weights = solve @ (x.a * before.exp())
    to_end = (last - decay).exp()
    written_kv = (x.k * to_end).transpose(-1, -2) @ x.v  # (B, H, n, Dk, Dv)
    whole = last.transpose(-1, -2).exp()  # e^{G_C} per state row, (B, H, n, Dk, 1)
    entering, reads = [], []
    # unbind, not [:, :, n]: indexing's backward writes a zero gradient the size of all chunks.
    for fixed_n, weights_n, b_n, kv_n, whole_n in zip(
        fixed.unbind(2), weights.unbind(2), (x.b * to_end).unbind(2), written_kv.unbind(2), whole.unbind(2), strict=True
    ):
        entering.append(state)
        read = fixed_n + weights_n @ state
        reads.append(read)
        state = whole_n * state + b_n.transpose(-1, -2) @ read + kv_n
    carried, read_all = torch.stack(entering, dim=2), torch.stack(reads, dim=2)
    out = (x.q * decay.exp()) @ carried + pair_scores(x.q, decay, x.b, decay, 0, middle) @ read_all
    return out + pair_scores(x.q, decay, x.k, decay, 0, middle) @ x.v, state


def dplr_chunked_scan(
    x: DplrInputs, *, chunk_size: int, state: GatedState | None = None, factor: bool = True
) -> tuple[torch.Tensor, GatedState]:
    """Causal outputs chunk by chunk, continuing from ``state``, and the state after the last
    token; ``factor`` False exponentiates every pair on its own (the quadratic form's way)."""
    carried = state if state is not None else GatedState.empty(x.k, x.v)
    seq = x.q.shape[-2]
    chunked = DplrInputs(*(to_chunks(t, chunk_size) for t in (x.q, x.k, x.v, x.a, x.b, x.g)))
    decay = chunked.g.cumsum(-2)  # (B, H, N, C, Dk), ≤ 0; a padded token (g = 0, all else 0) changes nothing
    limit = FACTOR_LIMIT.get(x.q.dtype, FACTOR_LIMIT[torch.float32])
    factored = factor and bool((-decay[..., -1, :]).max() <= 2 * limit)  # one decision for the whole sequence
    size = chunks_per_group(x.q.shape[0] * x.q.shape[1], chunk_size, max(x.q.shape[-1], x.v.shape[-1]))
    pieces = [t.split(size, dim=2) for t in (*(getattr(chunked, n) for n in ("q", "k", "v", "a", "b", "g")), decay)]
    matrix, outs = carried.matrix, []
    for *parts, decay_part in zip(*pieces, strict=True):
        out, matrix = _chunk_group(DplrInputs(*parts), decay_part, matrix, factored)
        outs.append(out)
    out = torch.cat(outs, dim=2).flatten(2, 3)[..., :seq, :]
    return out, GatedState(matrix, carried.position + seq)


def dplr_quadratic(x: DplrInputs) -> torch.Tensor:
    """The whole sequence as one chunk from a zero state, every pair's decay exponentiated on
    its own: O(S²·Dk) memory."""
    return dplr_chunked_scan(x, chunk_size=max(x.q.shape[-2], 1), factor=False)[0]
