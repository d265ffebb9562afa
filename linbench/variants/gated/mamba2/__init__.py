"""mamba2: Mamba2's SSD layer core (Dao and Gu 2024, arXiv:2405.21060) with its own inputs.

Δ_t = softplus(dt_t + dt_bias), S_t = e^{Δ_t A} S_{t−1} + Δ_t B_t x_tᵀ, y_t = S_tᵀ C_t + D x_t,
A = −e^{A_log}; q, k, v are C, B (G groups of heads) and x (H value heads), dt an extra input
per head and token (inputs.py). The PyTorch forms are the decaying family's (simple-gla's)
on the reduced inputs, with the D skip added (skip.py); ``mamba-ssm`` is mamba-ssm's own Triton
SSD chunk scan, and its decoder ``selective_state_update`` (ssd.py, ssd_decoder.py).
"""

from __future__ import annotations

from linbench.variants.declarations import Impl
from linbench.variants.gated.family import per_value_head
from linbench.variants.gated.flops import decay_flops
from linbench.variants.gated.impls import INITIAL_STATE, gated_decoder, gated_impls, gated_stream
from linbench.variants.gated.mamba2 import library
from linbench.variants.gated.mamba2.inputs import A_LOG, DT, DT_BIAS, SKIP, prepare
from linbench.variants.gated.mamba2.skip import decoder_with_skip, impl_with_skip, stream_with_skip
from linbench.variants.gated.mamba2.ssd import CHUNK_SIZE, mamba_ssm_impl, mamba_ssm_packed
from linbench.variants.gated.mamba2.ssd_decoder import mamba_ssm_decoder
from linbench.variants.registry import register_variant
from linbench.variants.variant import Variant

FORMS = {
    "recurrent": ("the SSD recurrence token by token, then + D·x (the reference, in fp64)", "O(d²)"),
    "quadratic": ("SSD's quadratic (attention) form: (C Bᵀ ⊙ L) (Δ·x) with L_ts = e^{A(Δ-sum t..s)}, + D·x", "O(s²)"),
    "chunked": ("SSD's chunked form: decays cumulated from each chunk's start, an N×P state between chunks", "O(sd)"),
}
_PREPARE = per_value_head(prepare)


def _mamba_ssm() -> Impl:
    return Impl(
        "mamba-ssm",
        mamba_ssm_impl,
        "mamba-ssm's mamba_chunk_scan_combined (Triton SSD, forward and backward; packs by seq_idx); "
        "(B, S, H, D) layout made untimed; unverified on a GPU here",
        "O(sd²)",
        "O(sd)",
        params=(CHUNK_SIZE,),
        availability=library.unavailable,
        optional=True,
        layout="bshd",
        library=library.DISTRIBUTION,
        time_exponent=1,
        packed=mamba_ssm_packed,
        gva=True,
    )


VARIANT = register_variant(
    Variant(
        name="mamba2",
        summary="Mamba2 SSD: S_t = e^{ΔA} S_{t−1} + Δ B_t x_tᵀ, y_t = S_tᵀ C_t + D x_t",
        impl_list=(
            *(impl_with_skip(impl) for impl in gated_impls("mamba2", _PREPARE, dict(FORMS))),
            _mamba_ssm(),
        ),
        reference="recurrent",
        param_specs=(A_LOG, DT_BIAS, SKIP, INITIAL_STATE),
        flop_formula=decay_flops,
        time_complexity="O(sd²)",
        memory_complexity="O(sd)",
        auto_order=("chunked", "recurrent", "quadratic"),
        source="Transformers are SSMs: Mamba2's SSD (Dao and Gu, 2024), arXiv:2405.21060; mamba-ssm",
        stream=stream_with_skip(gated_stream(_PREPARE)),
        decoder_list=(
            decoder_with_skip(
                gated_decoder(_PREPARE, "chunked prefill into an N×P state, then one SSD step per token")
            ),
            mamba_ssm_decoder(),
        ),
        extra_inputs=(DT,),
        masking=("causal",),
        # Besides the drawn init: steps near softplus(x + 1) ≈ 1.3 with A up to 16, so a token can
        # forget e^{-20} and more: the far end of a trained Mamba2's decays, where a form's
        # exponentials of cumulated decays are hardest.
        check_params=({"dt_bias": 1.0},),
        value_heads=True,
    )
)
