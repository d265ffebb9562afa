"""FLOP and byte counts of the gated variants, by linbench's convention (variants/flops.py).

Only matrix-multiply work is counted, 2 FLOPs per multiply-add; the gates' exponentials and
products, the decay masks, q and k's L2 norms and the scale are elementwise and not counted.
The backward pass counts as LINEAR_BWD_FACTOR (2) times the forward, as for the other linear
forms. Every formula takes (batch, heads, seq, dim_k, dim_v, causal, mode) like the seed
variants' (``causal`` is accepted and ignored: these variants are causal only).

Each variant's own formula, which its GFLOP/s is computed from, is the recurrent form's
count, the work the recurrence itself needs, so that GFLOP/s means the same as for the seed
variants' linear forms (4·S·Dk·Dv):

- decaying (retention, lightning, simple-gla, gla): write k_t v_tᵀ and read S_tᵀ q_t, 2·Dk·Dv each per
  token: 4·S·Dk·Dv, exactly the seed linear forms' count;
- delta rule (deltanet, gated-deltanet): also predict S̃ᵀ k_t before writing: 6·S·Dk·Dv.

The chunked and quadratic forms' own counts (what they execute, the masked halves of their
C×C or S×S products included) are there to compare a form's work with the recurrence's. The
bytes a call moves, the gates and β included, are variants/traffic.py's.
"""

from __future__ import annotations

from linbench.variants.flops import LINEAR_BWD_FACTOR

CHUNK = 64  # the chunked forms' default chunk size


def by_mode(forward: float, mode: str) -> float:
    """A forward count as the count of ``mode`` (the backward at LINEAR_BWD_FACTOR × forward)."""
    factors = {"fwd": 1.0, "bwd": LINEAR_BWD_FACTOR, "fwdbwd": 1.0 + LINEAR_BWD_FACTOR}
    if mode not in factors:
        raise ValueError(f"unknown mode {mode!r}; modes are fwd, bwd, fwdbwd")
    return factors[mode] * forward


def decay_flops(batch: int, heads: int, seq: int, dim_k: int, dim_v: int, causal: bool, mode: str) -> float:
    """Decaying recurrence: 4·S·Dk·Dv forward (write and read the state)."""
    del causal
    return by_mode(batch * heads * seq * 4 * dim_k * dim_v, mode)


def delta_flops(batch: int, heads: int, seq: int, dim_k: int, dim_v: int, causal: bool, mode: str) -> float:
    """Delta rule: 6·S·Dk·Dv forward (predict S̃ᵀk, write k uᵀ, read Sᵀq)."""
    del causal
    return by_mode(batch * heads * seq * 6 * dim_k * dim_v, mode)


def decay_chunked_flops(
    batch: int, heads: int, seq: int, dim_k: int, dim_v: int, causal: bool, mode: str, *, chunk_size: int = CHUNK
) -> float:
    """Chunked decaying form: Q Kᵀ and scores·V in C×C blocks, 2·S·C·(Dk + Dv); the state read
    by every query and written by every chunk, 4·S·Dk·Dv."""
    del causal
    per_token = 2 * chunk_size * (dim_k + dim_v) + 4 * dim_k * dim_v
    return by_mode(batch * heads * seq * per_token, mode)


def decay_quadratic_flops(batch: int, heads: int, seq: int, dim_k: int, dim_v: int, causal: bool, mode: str) -> float:
    """Quadratic decaying form: the S×S scores (2·S²·Dk, gla's per-pair products counted as a
    matmul's) and their product with V (2·S²·Dv)."""
    del causal
    return by_mode(batch * heads * seq * seq * 2 * (dim_k + dim_v), mode)


def delta_chunked_flops(
    batch: int, heads: int, seq: int, dim_k: int, dim_v: int, causal: bool, mode: str, *, chunk_size: int = CHUNK
) -> float:
    """Chunked delta rule, per token: K Kᵀ and Q Kᵀ (4·C·Dk), the unit-triangular solve for
    [Ũ | W] (C·(Dk + Dv)), the intra-chunk product with U (2·C·Dv), and W S, Q S, K̂ᵀ U
    (6·Dk·Dv)."""
    del causal
    per_token = chunk_size * (5 * dim_k + 3 * dim_v) + 6 * dim_k * dim_v
    return by_mode(batch * heads * seq * per_token, mode)


def delta_quadratic_flops(batch: int, heads: int, seq: int, dim_k: int, dim_v: int, causal: bool, mode: str) -> float:
    """Quadratic delta rule: K Kᵀ and Q Kᵀ (4·S²·Dk), the S×S solve for U (S²·Dv), and the
    scores times U (2·S²·Dv)."""
    del causal
    return by_mode(batch * heads * seq * seq * (4 * dim_k + 3 * dim_v), mode)
