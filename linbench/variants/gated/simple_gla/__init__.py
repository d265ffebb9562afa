"""simple-gla: linear attention with a data-dependent scalar gate per head and token.

S_t = e^{g_t} S_{t−1} + k_t v_tᵀ, o_t = S_tᵀ (q_t · Dk^-1/2), g_t ≤ 0: the head-wise gating of
Gated RFA (arXiv:2103.02143), Mamba2's SSD (Dao and Gu 2024, arXiv:2405.21060) and YOCO's gated
retention (arXiv:2405.05254), fla's ``simple_gla``.
"""

from __future__ import annotations

from typing import Any

import torch

from linbench.variants.gated.family import GatedFamily, register_family
from linbench.variants.gated.flops import decay_flops
from linbench.variants.gated.gates import HEAD_GATE
from linbench.variants.gated.impls import STRONG_GATES, DecayInputs
from linbench.variants.gated.numerics import resolve_scale, upcast


def prepare(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, g: torch.Tensor, scale: Any) -> DecayInputs:
    """Scaled q and the gate as a (B, H, S, 1) column, in the compute dtype."""
    q, k, v = upcast(q, k, v)
    return DecayInputs(q * resolve_scale(scale, q.shape[-1]), k, v, g.to(q.dtype).unsqueeze(-1))


VARIANT = register_family(
    GatedFamily(
        name="simple-gla",
        summary="S_t = e^{g_t} S_{t−1} + k_t v_tᵀ, o_t = S_tᵀ q_t: a data-dependent scalar decay per head and token",
        prepare=prepare,
        forms={
            "recurrent": ("the recurrence token by token (the reference, in fp64)", "O(d²)"),
            "quadratic": ("(Q Kᵀ ⊙ D) V with D_ts = e^{G_t − G_s}, G the cumulative log-gate", "O(s²)"),
            "chunked": ("chunkwise: gates cumulated from each chunk's start, a Dk×Dv state between chunks", "O(sd)"),
        },
        flops=decay_flops,
        source="Mamba2 SSD (Dao and Gu, 2024), arXiv:2405.21060; Gated RFA, arXiv:2103.02143",
        decoder_summary="chunked prefill into a Dk×Dv state, then S_t = e^{g_t} S_{t−1} + k_t v_tᵀ",
        extra_inputs=(HEAD_GATE,),
        check_params=STRONG_GATES,
    )
)
