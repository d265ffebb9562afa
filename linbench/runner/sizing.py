"""A planned sweep against the device's memory and the clock, before anything runs.

linbench/sweep/estimate.py holds the model (what a point holds, how long it takes); this
module feeds it what the variants declare: each impl's and decoder's power of the length s
(``Impl.time_exponent``, ``Decoder.state_exponent`` and ``step_exponent``) and each point's
FLOPs.
"""

from __future__ import annotations

from collections.abc import Sequence

from linbench.machine.facts import device_memory_bytes
from linbench.results.schema import DECODE_MODE
from linbench.runner.plan import RunPlan
from linbench.sweep.estimate import check_fits, estimate_s
from linbench.sweep.points import Point
from linbench.variants.flops import quadratic_flops
from linbench.variants.registry import Decoder, get_variant


def fit_and_estimate(plan: RunPlan, pending: Sequence[Point]) -> float:
    """Refuse sizes the device cannot hold at all (SweepTooLargeError); the seconds the
    pending points will take by linbench.sweep.estimate's rough model."""
    decoders = _decoders(plan)
    grows = {pair: decoder.state_grows for pair, decoder in decoders.items()}
    decode = [p for p in plan.points if p.mode == DECODE_MODE]
    check_fits(plan.points, device_memory_bytes(plan.device), grows if decode else None)
    flops = {point: call_flops(point) for point in pending if point.mode != DECODE_MODE}
    steps = {pair: decoder.step_exponent or 0 for pair, decoder in decoders.items()}
    # Every point is measured in at least plan.processes.wanted processes (more where they disagree).
    return estimate_s(pending, plan.timing, plan.timeout_s, flops, steps) * plan.processes.wanted


def call_flops(point: Point) -> float:
    """The FLOPs of one call: the variant's count, or the S×S count for an impl that is
    quadratic in time where its variant is not (cosine:quadratic)."""
    variant = get_variant(point.variant)
    if variant.impl(point.impl).time_exponent == 2 and variant.time_exponent != 2:
        return quadratic_flops(*point.shape.sizes(), point.causal, point.mode)
    return variant.flops(*point.shape.sizes(), point.causal, point.mode)


def _decoders(plan: RunPlan) -> dict[tuple[str, str], Decoder]:
    """The decoders the plan's (variant, name) pairs name; only decode points read them (an
    impl of a ``run`` sweep may share a decoder's name, as cosine:recurrent does)."""
    found: dict[tuple[str, str], Decoder] = {}
    for variant_name, name in plan.targets.pairs:
        decoder = get_variant(variant_name).decoders.get(name)
        if decoder is not None:
            found[(variant_name, name)] = decoder
    return found
