"""linear: Katharopoulos et al. (2020), "Transformers are RNNs"."""

from __future__ import annotations

from functools import partial

from linbench.variants.declarations import Impl, Param
from linbench.variants.feature_forms.compiled import compiled_impl
from linbench.variants.feature_forms.fla import fla_impl
from linbench.variants.feature_forms.impls import feature_map_decoder, feature_map_impls, feature_map_stream
from linbench.variants.flops import linear_flops
from linbench.variants.impl_helpers import positive_number_problem
from linbench.variants.linear.features import linear_features, quadratic
from linbench.variants.linear.fla import LINEAR_DEFAULT_EPS, LINEAR_SUMMARY, linear_fla
from linbench.variants.linear.kernel import kernel
from linbench.variants.registry import register_variant
from linbench.variants.variant import Variant

VARIANT = register_variant(
    Variant(
        name="linear",
        summary="O_i = φ(q_i)ᵀ Σ_j φ(k_j) v_jᵀ / (φ(q_i)ᵀ Σ_j φ(k_j) + eps), φ = elu + 1",
        impl_list=(
            Impl(
                "quadratic",
                quadratic,
                "masked S×S feature-map scores (the reference)",
                "O(s²d)",
                "O(s²)",
                time_exponent=2,
            ),
            *feature_map_impls(
                linear_features,
                {
                    "chunked": "chunkwise-parallel: masked matmul per chunk, Dk×Dv state and key sum across chunks",
                    "recurrent": "RNN form: S_t = S_{t−1} + φ(k_t) v_tᵀ, z_t = z_{t−1} + φ(k_t)",
                    "kernel": "csrc/ chunked kernel, elu + 1 fused into its loads, the normaliser in the same pass",
                },
                kernel=kernel,
            ),
            compiled_impl(linear_features),
            fla_impl(linear_fla, LINEAR_SUMMARY),
        ),
        reference="quadratic",
        param_specs=(Param("eps", LINEAR_DEFAULT_EPS, "added to the row normaliser", check=positive_number_problem),),
        flop_formula=partial(linear_flops, normalised=True),
        time_complexity="O(sd²)",
        time_exponent=1,
        memory_complexity="O(sd)",
        auto_order=("chunked", "recurrent", "quadratic"),
        source="Katharopoulos et al., Transformers are RNNs (ICML 2020)",
        stream=feature_map_stream(linear_features),
        decoder_list=(feature_map_decoder(linear_features),),
    )
)
