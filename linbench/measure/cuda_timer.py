"""GPU timing with CUDA events, the L2 cache flushed before every timed repetition.

The policy follows triton's do_bench and nvbench: warm up for a time budget, size the
number of repetitions from the warm-up's cost, record a start and an end event around
each call (so host launch gaps between repetitions are not counted), and overwrite a
buffer twice the size of L2 before each call so no repetition reads the previous one's
data from cache.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from linbench.measure.timer import Timing

# Without a reported L2 size, flush a buffer larger than any current GPU's L2 (H100: 50 MiB).
FALLBACK_FLUSH_BYTES = 256 * 1024 * 1024


def l2_flush_bytes(device: torch.device) -> int:
    """Twice the device's L2 size: writing that much evicts every line of L2."""
    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
    return 2 * l2 if l2 > 0 else FALLBACK_FLUSH_BYTES


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
) -> Timing:
    """Milliseconds per call of ``fn`` on ``device``; ``before`` runs untimed ahead of each call,
    and so does an overwrite of L2 unless ``flush_l2`` is False."""
    flush = torch.empty(l2_flush_bytes(device) // 4 if flush_l2 else 0, dtype=torch.int32, device=device)
    prepare = before or (lambda: None)
    torch.cuda.synchronize(device)
    calls, start = 0, time.perf_counter()
    while calls < min_warmup_calls or time.perf_counter() - start < warmup_s:
        prepare()
        if flush_l2:
            flush.zero_()
        fn()
        torch.cuda.synchronize(device)
        calls += 1
    per_call_s = (time.perf_counter() - start) / max(calls, 1)
    reps = int(min(max_reps, max(min_reps, budget_s / max(per_call_s, 1e-6))))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for begin, end in zip(starts, ends, strict=True):
        prepare()
        if flush_l2:
            flush.zero_()
        begin.record()
        fn()
        end.record()
    torch.cuda.synchronize(device)
    return Timing(tuple(begin.elapsed_time(end) for begin, end in zip(starts, ends, strict=True)))
