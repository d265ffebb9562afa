"""cosine: Cottention's cosine attention (Mongaras et al., 2024, eq. 4)."""

from __future__ import annotations

from functools import partial

import torch

from linbench.variants.cosine.features import cosine_features
from linbench.variants.cosine.fla import COSINE_SUMMARY, cosine_fla
from linbench.variants.cosine.kernel import kernel
from linbench.variants.cosine.quadratic import quadratic
from linbench.variants.declarations import Impl, Param
from linbench.variants.feature_forms.compiled import compiled_impl
from linbench.variants.feature_forms.fla import fla_impl
from linbench.variants.feature_forms.impls import feature_map_decoder, feature_map_impls, feature_map_stream
from linbench.variants.flops import linear_flops
from linbench.variants.impl_helpers import finite_number_or_tensor_problem, positive_number_problem
from linbench.variants.registry import register_variant
from linbench.variants.variant import Variant


def draw_norm_const(heads: int, generator: torch.Generator) -> torch.Tensor:
    """A per-head m for the correctness gate, around the default 0.5, so its gradient is checked."""
    return 0.5 + 0.5 * torch.randn(heads, generator=generator, dtype=torch.float64)


VARIANT = register_variant(
    Variant(
        name="cosine",
        summary="O = (N(Q)·N(K)ᵀ ⊙ M)·V / s^σ(m), N = row-wise L2 normalisation",
        impl_list=(
            Impl(
                "quadratic",
                quadratic,
                "masked S×S similarity matrix (the reference)",
                "O(s²d)",
                "O(s²)",
                time_exponent=2,
            ),
            *feature_map_impls(
                cosine_features,
                {
                    "naive": "the paper's Appendix A: cumsum of V⊗K outer products",
                    "chunked": "chunkwise-parallel: masked matmul per chunk, Dk×Dv state across chunks",
                    "recurrent": "RNN form (§5): H_t = H_{t−1} + k_t v_tᵀ, one token at a time",
                    "kernel": "csrc/ chunked kernel, the L2 norms of q and k fused into its loads; fp32 state",
                },
                kernel=kernel,
            ),
            compiled_impl(cosine_features, length_params=("seq_len",)),
            fla_impl(cosine_fla, COSINE_SUMMARY),
        ),
        reference="quadratic",
        param_specs=(
            Param(
                "norm_const",
                0.5,
                "m: a float or a per-head tensor of shape (H,); learnable",
                check=finite_number_or_tensor_problem,
                learnable=draw_norm_const,
            ),
            Param(
                "seq_len",
                None,
                "s in s^σ(m); defaults to the sequence length S",
                from_length=True,
                check=positive_number_problem,
            ),
        ),
        flop_formula=partial(linear_flops, normalised=False),
        time_complexity="O(sd²)",
        time_exponent=1,
        memory_complexity="O(sd)",
        auto_order=("chunked", "recurrent", "quadratic"),
        source="Cottention (Mongaras et al., 2024)",
        stream=feature_map_stream(cosine_features),
        decoder_list=(feature_map_decoder(cosine_features),),
    )
)
