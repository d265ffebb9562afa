"""GPU timing with CUDA events, the L2 cache flushed before every timed repetition.

The policy follows triton's do_bench and nvbench: warm up for a time budget, size the
number of repetitions from the warm-up's cost, record a start and an end event around
each call (so host launch gaps between repetitions are not counted), and overwrite a
buffer twice the size of L2 before each call so no repetition reads the previous one's
data from cache. The warm-up and the timing loop are the CPU timer's (timer.py), with a
synchronize after each warm-up call and the events for a clock. A ``hold`` (the NVML sampler's
lock, linbench/measure/nvml.py) is held while the repetitions are queued, so that the sampler's
thread takes no sample among them, and let go before the host waits for the device to finish them.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

import torch

from linbench.measure.timer import Timing, readings, warm_up

# Without a reported L2 size, flush a buffer larger than any current GPU's L2 (H100: 50 MiB).
FALLBACK_FLUSH_BYTES = 256 * 1024 * 1024


def l2_flush_bytes(device: torch.device) -> int:
    """Twice the device's L2 size: writing that much evicts every line of L2."""
    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
    return 2 * l2 if l2 > 0 else FALLBACK_FLUSH_BYTES


class CudaClock:
    """CUDA events recorded around each call on the device's stream, read after one synchronize
    at the end (so host launch gaps between repetitions are not counted); ``reps`` pairs made
    before the first repetition."""

    def __init__(self, device: torch.device, reps: int) -> None:
        self.device = device
        self._pairs = iter([(_timing_event(), _timing_event()) for _ in range(reps)])

    def around(self, fn: Callable[[], object]) -> tuple[torch.cuda.Event, torch.cuda.Event]:
        begin, end = next(self._pairs)
        begin.record()
        fn()
        end.record()
        return begin, end

    def spent_ms(self, reading: tuple[torch.cuda.Event, torch.cuda.Event]) -> float:
        return 0.0  # an event is read only once the device has reached it: the count is fixed ahead

    def timing(self, readings: list[tuple[torch.cuda.Event, torch.cuda.Event]]) -> Timing:
        torch.cuda.synchronize(self.device)
        return Timing(tuple(begin.elapsed_time(end) for begin, end in readings))


def _timing_event() -> torch.cuda.Event:
    return torch.cuda.Event(enable_timing=True)


def time_cuda(
    fn: Callable[[], object],
    *,
    device: torch.device,
    before: Callable[[], object] | None = None,
    warmup_s: float = 0.1,
    min_warmup_calls: int = 1,
    budget_s: float = 0.5,
    min_reps: int = 10,
    max_reps: int = 1000,
    flush_l2: bool = True,
    hold: AbstractContextManager[object] | None = None,
) -> Timing:
    """Milliseconds per call of ``fn`` on ``device``; ``before`` runs untimed ahead of each call,
    and so does an overwrite of L2 unless ``flush_l2`` is False. The repetitions are as many as
    fit ``budget_s`` at the warm-up's time per call, within ``min_reps`` and ``max_reps``;
    ``hold`` is held from the first until the last is queued."""
    flush = torch.empty(l2_flush_bytes(device) // 4 if flush_l2 else 0, dtype=torch.int32, device=device)
    before_call = before or (lambda: None)

    def prepare() -> None:
        before_call()
        if flush_l2:
            flush.zero_()

    torch.cuda.synchronize(device)
    calls, elapsed_s = warm_up(fn, prepare, warmup_s, min_warmup_calls, lambda: torch.cuda.synchronize(device))
    per_call_s = elapsed_s / max(calls, 1)
    reps = int(min(max_reps, max(min_reps, budget_s / max(per_call_s, 1e-6))))
    clock = CudaClock(device, reps)
    with hold or nullcontext():
        queued = readings(fn, prepare, clock, budget_s=budget_s, min_reps=reps, max_reps=reps)
    return clock.timing(queued)
