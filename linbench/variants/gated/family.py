"""A gated family as data, and the one function that turns it into a registered variant.

The six families share everything but their maths: each reduces its inputs to a decaying or a
delta-rule recurrence (``prepare``, linbench/variants/gated/impls.py), and from there the
three PyTorch forms, fla's two kernels, the stream, the decoder, the reference (the recurrent
form, in fp64), the impl tried first by ``auto`` (chunked), the variant's complexity and its
masking (causal only: a state that decays or is overwritten in token order has no
bidirectional form) are the same for all; gated-deltanet and kda also decode with fla's fused
recurrent kernels (``fla-recurrent``, fla_decoder.py). A family declares only what is its own. Every
family takes more value heads than q/k heads (GVA): its forms repeat q and k to v's heads
before ``prepare`` (``per_value_head``), fla's gated delta rule and kda kernels take them
natively.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from linbench.variants.declarations import FlopsFn, Param
from linbench.variants.extra_inputs import ExtraInput
from linbench.variants.gated.fla_decoder import fla_decoders
from linbench.variants.gated.fla_impls import gated_fla_impls
from linbench.variants.gated.impls import (
    INITIAL_STATE,
    SCALE,
    Inputs,
    Prepare,
    gated_decoder,
    gated_impls,
    gated_stream,
)
from linbench.variants.heads import repeat_qk
from linbench.variants.libraries import gated_library_impls
from linbench.variants.registry import register_variant
from linbench.variants.variant import Variant


@dataclass(frozen=True)
class GatedFamily:
    """What one gated family declares; ``gated_variant`` makes the rest."""

    name: str
    summary: str
    # Reduces q, k, v, the parameters and the extra inputs to the recurrence's inputs.
    prepare: Prepare
    # Each PyTorch form ("recurrent", "quadratic", "chunked", in that order) → (summary, memory).
    forms: Mapping[str, tuple[str, str]]
    flops: FlopsFn
    source: str
    decoder_summary: str
    params: tuple[Param, ...] = (SCALE,)
    extra_inputs: tuple[ExtraInput, ...] = ()
    # Settings ``linbench check`` checks at besides the defaults (Variant.check_params).
    check_params: tuple[Mapping[str, Any], ...] = ()
    # Form → the tensors of its memory declaration's size it was measured to hold at its peak
    # (Impl.working_copies); a form not named takes the sweep's least.
    working_copies: Mapping[str, int] = field(default_factory=dict)


def per_value_head(prepare: Prepare) -> Prepare:
    """``prepare`` for v with more heads than q and k (GVA): q and k repeated to v's heads first,
    so the state, the gates, β and a per-head decay are per value head in every form."""

    def prepared(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **params: Any) -> Inputs:
        q, k = repeat_qk(q, k, v)
        return prepare(q, k, v, **params)

    return prepared


def gated_variant(family: GatedFamily) -> Variant:
    """The variant ``family`` declares: its forms and fla's kernels, stream and decoder."""
    prepare = per_value_head(family.prepare)
    return Variant(
        name=family.name,
        summary=family.summary,
        impl_list=(
            *gated_impls(family.name, prepare, dict(family.forms), family.working_copies),
            *gated_fla_impls(family.name, family.extra_inputs),
            *gated_library_impls(family.name),
        ),
        reference="recurrent",
        param_specs=(*family.params, INITIAL_STATE),
        flop_formula=family.flops,
        time_complexity="O(sd²)",
        memory_complexity="O(sd)",
        auto_order=("chunked", "recurrent", "quadratic"),
        source=family.source,
        stream=gated_stream(prepare),
        decoder_list=(gated_decoder(prepare, family.decoder_summary), *fla_decoders(family.name)),
        extra_inputs=family.extra_inputs,
        masking=("causal",),
        check_params=family.check_params,
        value_heads=True,
    )


def register_family(family: GatedFamily) -> Variant:
    """Register the variant ``family`` declares (a built-in: ``linbench list`` shows it)."""
    return register_variant(gated_variant(family))
