"""The chunkwise-parallel form of decaying linear attention, as GLA's and RetNet's kernels do it.

The sequence is cut into chunks of C tokens. Inside a chunk, b_t = Σ_{r≤t} g_r is the log-decay
from the chunk's start (≤ 0, and at most C gates deep, so fp32 holds it whatever S is). Token t
of chunk n then reads

    o_t = (q_t ⊙ e^{b_t})ᵀ S_n  +  Σ_{s≤t in the chunk} (Σ_c q_tc k_sc e^{b_tc − b_sc}) v_s

where S_n is the state entering the chunk, and the chunk leaves the state
S_{n+1} = diag(e^{b_C}) S_n + (K ⊙ e^{b_C − b})ᵀ V. Every exponent there is ≤ 0. The
intra-chunk products of a group of chunks are one batched tensor operation; the only
sequential part is the pass of the Dk×Dv state from chunk to chunk (S/C small elementwise
steps). Groups hold as many chunks as keep their C×C scores in a CPU's L2 cache
(``chunks_per_group``): all chunks at once is the same arithmetic, but at 16k tokens its
intermediates (hundreds of MB) made it 1.3x (forward) to 1.6x (forward and backward) slower.

The intra-chunk scores of a scalar gate are (Q Kᵀ) ⊙ e^{b_t − b_s}. A per-channel gate cannot
leave the dot product, and the papers' kernels factor it: (q_t ⊙ e^{b_t − m}) · (k_s ⊙ e^{m − b_s}).
That is exact, but the factors overflow unless their exponents are bounded: with m the midpoint
of the chunk's first and last b (per channel), |b − m| is at most half the chunk's log-decay
range, so the factored form is used when every chunk's range is at most ``2 · factor_limit``
(one reduction decides). Otherwise, for gates strong enough to forget e^{−2·limit} within one
chunk, each pair is exponentiated from its own difference (O(C²·Dk) per chunk), exactly as the
quadratic form does, a few chunks at a time to bound memory. GLA's kernels bound the range by
sub-chunks of 16 instead; the exponent limit here does the same job on whole chunks.
"""

from __future__ import annotations

import torch

from linbench.variants.gated.numerics import GatedState, decay_matrix, lower_mask, to_chunks

# |exponent| allowed in a factor of the factored per-channel scores: e^60 ≈ 1e26 leaves fp32
# room for |q|·|k|·Dk up to 1e12 in the products kept; fp64 goes much further.
FACTOR_LIMIT = {torch.float32: 60.0, torch.float64: 600.0}
# Elements of the (chunks, C, C, Dk) pair tensor built at once when the factors cannot be used.
PAIR_BUDGET = 1 << 22
# Elements of a group's C×C scores (or per-chunk states) over batch and heads: 256k fp32, 1 MiB.
GROUP_BUDGET = 1 << 18


