"""One point of two runs compared, as the gate reports it: the two sides' statuses, judged times,
memory, kernel launches and host syncs, each with its verdict (points.py judges them; between.py measures
the between-run term on them; render.py prints them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from linbench.gate.statistic import P20, fell_back

TIME_FAILURES = ("regression",)
# A point that failed on both sides: no time to judge on either.
NOT_COMPARED = "not compared"
# A count or a memory reading recorded on one side only: not judged, and not passed either
# (an older run's schema, or a count that failed on one side).
ONE_SIDED = "one side only"
# The measures besides time, as the verdicts name them (one_sided; compare.py's predated).
MEMORY, LAUNCHES, HOST_SYNCS = "memory", "launches", "host syncs"


@dataclass(frozen=True)
class PointDiff:
    key: dict[str, Any]
    base_status: str
    status: str
    base_ms: float | None  # the judged time: the median across processes of ``statistic`` (paced: its CPU time)
    ms: float | None
    ratio: float | None
    timing: str  # graph (CUDA-graph replays judged) or eager
    base_processes: int
    processes: int
    spread: float | None  # σ̂ between processes, in log
    noise: float | None  # N: the change noise alone can make
    threshold: float | None  # T = max(max_slowdown, N)
    settled: bool | None  # False: a side's processes disagree and are too few to trust their spread
    # regression, slower, faster, same, noisy, unverified, oversubscribed, other threads, broken, fixed,
    # not compared
    time_verdict: str
    eager_ratio: float | None  # graph-timed points: the eager time, judged by the same rule
    # As time_verdict, or - where the eager time is the judged one. Information only: where a
    # CUDA graph timed the point, its eager time is mostly the host issuing launches, which
    # moves between processes (docs/gate.md); added launches fail through launch_verdict.
    eager_verdict: str
    base_bytes: float | None
    bytes: float | None
    memory_growth: float | None
    # same, smaller, larger, regression, one side only, - (memory.py: exact on GPUs, tolerant on CPUs)
    memory_verdict: str
    base_kernels: float | None
    kernels: float | None
    launch_verdict: str  # same, fewer, more, regression, one side only, -
    gross: bool = False  # a time regression too large for any noise, found where the rule could not judge
    # What each process's time is (statistic.py): p20 on a CPU, graph median, or median (a
    # GPU's eager time, or a CPU's where a side recorded no p20); the eager time's beside it
    # (- where there is none).
    statistic: str = P20
    eager_statistic: str = "-"
    # Oversubscribed processes left out of the judgement, both sides together (Side.of).
    left_out: int = 0
    # CUDA: the times one call makes the host wait for the GPU (host_syncs), counted, not
    # sampled: a call that waits more than before fails, since its time then holds the host's
    # (and a CUDA graph of it cannot be captured, so graph timing cannot show it).
    base_syncs: float | None = None
    syncs: float | None = None
    sync_verdict: str = "-"  # same, fewer, regression (any more: no threshold), one side only, -

    @property
    def fell_back(self) -> bool:
        """Judged on CPU process medians only because a side recorded no p20 (a point with
        a side not ok has no time judged, so none)."""
        both_ok = self.base_status == self.status == "ok"
        return both_ok and fell_back(self.key["device_type"] == "cpu", self.statistic)

    @property
    def time_regressed(self) -> bool:
        return self.time_verdict in TIME_FAILURES

    @property
    def hard_regressed(self) -> bool:
        """A regression no change of machine explains: broken, memory, launches, host syncs."""
        return self.time_verdict == "broken" or "regression" in (
            self.memory_verdict,
            self.launch_verdict,
            self.sync_verdict,
        )

    @property
    def one_sided(self) -> tuple[str, ...]:
        """The measures (memory, launches, host syncs) this point recorded on one side only."""
        verdicts = (
            (MEMORY, self.memory_verdict),
            (LAUNCHES, self.launch_verdict),
            (HOST_SYNCS, self.sync_verdict),
        )
        return tuple(name for name, verdict in verdicts if verdict == ONE_SIDED)

    @property
    def regressed(self) -> bool:
        return self.hard_regressed or self.time_regressed
