"""FLOP counting conventions, shared so that every variant is counted the same way.

Only matrix-multiply work is counted (2 FLOPs per multiply-add), as FlashAttention and
flash-linear-attention do; elementwise maps, exponentials and normalisations are not.
The backward pass is counted as a multiple of the forward: 2.5x for softmax (five
S x S matmuls against two) and 2x for the linear forms (the gradients of q, k and v each
need one state-sized product per token, plus recomputing the states).
"""

from __future__ import annotations

SOFTMAX_BWD_FACTOR = 2.5
LINEAR_BWD_FACTOR = 2.0


def by_mode(forward: float, backward_factor: float, mode: str) -> float:
    """A forward count as the count of ``mode``: the backward at ``backward_factor`` × forward."""
    if mode == "fwd":
        return forward
    if mode == "bwd":
        return backward_factor * forward
    if mode == "fwdbwd":
        return (1.0 + backward_factor) * forward
    raise ValueError(f"unknown mode {mode!r}; modes are fwd, bwd, fwdbwd")


def causal_pairs(seq: int, causal: bool) -> float:
    """Number of (query, key) pairs attended: S(S+1)/2 causal, S^2 bidirectional."""
    return seq * (seq + 1) / 2 if causal else float(seq * seq)


def quadratic_flops(batch: int, heads: int, seq: int, dim_k: int, dim_v: int, causal: bool, mode: str) -> float:
    """S x S attention: QK^T (2·Dk per pair) then PV (2·Dv per pair)."""
    forward = batch * heads * causal_pairs(seq, causal) * 2 * (dim_k + dim_v)
    return by_mode(forward, SOFTMAX_BWD_FACTOR, mode)


def linear_flops(
    batch: int, heads: int, seq: int, dim_k: int, dim_v: int, causal: bool, mode: str, *, normalised: bool
) -> float:
    """Linear attention in its O(S·Dk·Dv) form: build the state (2·Dk·Dv per token) and
    read it (2·Dk·Dv per token), plus the normaliser's key sum and dot (4·Dk per token).
    Causal and bidirectional do the same work in this form."""
    del causal
    per_token = 4 * dim_k * dim_v + (4 * dim_k if normalised else 0)
    return by_mode(batch * heads * seq * per_token, LINEAR_BWD_FACTOR, mode)
