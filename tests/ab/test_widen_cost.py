"""What an impl ab adds for changed code costs, by the estimate, before any round runs."""

from __future__ import annotations

import pytest

from linbench.ab.widen_cost import added_seconds
from linbench.sweep.request import SweepRequest

SWEEP = SweepRequest(variants=("softmax:sdpa",), seq="1k..4k", heads=2, dim=16, device="cpu")


def test_an_added_impl_costs_its_points_on_both_sides_each_round() -> None:
    one = added_seconds(SWEEP, "gated-deltanet:recurrent", rounds=1)
    assert one is not None and one > 0
    assert added_seconds(SWEEP, "gated-deltanet:recurrent", rounds=5) == pytest.approx(5 * one, rel=0.2)
    fast = added_seconds(SWEEP, "gated-deltanet:chunked", rounds=1)
    assert fast is not None and fast < one  # the recurrent loop is the slow form at these lengths


def test_an_impl_that_cannot_be_planned_here_has_no_price() -> None:
    assert added_seconds(SWEEP, "gated-deltanet:fla", rounds=1) is None  # Triton kernels: CUDA only
