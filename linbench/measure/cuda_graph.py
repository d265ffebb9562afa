"""Capturing a call in a CUDA graph, so that its replays can be timed without the host.

A decode step, or a chunked impl's Python loop of small kernels, launched eagerly from
Python keeps the GPU waiting for the host between kernels: its time is host time. Serving
and training engines capture such work once and replay it; a replay's time is the work's
device time. Capture follows torch's recipe (the CUDA Graphs notes, "whole-network
capture"): warm-up calls on a side stream, so that lazy initialisation, library handles and
the allocator's first allocations do not happen during capture, then one call recorded
into the graph. The warm-up runs on the very stream the capture then uses, as
``torch.cuda.make_graphed_callables`` does: a library that keeps a handle or workspace per
stream has it before capture starts. A call with a backward is captured whole: autograd
runs each backward op on the stream of its forward op, which during capture is the
capturing stream, so the backward is recorded too.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

WARMUP_CALLS = 3


def capture(
    fn: Callable[[], object], device: torch.device, stream: torch.cuda.Stream | None = None
) -> torch.cuda.CUDAGraph:
    """A graph of one call of ``fn``, warmed up and captured on ``stream`` (a new side stream
    by default); raises whatever capture raises (a host synchronisation inside ``fn``, a
    copy from pageable host memory, an allocation that does not fit) when ``fn`` cannot be
    captured."""
    side = stream if stream is not None else torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(WARMUP_CALLS):
            fn()
    caller = torch.cuda.current_stream(device)
    caller.wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph, stream=side):
            fn()
    finally:
        # A capture that fails also fails to end, and torch.cuda.graph then never restores
        # the stream it made current: the work after it must not land on the side stream.
        torch.cuda.set_stream(caller)
    torch.cuda.synchronize(device)
    return graph


def why_not_capturable(exc: BaseException) -> str:
    """One line for the results: the first error of the chain. When the call fails during
    capture, ending the capture fails too, and that second error only says the capture was
    invalidated; the first says by what."""
    first, seen = exc, {id(exc)}
    while first.__context__ is not None and id(first.__context__) not in seen:
        first = first.__context__
        seen.add(id(first))
    text = str(first).strip()
    line = text.splitlines()[0] if text else type(first).__name__
    return f"not captured in a CUDA graph: {line[:200]}"
