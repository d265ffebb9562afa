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

The bytes a call moves, the gates and β included, are variants/traffic.py's.
"""

from __future__ import annotations

from linbench.variants.flops import LINEAR_BWD_FACTOR, by_mode


def decay_flops(batch: int, heads: int, seq: int, dim_k: int, dim_v: int, causal: bool, mode: str) -> float:
    """Decaying recurrence: 4·S·Dk·Dv forward (write and read the state)."""
    del causal
    return by_mode(batch * heads * seq * 4 * dim_k * dim_v, LINEAR_BWD_FACTOR, mode)


def delta_flops(batch: int, heads: int, seq: int, dim_k: int, dim_v: int, causal: bool, mode: str) -> float:
    """Delta rule: 6·S·Dk·Dv forward (predict S̃ᵀk, write k uᵀ, read Sᵀq)."""
    del causal
    return by_mode(batch * heads * seq * 6 * dim_k * dim_v, LINEAR_BWD_FACTOR, mode)
