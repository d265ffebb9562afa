"""The memory verdict of one point: exact where the reading is exact, with a measured tolerance
where it is not.

On a GPU, peak_bytes is the CUDA caching allocator's own count of the bytes a call allocated:
the same for the same code, shape and library in every process (the H100 rerun pair of
docs/gate.md was byte-identical), so each side's largest process is compared and any growth
past ``max_memory_growth`` fails. On a CPU a run point records alloc_peak_bytes, torch's own
count of the live bytes a call allocated (measure/allocations.py): exact in the same way, and
judged so where both sides have it. A CPU run without it (made before it was recorded, or a
decode step) is judged on peak_bytes, the peak resident set of the worker above what it held
before (measure/memory.py): pages touched, which the allocator's arenas and the kernel's page
accounting move between identical processes. There each side's median process is compared,
and a growth fails only past ``max_memory_growth``, past the CPU floor (the between-process
spread measured on a busy 2-core machine, CPU_MEMORY_FLOOR_BYTES) and with every current
process above every baseline one.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from linbench.gate.point_diff import ONE_SIDED

# Peak RSS of one point in identical processes spread by up to 1.31 MiB (37 MiB points) in
# repeated runs on a busy 2-core machine (docs/gate.md, "Memory on a CPU"); the floor sits above.
CPU_MEMORY_FLOOR_BYTES = 2 << 20


@dataclass(frozen=True)
class MemoryJudgement:
    base_bytes: float | None  # the reading compared: the largest process (exact) or the median (CPU)
    bytes: float | None
    growth: float | None  # bytes / base_bytes - 1
    verdict: str  # same, smaller, larger, regression, one side only, -


def judge_memory(
    base: Sequence[float], cur: Sequence[float], exact: bool, max_growth: float, floor: float
) -> MemoryJudgement:
    """The verdict on each side's per-process peaks (``exact``: an allocator's count, else
    peak RSS); ``one side only`` where one side has none, ``-`` where neither has."""
    if not base or not cur:
        verdict = "-" if not base and not cur else ONE_SIDED
        return MemoryJudgement(_pick(base, exact), _pick(cur, exact), None, verdict)
    base_bytes, cur_bytes = _pick(base, exact), _pick(cur, exact)
    assert base_bytes is not None and cur_bytes is not None
    growth = (cur_bytes - base_bytes) / base_bytes if base_bytes else None
    if growth is None:
        return MemoryJudgement(base_bytes, cur_bytes, None, "-")
    apart = exact or min(cur) > max(base)  # inexact readings must not overlap
    if growth > max_growth and cur_bytes - base_bytes > floor and apart:
        verdict = "regression"
    else:
        verdict = "larger" if cur_bytes > base_bytes else "smaller" if cur_bytes < base_bytes else "same"
    return MemoryJudgement(base_bytes, cur_bytes, growth, verdict)


def _pick(values: Sequence[float], exact: bool) -> float | None:
    if not values:
        return None
    return float(max(values)) if exact else float(statistics.median(values))
