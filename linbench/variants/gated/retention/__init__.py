"""retention: RetNet's retention (Sun et al. 2023, arXiv:2307.08621), a fixed decay γ_h per head.

S_t = γ_h S_{t−1} + k_t v_tᵀ, o_t = S_tᵀ (q_t · Dk^-1/2); the decay matrix D_ts = γ^{t−s}.
"""

from __future__ import annotations

from typing import Any

import torch

from linbench.variants.declarations import Param
from linbench.variants.gated.family import GatedFamily, register_family
from linbench.variants.gated.flops import decay_flops
from linbench.variants.gated.gates import gamma_problem, retention_log_decay
from linbench.variants.gated.impls import SCALE, DecayInputs
from linbench.variants.gated.numerics import resolve_scale, upcast

GAMMA = Param(
    "gamma",
    None,
    "decay γ in (0, 1): a number, a per-head tensor (H,), or None for RetNet's 1 − 2^(−5−h)",
    check=gamma_problem,
)


def prepare(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, gamma: Any, scale: Any) -> DecayInputs:
    """Scaled q and the log-decay log γ_h of every head, as a gate repeated over the tokens."""
    q, k, v = upcast(q, k, v)
    batch, heads, seq, dim_k = q.shape
    log_decay = retention_log_decay(gamma, heads, q)
    gate = log_decay.view(1, heads, 1, 1).expand(batch, heads, seq, 1)
    return DecayInputs(q * resolve_scale(scale, dim_k), k, v, gate)


VARIANT = register_family(
    GatedFamily(
        name="retention",
        summary="S_t = γ_h S_{t−1} + k_t v_tᵀ, o_t = S_tᵀ q_t: linear attention with a fixed decay per head",
        prepare=prepare,
        forms={
            "recurrent": ("the recurrence token by token (the reference, in fp64)", "O(d²)"),
            "quadratic": ("(Q Kᵀ ⊙ D) V with D_ts = γ^{t−s} (RetNet's parallel form)", "O(s²)"),
            "chunked": ("RetNet's chunkwise form: decayed C×C blocks, a Dk×Dv state between chunks", "O(sd)"),
        },
        flops=decay_flops,
        source="RetNet (Sun et al., 2023), arXiv:2307.08621",
        decoder_summary="chunked prefill into a Dk×Dv state, then S_t = γ S_{t−1} + k_t v_tᵀ",
        params=(GAMMA, SCALE),
        # the strong regime: γ = 0.5, forgotten within a few tokens
        check_params=({"gamma": 0.5},),
        working_copies={"quadratic": 3},  # 3.2 tensors of B·H·S² measured at 512 and 1k (fp32, fwd)
    )
)
