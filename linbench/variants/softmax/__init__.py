"""softmax: softmax(Q K^T / sqrt(Dk) + causal mask) V, the quadratic baseline."""

from __future__ import annotations

from linbench.variants.declarations import Decoder, Impl, Param
from linbench.variants.flops import quadratic_flops
from linbench.variants.impl_helpers import one_of
from linbench.variants.libraries import softmax_library_impls
from linbench.variants.registry import register_variant
from linbench.variants.softmax.decode import kvcache_prefill, kvcache_step, recompute_prefill, recompute_step
from linbench.variants.softmax.naive import naive, naive_masked
from linbench.variants.softmax.packed import sdpa_packed, varlen_impl
from linbench.variants.softmax.sdpa import BACKENDS, backend_impls, sdpa, sdpa_masked
from linbench.variants.variant import Variant
from linbench.variants.varlen import per_sequence

VARIANT = register_variant(
    Variant(
        name="softmax",
        summary="O = softmax(QKᵀ/√Dk + causal mask)·V",
        impl_list=(
            Impl(
                "naive",
                naive,
                "materialises the S×S scores (the reference)",
                "O(s²d)",
                "O(s²)",
                time_exponent=2,
                packed=per_sequence(naive),
                key_masked=naive_masked,
                gqa=True,
            ),
            Impl(
                "sdpa",
                sdpa,
                "torch scaled_dot_product_attention (flash / efficient / math / cudnn)",
                "O(s²d)",
                "O(sd)",
                time_exponent=2,
                params=(
                    Param("backend", "auto", f"SDPA backend to pin: {', '.join(BACKENDS)}", check=one_of(*BACKENDS)),
                ),
                packed=sdpa_packed,
                key_masked=sdpa_masked,
                gqa=True,
            ),
            *backend_impls(),
            varlen_impl(),
            *softmax_library_impls(),
        ),
        reference="naive",
        param_specs=(),
        flop_formula=quadratic_flops,
        time_complexity="O(s²d)",
        memory_complexity="O(s²)",
        time_exponent=2,
        auto_order=("sdpa", "naive"),
        source="Vaswani et al. (2017); Cottention eq. 1",
        # Streaming continues through a KV cache: the state grows with every token.
        stream=kvcache_step,
        decoder_list=(
            Decoder(
                "kvcache",
                "K and V of every token cached; one query against the cache per step (SDPA)",
                kvcache_prefill,
                kvcache_step,
                state_memory="O(sd)",
                step_time="O(sd)",
                state_exponent=1,
                step_exponent=1,
                gqa=True,
            ),
            Decoder(
                "recompute",
                "full causal attention over the whole prefix every step, S×S scores and all (naive)",
                recompute_prefill,
                recompute_step,
                state_memory="O(sd)",
                step_time="O(s²d)",
                state_exponent=1,
                step_exponent=2,
                gqa=True,
            ),
        ),
    )
)
