"""Capturing a call in a CUDA graph, so that its replays can be timed without the host.

A decode step is a handful of tiny kernels; launched eagerly from Python, the GPU waits for
the host between them and the step's time is host time. Serving engines capture the step
once and replay it; a replay's time is the step's device time. Capture follows torch's
recipe: warm-up calls on a side stream (lazy initialisation and the allocator's first
allocations must not happen during capture), then one call recorded into the graph.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

WARMUP_CALLS = 3


def capture(fn: Callable[[], object], device: torch.device) -> torch.cuda.CUDAGraph:
    """A graph of one call of ``fn``; raises whatever capture raises (a host synchronisation
    inside ``fn``, a copy from pageable host memory) when ``fn`` cannot be captured."""
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(WARMUP_CALLS):
            fn()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize(device)
    return graph


def why_not_capturable(exc: BaseException) -> str:
    """One line for the results' error column."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"not captured in a CUDA graph: {first[:200]}"
