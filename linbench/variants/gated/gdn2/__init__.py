"""gdn2: Gated DeltaNet-2 (Hatamizadeh, Choi and Kautz 2026, "Decoupling Erase and Write in
Linear Attention", arXiv:2605.22791).

S_t = (I − k_t (b_t ⊙ k_t)ᵀ) diag(e^{g_t}) S_{t−1} + k_t (w_t ⊙ v_t)ᵀ, o_t = S_tᵀ (q_t · Dk^-1/2),
q and k L2-normalised; g (log-decay) and b (erase) per key channel, w (write) per value
channel (inputs.py). The PyTorch forms are the DPLR recurrence's (dplr_*.py); ``fla`` and
``fla-recurrent`` are fla-core's chunk_gdn2 and fused_recurrent_gdn2 (fla.py).
"""

from __future__ import annotations

from linbench.variants.gated.flops import delta_flops
from linbench.variants.gated.gdn2.fla import gdn2_fla_impls
from linbench.variants.gated.gdn2.fla_decoder import gdn2_fla_decoder
from linbench.variants.gated.gdn2.inputs import ERASE, GATE, WRITE, prepare
from linbench.variants.gated.impls import (
    INITIAL_STATE,
    SCALE,
    STRONG_GATES,
    gated_decoder,
    gated_impls,
    gated_stream,
)
from linbench.variants.registry import register_variant
from linbench.variants.variant import Variant

FORMS = {
    "recurrent": (
        "decay per channel, erase along b ⊙ k, write w ⊙ v, token by token (the reference, in fp64)",
        "O(d²)",
    ),
    "quadratic": ("the DPLR solve over the whole sequence, each pair's per-channel decay on its own", "O(s²d)"),
    "chunked": ("the DPLR/WY form in chunks, per-channel decays cumulated from each chunk's start", "O(sd)"),
}

VARIANT = register_variant(
    Variant(
        name="gdn2",
        summary="S_t = (I − k_t (b_t ⊙ k_t)ᵀ) diag(e^{g_t}) S_{t−1} + k_t (w_t ⊙ v_t)ᵀ; o_t = S_tᵀ q_t, q, k normed",
        impl_list=(*gated_impls("gdn2", prepare, dict(FORMS), {"quadratic": 4}), *gdn2_fla_impls()),
        reference="recurrent",
        param_specs=(SCALE, INITIAL_STATE),
        flop_formula=delta_flops,
        time_complexity="O(sd²)",
        memory_complexity="O(sd)",
        auto_order=("chunked", "recurrent", "quadratic"),
        source="Gated DeltaNet-2: Decoupling Erase and Write in Linear Attention (Hatamizadeh, Choi and Kautz, 2026), "
        "arXiv:2605.22791",
        stream=gated_stream(prepare),
        decoder_list=(
            gated_decoder(prepare, "chunked prefill into a Dk×Dv state, then one erase-and-write step per token"),
            gdn2_fla_decoder(),
        ),
        extra_inputs=(GATE, ERASE, WRITE),
        masking=("causal",),
        check_params=(*STRONG_GATES, {"gate_regime": "lower-bound"}),
        value_heads=True,
    )
)
