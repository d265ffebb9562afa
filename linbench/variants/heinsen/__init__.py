"""heinsen: softmax attention with constant cost per token (Heinsen, 2024, and its reference code).

The ``v`` argument is log V and the result is log Y, with
Y_i = Σ_j exp(q_i)·exp(k_j) exp(log v_j) / Σ_j exp(q_i)·exp(k_j).
"""

from __future__ import annotations

from functools import partial

from linbench.variants.declarations import Decoder, Impl
from linbench.variants.feature_forms.impls import CHUNK_SIZE, kernel_impl
from linbench.variants.flops import linear_flops
from linbench.variants.heinsen.chunked import chunked, prefill
from linbench.variants.heinsen.kernel import kernel
from linbench.variants.heinsen.naive import naive
from linbench.variants.heinsen.quadratic import quadratic
from linbench.variants.heinsen.recurrent import recurrent, stream
from linbench.variants.registry import register_variant
from linbench.variants.variant import Variant

VARIANT = register_variant(
    Variant(
        name="heinsen",
        summary="log Y, Y_i = Σ_j exp(q_i)·exp(k_j) V_j / Σ_j exp(q_i)·exp(k_j); v is log V",
        impl_list=(
            Impl(
                "quadratic",
                quadratic,
                "softmax(log(exp(Q)exp(K)ᵀ))·exp(log V) (the reference)",
                "O(s²d)",
                "O(s²)",
                time_exponent=2,
            ),
            Impl(
                "naive",
                naive,
                "the paper's logcumsumexp scans with their S×Dk×Dv states",
                "O(sd²)",
                "O(sd²)",
                time_exponent=1,
                gqa=True,
            ),
            Impl(
                "chunked",
                chunked,
                "log-space chunks with a Dk×Dv log-state and running maxima",
                "O(sd²)",
                "O(sd)",
                time_exponent=1,
                params=(CHUNK_SIZE,),
                gqa=True,
            ),
            Impl(
                "recurrent",
                recurrent,
                "sequential log-space state, constant cost per token",
                "O(sd²)",
                "O(d²)",
                time_exponent=1,
                gqa=True,
            ),
            kernel_impl(kernel, "csrc/ chunked kernel on shifted exponential features, maxima carried with the state"),
        ),
        reference="quadratic",
        param_specs=(),
        flop_formula=partial(linear_flops, normalised=True),
        time_complexity="O(sd²)",
        time_exponent=1,
        memory_complexity="O(sd)",
        auto_order=("chunked", "recurrent", "quadratic"),
        source="Heinsen, Softmax Attention with Constant Cost per Token (2024)",
        stream=stream,
        decoder_list=(
            Decoder(
                "recurrent",
                "chunked log-space prefill, then one log-space state update per token (constant cost per token)",
                prefill,
                stream,
                state_memory="O(d²)",
                step_time="O(d²)",
                state_exponent=0,
                step_exponent=0,
                gqa=True,
            ),
        ),
    )
)
