"""The machine's pace: a fixed reference call timed beside each repetition of a one-thread CPU point.

On a virtual machine the speed of a core is not constant: on the 2-core KVM machine CI runs on,
a one-thread matmul loop took 0.49, 0.65 or 0.88 ms a call in phases of a fraction of a second
to about two seconds each, the two cores' phases unrelated (their 100 ms medians spread σ 0.12–0.15
in log, lag-one autocorrelation 0.74 at 100 ms, none between the cores; docs/gate.md). A
process that times a point for 0.1 s lands in one phase, so the processes of one point spread by
σ̂ 0.15 whatever the code does, and a gate needs tens of rounds to resolve +30%. The phases slow
most work nearly alike: an elementwise pass and a cumulative sum timed beside that matmul
moved with it, their ratios to it spreading σ 0.04 over the same windows where each alone spread
0.17–0.18.

So a one-thread CPU repetition is timed between two of these reference calls, in the same
thread (the one after a call is the one before the next), and the process records the p20 of
the call's CPU time divided by the mean of those two (``paced_p20``: the call's cost in
reference calls, out of which the phase divides) beside its plain times, and the reference's
median CPU time (``pace_ms``: the pace itself). The gate judges the paced
figure where both sides have it (linbench/gate/statistic.py). The reference is fixed work, the
same in every revision that has it (``PACE_WORK`` names it; a gate compares paced figures only
between processes that name the same one), small beside the calls a gate times (0.12–0.25 ms
on that machine, against their 0.5–13 ms) and not counted in the timing budget.
"""

from __future__ import annotations

import torch

# What the reference call does; recorded with every paced process, so that paced figures are
# compared only where both sides divided by the same work.
PACE_WORK = "fp32 (1,4,64,32) q·qᵀ·q, one thread"


class Pace:
    """The reference call: two fp32 batched matmuls on fixed tensors, made once a process."""

    def __init__(self) -> None:
        generator = torch.Generator().manual_seed(0)
        self._q = torch.randn(1, 4, 64, 32, generator=generator)
        self._scores = torch.empty(1, 4, 64, 64)
        self._out = torch.empty(1, 4, 64, 32)
        for _ in range(3):  # the first calls pick kernels and touch pages: not the pace
            self()

    def __call__(self) -> None:
        torch.matmul(self._q, self._q.transpose(-1, -2), out=self._scores)
        torch.matmul(self._scores, self._q, out=self._out)


def paced(threads: int, device_type: str) -> bool:
    """Whether a point's repetitions are paced: on a CPU with one torch thread, where the gate
    judges CPU time (several threads' pool spins, which the reference's one-thread call does not
    share)."""
    return device_type == "cpu" and threads == 1
