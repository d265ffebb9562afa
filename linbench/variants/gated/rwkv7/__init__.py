"""rwkv7: RWKV-7's time-mixing core (Peng et al. 2025, arXiv:2503.14456), the generalized delta
rule of fla's ``rwkv7`` and ``generalized_delta_rule/dplr`` ops.

S_t = (diag(e^{w_t}) − κ̂_t (a_t ⊙ κ̂_t)ᵀ) S_{t−1} + k_t v_tᵀ, o_t = S_tᵀ r_t (inputs.py). The
PyTorch forms are the DPLR recurrence's (dplr_*.py); ``fla`` and ``fla-recurrent`` are
fla-core's chunk_rwkv7 and fused_recurrent_rwkv7 (fla.py).
"""

from __future__ import annotations

from linbench.variants.gated.flops import delta_flops
from linbench.variants.gated.impls import INITIAL_STATE, gated_decoder, gated_impls, gated_stream
from linbench.variants.gated.rwkv7.fla import rwkv7_fla_decoder, rwkv7_fla_impls
from linbench.variants.gated.rwkv7.inputs import DECAY, RATE, REMOVAL_KEY, SCALE, prepare
from linbench.variants.registry import register_variant
from linbench.variants.variant import Variant

FORMS = {
    "recurrent": (
        "decay per channel, remove along κ̂ at rate a, add k vᵀ, token by token (the reference, in fp64)",
        "O(d²)",
    ),
    "quadratic": ("the DPLR solve over the whole sequence, each pair's per-channel decay on its own", "O(s²d)"),
    "chunked": ("the DPLR/WY form in chunks, per-channel decays cumulated from each chunk's start", "O(sd)"),
}

VARIANT = register_variant(
    Variant(
        name="rwkv7",
        summary="RWKV-7: S_t = (diag(e^{w_t}) − κ̂_t (a_t ⊙ κ̂_t)ᵀ) S_{t−1} + k_t v_tᵀ, o_t = S_tᵀ r_t",
        impl_list=(*gated_impls("rwkv7", prepare, dict(FORMS), {"quadratic": 4}), *rwkv7_fla_impls()),
        reference="recurrent",
        param_specs=(SCALE, INITIAL_STATE),
        flop_formula=delta_flops,
        time_complexity="O(sd²)",
        memory_complexity="O(sd)",
        auto_order=("chunked", "recurrent", "quadratic"),
        source='RWKV-7 "Goose" with Expressive Dynamic State Evolution (Peng et al., 2025), arXiv:2503.14456',
        stream=gated_stream(prepare),
        decoder_list=(
            gated_decoder(prepare, "chunked prefill into a Dk×Dv state, then one RWKV-7 step per token"),
            rwkv7_fla_decoder(),
        ),
        extra_inputs=(DECAY, REMOVAL_KEY, RATE),
        masking=("causal",),
        value_heads=True,
    )
)
