"""The device time of the kernels one call runs, apart from the host's time around them.

A call's event time (CUDA events around it) holds the host's work too: Python, dispatch,
launches the GPU waits for. The field reports the kernels' own time beside it (one published
KDA kernel is 1.11× faster per kernel and 0.72× slower through its op, from dispatch overhead),
so linbench reads it from ``torch.profiler`` (CUPTI's record of what ran on the device): the
time during which at least one kernel, memcpy or memset of a call ran (the union of their
intervals), for a few calls after the timed ones, each after the point's ``before`` and an
overwrite of L2 as the timed calls have. A union, not a sum: a library that runs kernels at once
on two streams would have them counted twice by a sum, and its kernel time could then exceed the
call's own; on one stream, where kernels run one after another, the two are the same.

One profiler session holds every call: it opens with marker kernels (launches.py explains why)
and brackets each call with one more marker on each side, so the call's records are those
between a pair, and ``before``'s and the flush's fall outside. The session runs after the timed
calls and the launch count, which it would slow (launches.py).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch

from linbench.measure.launches import MARKER_KERNEL, MARKERS, LaunchCountError, _is_device_operation

CALLS = 3  # profiled calls; the median call's kernel time is the point's
# A kernel's name as results.csv keeps it: the part before its template arguments or signature.
NAME_CUT = ("<", "(")


@dataclass(frozen=True)
class Record:
    """One device record of a profiler session: its name, start and duration in µs."""

    name: str
    start_us: float
    duration_us: float


@dataclass(frozen=True)
class KernelTime:
    """The median call's kernel time (ms: the device busy with any of them) and the distinct
    kernels the calls ran."""

    kernel_ms: float
    names: tuple[str, ...]


def calls_in(records: Iterable[Record]) -> list[list[Record]]:
    """Each call's records, in time order: those between an opening and a closing marker after
    the session's leading run of markers. LaunchCountError when that run is lost whole (the
    trace lost its head) or a call's markers do not pair."""
    ordered = sorted(records, key=lambda record: record.start_us)
    lead = 0
    while lead < len(ordered) and MARKER_KERNEL in ordered[lead].name:
        lead += 1
    if lead == 0:
        raise LaunchCountError(f"the profiler's trace lost its first {MARKERS} records, so it may have lost kernels")
    calls: list[list[Record]] = []
    current: list[Record] | None = None
    for record in ordered[lead:]:
        if MARKER_KERNEL in record.name:
            if current is None:
                current = []
            else:
                calls.append(current)
                current = None
        elif current is not None:
            current.append(record)
    if current is not None:
        raise LaunchCountError("a call's closing marker is missing from the profiler's trace")
    return calls


def kernel_time(calls: Sequence[Sequence[Record]]) -> KernelTime:
    """The median of the calls' busy times (ms) and their kernels' names, each once."""
    if not calls:
        raise LaunchCountError("no call was found in the profiler's trace")
    busy_ms = [busy_us(call) / 1e3 for call in calls]
    names = dict.fromkeys(short_name(record.name) for call in calls for record in call)
    return KernelTime(statistics.median(busy_ms), tuple(names))


def busy_us(records: Iterable[Record]) -> float:
    """The µs during which at least one of ``records`` ran: the length of their intervals' union."""
    total, end = 0.0, -math.inf
    for record in sorted(records, key=lambda r: r.start_us):
        finish = record.start_us + record.duration_us
        if finish > end:
            total += finish - max(record.start_us, end)
            end = finish
    return total


def short_name(name: str) -> str:
    """A kernel's name without its template arguments or signature (void at::native::…)."""
    cut = min((name.find(mark) for mark in NAME_CUT if mark in name), default=len(name))
    return name[:cut].removeprefix("void ").strip() or name


def measure_kernel_time(
    fn: Callable[[], object],
    device: torch.device,
    before: Callable[[], object] | None = None,
    flush: Callable[[], object] | None = None,
    calls: int = CALLS,
) -> KernelTime | None:
    """``calls`` calls of ``fn`` profiled, each after ``before`` and ``flush`` (unprofiled
    parts of the session); None on a device other than CUDA."""
    if device.type != "cuda":
        return None
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize(device)
    with profile(activities=[ProfilerActivity.CUDA]) as session:
        for _ in range(MARKERS):
            torch.cuda._sleep(1)
        for _ in range(calls):
            for step in (before, flush):
                if step is not None:
                    step()
            torch.cuda._sleep(1)
            fn()
            torch.cuda._sleep(1)
        torch.cuda.synchronize(device)
    return kernel_time(calls_in(_records(session.events())))


def _records(events: Iterable[object]) -> list[Record]:
    records = []
    for event in events:
        if not _is_device_operation(event):
            continue
        span = getattr(event, "time_range", None)
        if span is None:
            continue
        records.append(Record(str(getattr(event, "name", "")), float(span.start), float(span.elapsed_us())))
    return records
