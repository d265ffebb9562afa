"""cosformer: Qin et al. (2022), cosFormer (and its notes and reference code)."""

from __future__ import annotations

from linbench.variants.cosformer.features import cosformer_features, quadratic
from linbench.variants.declarations import Impl, Param
from linbench.variants.feature_forms.compiled import compiled_impl
from linbench.variants.feature_forms.impls import feature_map_decoder, feature_map_impls, feature_map_stream
from linbench.variants.flops import linear_flops
from linbench.variants.impl_helpers import positive_number_problem
from linbench.variants.registry import register_variant
from linbench.variants.variant import Variant


def cosformer_flops(batch: int, heads: int, seq: int, dim_k: int, dim_v: int, causal: bool, mode: str) -> float:
    """A normalised linear attention of feature width 2·Dk (the cos and sin halves)."""
    return linear_flops(batch, heads, seq, 2 * dim_k, dim_v, causal, mode, normalised=True)


VARIANT = register_variant(
    Variant(
        name="cosformer",
        summary="O_i = Σ_j w_ij φ(q_i)·φ(k_j) v_j / (Σ_j w_ij φ(q_i)·φ(k_j) + eps), w_ij = cos(π/2·(i−j)/M), φ = ReLU",
        impl_list=(
            Impl(
                "quadratic",
                quadratic,
                "explicit S×S cos(π/2·(i−j)/M) weights (the reference)",
                "O(s²d)",
                "O(s²)",
                time_exponent=2,
            ),
            *feature_map_impls(
                cosformer_features,
                {
                    "naive": "the notes' cos/sin decomposition with prefix sums of outer products",
                    "chunked": "chunkwise-parallel over the width-2·Dk cos/sin features",
                    "recurrent": "RNN form over the cos/sin features, one token at a time",
                    "kernel": "csrc/ chunked kernel over the width-2·Dk cos/sin features, normaliser in the same pass",
                },
                feature_width=2,
            ),
            compiled_impl(cosformer_features, length_params=("M",)),
        ),
        reference="quadratic",
        param_specs=(
            Param(
                "M",
                None,
                "re-weighting scale M (≥ S keeps weights positive); defaults to S",
                from_length=True,
                check=positive_number_problem,
            ),
            Param("eps", 1e-6, "added to the row normaliser", check=positive_number_problem),
        ),
        flop_formula=cosformer_flops,
        time_complexity="O(sd²)",
        time_exponent=1,
        memory_complexity="O(sd)",
        auto_order=("chunked", "recurrent", "quadratic"),
        source="Qin et al., cosFormer (ICLR 2022)",
        stream=feature_map_stream(cosformer_features),
        decoder_list=(feature_map_decoder(cosformer_features),),
    )
)
