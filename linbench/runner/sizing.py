"""A planned sweep against the device's memory and the clock, before anything runs.

linbench/sweep/estimate.py holds the model (what a point holds, how long it takes); the plan's
kind (linbench/runner/kinds.py) feeds it what the variants declare: each impl's and decoder's
power of the length s (``Impl.time_exponent``, ``Decoder.state_exponent`` and
``step_exponent``) and each point's FLOPs.
"""

from __future__ import annotations

from collections.abc import Sequence

from linbench.machine.facts import device_memory_bytes
from linbench.runner.plan import RunPlan
from linbench.sweep.estimate import check_fits, estimate_s
from linbench.sweep.points import Point


def fit_and_estimate(plan: RunPlan, pending: Sequence[Point]) -> float:
    """Refuse sizes the device cannot hold at all (SweepTooLargeError); the seconds the
    pending points will take by linbench.sweep.estimate's rough model."""
    check_fits(plan.points, device_memory_bytes(plan.device), plan.kind)
    # Every point is measured in at least plan.processes.wanted processes (more where they disagree).
    return estimate_s(pending, plan.timing, plan.timeout_s, plan.kind) * plan.processes.wanted
