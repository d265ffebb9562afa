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


def test_an_added_impl_is_measured_at_the_sweeps_shortest_length_only() -> None:
    from dataclasses import replace

    from linbench.ab.widen_cost import first_points

    widened = replace(SWEEP, variants=("softmax:sdpa", "kda:quadratic"), no_against=True)
    points = first_points(widened, ("kda:quadratic",))
    assert points is not None
    seqs = {(key[0], key[1], key[8]) for key in points}
    assert seqs == {("softmax", "sdpa", s) for s in ("1024", "2048", "4096")} | {("kda", "quadratic", "1024")}
    assert first_points(widened, ()) is None  # nothing added: every point
