"""A planned sweep against the device's memory and the clock, before anything runs.

linbench/sweep/estimate.py holds the model (what a point holds, how long it takes); the plan's
kind (linbench/runner/kinds.py) feeds it what the variants declare: each impl's and decoder's
power of the length s (``Impl.time_exponent``, ``Decoder.state_exponent`` and
``step_exponent``) and each point's FLOPs.

The first use of linbench's compiled kernels builds csrc/ (linbench/kernels/build.py) while the
plan checks which impls can run: a command that starts with the build cache lacking it pays the
build too, and its estimate counts it (``KernelBuild``). So does a Triton impl's point whose
autotune choices linbench's store lacks: its first process compiles and tunes its kernels
(runner/triton_tuning.py's ``cold_s``; ``linbench warm`` fills the store ahead).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from linbench.machine.facts import device_memory_bytes
from linbench.runner.plan import RunPlan
from linbench.runner.triton_tuning import cold_s
from linbench.sweep.estimate import BUILD_S, check_fits, device_type, estimate_s
from linbench.sweep.points import Point


def fit_and_estimate(plan: RunPlan, pending: Sequence[Point]) -> float:
    """Refuse sizes the device cannot hold at all (SweepTooLargeError); the seconds the
    pending points will take by linbench.sweep.estimate's rough model, each point in the
    processes asked for (``--processes``)."""
    check_fits(plan.points, device_memory_bytes(plan.device), plan.kind)
    tuning = cold_s(pending, plan.point_params, plan.device_name)
    return estimate_s(pending, plan.timing, plan.timeout_s, plan.kind, plan.processes.wanted) + tuning


def most_estimate(plan: RunPlan, pending: Sequence[Point]) -> float:
    """The estimate were every point's processes to disagree and grow to the most the protocol
    allows (``--max-processes``): the top of the range a run's start line gives."""
    tuning = cold_s(pending, plan.point_params, plan.device_name)
    return estimate_s(pending, plan.timing, plan.timeout_s, plan.kind, plan.processes.most) + tuning


@dataclass(frozen=True)
class KernelBuild:
    """Whether planning built csrc/ (the build cache lacked it when the command started, and
    the plan asked whether a kernel impl can run), what the model says that costs, and what it
    took with the planning around it."""

    built: bool
    estimate_s: float
    took_s: float | None

    @classmethod
    def around(cls, planning: Callable[[], RunPlan]) -> tuple[RunPlan, KernelBuild]:
        """The plan ``planning`` makes, and whether it built the kernels on the way."""
        cold = not _kernels_cached()
        started = time.monotonic()
        plan = planning()
        built = cold and _kernels_loaded()
        if not built:
            return plan, NO_BUILD
        return plan, cls(True, BUILD_S[device_type(plan.device.type)], time.monotonic() - started)


NO_BUILD = KernelBuild(False, 0.0, None)


def _kernels_cached() -> bool:
    """Whether the build cache holds csrc/'s build (or its remembered failure): a read-only look."""
    from linbench.kernels.build import is_built

    return is_built()


def _kernels_loaded() -> bool:
    """Whether this process has loaded (and so, from a cold cache, built) the kernels."""
    from linbench.kernels.build import load_kernels

    return load_kernels.cache_info().currsize > 0
