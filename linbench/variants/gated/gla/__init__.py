"""gla: Gated Linear Attention (Yang, Wang, Shen, Panda and Kim 2023, arXiv:2312.06635).

S_t = diag(e^{g_t}) S_{t−1} + k_t v_tᵀ, o_t = S_tᵀ (q_t · Dk^-1/2), g_t ∈ (−∞, 0]^{Dk}: every
key channel (row of the state) decays at its own data-dependent rate.
"""

from __future__ import annotations

from typing import Any

import torch

from linbench.variants.gated.family import GatedFamily, register_family
from linbench.variants.gated.flops import decay_flops
from linbench.variants.gated.gates import CHANNEL_GATE
from linbench.variants.gated.impls import STRONG_GATES, DecayInputs
from linbench.variants.gated.numerics import resolve_scale, upcast


def prepare(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, g: torch.Tensor, scale: Any) -> DecayInputs:
    """Scaled q and the per-channel gates, in the compute dtype."""
    q, k, v = upcast(q, k, v)
    return DecayInputs(q * resolve_scale(scale, q.shape[-1]), k, v, g.to(q.dtype))


VARIANT = register_family(
    GatedFamily(
        name="gla",
        summary="S_t = diag(e^{g_t}) S_{t−1} + k_t v_tᵀ, o_t = S_tᵀ q_t: a data-dependent decay per key channel",
        prepare=prepare,
        forms={
            "recurrent": ("the recurrence token by token (the reference, in fp64)", "O(d²)"),
            "quadratic": ("Σ_c q_tc k_sc e^{G_tc − G_sc} per pair in log space, then times V", "O(s²d)"),
            "chunked": ("GLA's chunkwise form: factored decays within bounded ranges, a Dk×Dv state", "O(sd)"),
        },
        flops=decay_flops,
        source="Gated Linear Attention (Yang et al., 2023), arXiv:2312.06635",
        decoder_summary="chunked prefill into a Dk×Dv state, then S_t = diag(e^{g_t}) S_{t−1} + k_t v_tᵀ",
        extra_inputs=(CHANNEL_GATE,),
        check_params=STRONG_GATES,
        working_copies={"quadratic": 4},  # 8 GiB at 1k (B1 H8 D64 fp32, fwd): 4 tensors of B·H·S²·Dk
    )
)