def _scalar_scores(q: torch.Tensor, k: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(Q Kᵀ) ⊙ e^{b_t − b_s} inside every chunk; b: (..., N, C, 1)."""
    return q @ k.transpose(-1, -2) * decay_matrix(b.squeeze(-1))


def _pairwise_scores(q: torch.Tensor, k: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Σ_c q_tc k_sc e^{b_tc − b_sc}, each pair from its own exponent, a few chunks at a time."""
    size, dim_k = q.shape[-2], q.shape[-1]
    keep = lower_mask(size, q.device).unsqueeze(-1)
    per_chunk = size * size * dim_k * q.shape[0] * q.shape[1]
    step = max(1, PAIR_BUDGET // per_chunk)
    parts = []
    for start in range(0, q.shape[2], step):
        part = slice(start, start + step)
        diff = b[:, :, part].unsqueeze(-2) - b[:, :, part].unsqueeze(-3)  # (B, H, n, C, C, Dk)
        factors = diff.masked_fill(~keep, float("-inf")).exp()
        parts.append((q[:, :, part].unsqueeze(-2) * k[:, :, part].unsqueeze(-3) * factors).sum(-1))
    return torch.cat(parts, dim=2)


def channel_scores(q: torch.Tensor, k: torch.Tensor, b: torch.Tensor, factored: bool) -> torch.Tensor:
    """Σ_c q_tc k_sc e^{b_tc − b_sc} (s ≤ t, else 0) inside every chunk; b: (..., N, C, Dk).
    Also kda's K Kᵀ with the same decays (linbench/variants/gated/delta_chunked.py)."""
    if not factored:
        return _pairwise_scores(q, k, b)
    # m cancels in the product, so no gradient flows through it (and autograd keeps no slice of b for it).
    middle = ((b[..., :1, :] + b[..., -1:, :]) / 2).detach()
    scores = (q * (b - middle).exp()) @ (k * (middle - b).exp()).transpose(-1, -2)
    # Above the diagonal the factors' product is e^{b_t − b_s} ≥ 1 and may be inf: never read.
    keep = lower_mask(q.shape[-2], q.device)
    return scores.masked_fill(~keep, 0.0)


def factorable(b: torch.Tensor, dtype: torch.dtype) -> bool:
    """Whether every chunk's log-decay range lets the per-channel scores be factored (one
    reduction, read once for the whole sequence)."""
    limit = FACTOR_LIMIT.get(dtype, FACTOR_LIMIT[torch.float32])
    return bool((b[..., :1, :] - b[..., -1:, :]).max() <= 2 * limit)


def _pass_states(start: torch.Tensor, decay: torch.Tensor, added: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The state entering every chunk (B, H, N, Dk, Dv) and the state after the last one.

    decay: (B, H, N, Dk or 1), each chunk's e^{b_C} per key row; added: what each chunk writes.
    """
    entering = []
    state = start
    # unbind, not added[:, :, n]: indexing's backward writes a zero gradient the size of all
    # chunks for every chunk, which would make the backward pass quadratic in S.
    for decay_n, added_n in zip(decay.unsqueeze(-1).unbind(2), added.unbind(2), strict=True):
        entering.append(state)
        state = decay_n * state + added_n
    return torch.stack(entering, dim=2), state


def _chunk_group(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, b: torch.Tensor, state: torch.Tensor, factored: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Outputs of a group of chunks (B, H, n, C, Dv) entering with ``state``, and the state
    leaving them; b is each chunk's cumulative log-gate from its start."""
    last = b[..., -1:, :]
    scores = _scalar_scores(q, k, b) if b.shape[-1] == 1 else channel_scores(q, k, b, factored)
    added = (k * (last - b).exp()).transpose(-1, -2) @ v  # (B, H, n, Dk, Dv)
    entering, state = _pass_states(state, last.squeeze(-2).exp(), added)
    return scores @ v + (q * b.exp()) @ entering, state


def chunks_per_group(heads: int, chunk_size: int, width: int) -> int:
    """Chunks processed as one batch: enough for batched matmuls, few enough that a group's
    C×C scores and per-chunk states (``heads`` × C × width elements per chunk) fit in
    GROUP_BUDGET, about a CPU core's L2 cache."""
    return max(1, GROUP_BUDGET // (heads * chunk_size * max(chunk_size, width)))


def decay_chunked_scan(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    *,
    chunk_size: int,
    state: GatedState | None = None,
) -> tuple[torch.Tensor, GatedState]:
    """Causal outputs chunk by chunk, continuing from ``state``, and the state after the last token.

    q, k: (B, H, S, Dk) (q already scaled); v: (B, H, S, Dv); g: (B, H, S, 1) or (B, H, S, Dk).
    """
    carried = state if state is not None else GatedState.empty(k, v)
    seq = q.shape[-2]
    qc, kc, vc, gc = (to_chunks(t, chunk_size) for t in (q, k, v, g))
    b = gc.cumsum(-2)  # (B, H, N, C, 1 or Dk): log-decay from the chunk's start, ≤ 0
    factored = g.shape[-1] == 1 or factorable(b, q.dtype)
    size = chunks_per_group(q.shape[0] * q.shape[1], chunk_size, max(q.shape[-1], v.shape[-1]))
    matrix, outs = carried.matrix, []
    # split, not slicing: a slice's backward writes a zero gradient the size of the whole input.
    groups = (t.split(size, dim=2) for t in (qc, kc, vc, b))
    for q_part, k_part, v_part, b_part in zip(*groups, strict=True):
        out, matrix = _chunk_group(q_part, k_part, v_part, b_part, matrix, factored)
        outs.append(out)
    out = torch.cat(outs, dim=2).flatten(2, 3)[..., :seq, :]
    return out, GatedState(matrix, carried.position + seq)
