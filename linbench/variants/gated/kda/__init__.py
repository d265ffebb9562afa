"""kda: Kimi Delta Attention (Kimi Team, "Kimi Linear", 2025, arXiv:2510.26692).

S_t = (I − β_t k_t k_tᵀ) diag(e^{g_t}) S_{t−1} + β_t k_t v_tᵀ, o_t = S_tᵀ (q_t · Dk^-1/2), with
q and k L2-normalised, g_t ∈ (−∞, 0]^{Dk} a log-gate per key channel (gla's gate) and
β_t ∈ [0, 1]: the gated delta rule with gla's per-channel decay in place of Mamba2's scalar.
"""

from __future__ import annotations

from linbench.variants.gated.family import GatedFamily, register_family
from linbench.variants.gated.flops import delta_flops
from linbench.variants.gated.gated_deltanet import prepare  # the same inputs; only g's shape differs
from linbench.variants.gated.gates import BETA, KDA_GATE
from linbench.variants.gated.impls import STRONG_GATES

VARIANT = register_family(
    GatedFamily(
        name="kda",
        summary="S_t = (I − β_t k_t k_tᵀ) diag(e^{g_t}) S_{t−1} + β_t k_t v_tᵀ, o_t = S_tᵀ q_t; q, k L2-normalised",
        prepare=prepare,
        forms={
            "recurrent": ("decay per channel, then the delta step, token by token (the reference, in fp64)", "O(d²)"),
            "quadratic": ("the UT transform over the whole sequence, Σ_c k_tc k_sc e^{G_tc − G_sc} per pair", "O(s²d)"),
            "chunked": ("the WY/UT form in chunks, per-channel gates cumulated from each chunk's start", "O(sd)"),
        },
        flops=delta_flops,
        # 8.6 GB at 1k (B1 H8 D64 fp32, fwd): 4 tensors of B·H·S²·Dk, so a default sweep leaves it
        # out at 2k on a 24 GiB machine instead of running it out of memory.
        working_copies={"quadratic": 4},
        source="Kimi Linear: Kimi Delta Attention (Kimi Team, 2025), arXiv:2510.26692",
        decoder_summary="chunked prefill into a Dk×Dv state, then one per-channel-gated delta step per token",
        extra_inputs=(KDA_GATE, BETA),
        check_params=(*STRONG_GATES, {"gate_regime": "lower-bound"}),
    )
)
