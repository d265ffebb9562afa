"""gated-deltanet: the gated delta rule (Yang, Kautz and Hatamizadeh 2024, arXiv:2412.06464).

S_t = e^{g_t} (I − β_t k_t k_tᵀ) S_{t−1} + β_t k_t v_tᵀ, o_t = S_tᵀ (q_t · Dk^-1/2), with q and
k L2-normalised, g_t ≤ 0 one log-gate per head and token (Mamba2's) and β_t ∈ [0, 1].
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from linbench.variants.gated.family import GatedFamily, register_family
from linbench.variants.gated.flops import delta_flops
from linbench.variants.gated.gates import BETA, HEAD_GATE
from linbench.variants.gated.impls import STRONG_GATES, DeltaInputs
from linbench.variants.gated.numerics import resolve_scale, upcast


def prepare(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, g: torch.Tensor, beta: torch.Tensor, scale: Any
) -> DeltaInputs:
    """q and k L2-normalised (q then scaled), β and the gates, in the compute dtype."""
    q, k, v = upcast(q, k, v)
    q = F.normalize(q, dim=-1) * resolve_scale(scale, q.shape[-1])
    return DeltaInputs(q, F.normalize(k, dim=-1), v, beta.to(q.dtype), g.to(q.dtype))


VARIANT = register_family(
    GatedFamily(
        name="gated-deltanet",
        summary="S_t = e^{g_t}(I − β_t k_t k_tᵀ) S_{t−1} + β_t k_t v_tᵀ, o_t = S_tᵀ q_t; q, k L2-normalised",
        prepare=prepare,
        forms={
            "recurrent": ("the gated delta rule token by token (the reference, in fp64)", "O(d²)"),
            "quadratic": ("the UT transform over the whole sequence, decays e^{G_t − G_s} per pair", "O(s²)"),
            "chunked": ("the WY/UT form in chunks, gates cumulated from each chunk's start", "O(sd)"),
        },
        flops=delta_flops,
        source="Gated DeltaNet (Yang, Kautz and Hatamizadeh, 2024), arXiv:2412.06464",
        decoder_summary="chunked prefill into a Dk×Dv state, then one gated delta step per token",
        extra_inputs=(HEAD_GATE, BETA),
        check_params=(*STRONG_GATES, {"gate_regime": "production"}),
    )
)
