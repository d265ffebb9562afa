"""A plan against memory and the clock, from what the variants declare (CPU, nothing runs)."""

from __future__ import annotations

import pytest
import torch

from linbench.runner.plan import RunPlan, make_plan
from linbench.runner.run_kind import call_flops
from linbench.runner.sizing import fit_and_estimate
from linbench.shape import Shape
from linbench.sweep.estimate import SweepTooLargeError
from linbench.sweep.points import Point
from linbench.sweep.request import SweepRequest
from linbench.sweep.spec import build_spec
from linbench.variants.flops import quadratic_flops
from linbench.variants.registry import get_variant


def test_an_impl_quadratic_where_its_variant_is_not_is_counted_with_s_by_s_flops() -> None:
    shape = Shape(1, 2, 1024, 16, 16)
    quadratic, chunked = (Point("cosine", impl, "fwd", True, "fp32", "cpu", shape) for impl in ("quadratic", "chunked"))
    assert call_flops(quadratic) == quadratic_flops(1, 2, 1024, 16, 16, True, "fwd")
    assert call_flops(chunked) == get_variant("cosine").flops(1, 2, 1024, 16, 16, True, "fwd")
    assert call_flops(quadratic) > 10 * call_flops(chunked)


def decode_plan(decoder: str, context: str, batch: str = "1") -> RunPlan:
    request = SweepRequest(
        command="decode", variants=(decoder,), no_against=True, context=context, batch=batch, device="cpu"
    )
    return make_plan(build_spec(request), torch.device("cpu"), "test cpu")


def estimate(plan: RunPlan) -> float:
    return fit_and_estimate(plan, plan.points)


def test_a_decoder_s_declared_step_sets_its_estimate() -> None:
    # softmax:recompute's step is O(s²d) (step_exponent 2), kvcache's O(sd) (1).
    assert estimate(decode_plan("softmax:recompute", "64k")) > estimate(decode_plan("softmax:kvcache", "64k"))


def test_a_decoder_s_declared_state_sets_its_fit() -> None:
    assert estimate(decode_plan("cosine:recurrent", "1m", batch="1m")) > 0  # a fixed state fits at any context
    with pytest.raises(SweepTooLargeError, match="softmax:kvcache"):
        estimate(decode_plan("softmax:kvcache", "1m", batch="1m"))  # a cache grows with it


def test_the_estimate_adds_the_tuning_of_the_points_the_store_of_choices_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    from linbench.runner import sizing

    request = SweepRequest(variants=("cosine:chunked",), no_against=True, seq="64", device="cpu")
    plan = make_plan(build_spec(request), torch.device("cpu"), "test cpu")
    warm = estimate(plan)
    monkeypatch.setattr(sizing, "cold_s", lambda pending, params_of, device_name: 7.0 * len(pending))
    assert estimate(plan) == pytest.approx(warm + 7.0 * len(plan.points))
    assert sizing.most_estimate(plan, plan.points) >= warm + 7.0
