"""What a worker measures on a GPU after a point's eager timing: CUDA-graph replays of one
call (``cuda_graph``, ``device_ms``, ``graph_error``) and the launches one call makes
(``kernels_per_call``), each added to the process's result.

Both run after the timed eager calls, so neither changes what was timed: a captured graph
holds the call's temporaries in a memory pool of its own, and the profiler that counts
launches leaves the process slower after it ends (linbench/measure/launches.py), so it
goes last.
Neither can fail a point: a call that cannot be captured keeps its eager time and says why
in ``graph_error``, and a count that cannot be made is left out.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any

import torch

from linbench.measure.cuda_graph import WARMUP_CALLS, capture, why_not_capturable
from linbench.measure.timer import Timing
from linbench.measure.timing_policy import TimingPolicy
from linbench.results.processes import ProcessResult
from linbench.runner.workload import Workload

# Replays before the timed ones: the first launch of a graph also uploads it to the device.
GRAPH_WARMUP_REPLAYS = 3
# Replays of a captured decode step are cheap and change nothing: time at least this many.
DECODE_GRAPH_MIN_REPS = 100


def run_graph_policy(policy: TimingPolicy) -> TimingPolicy:
    """A run point's replays are timed like its eager calls (same budget, repetitions and
    L2 flush before each), after a few untimed replays instead of the warm-up time."""
    return replace(policy, warmup_s=0.0, warmup_calls=GRAPH_WARMUP_REPLAYS)


def decode_graph_policy(policy: TimingPolicy) -> TimingPolicy:
    """A decode step's replays run back to back, as its eager steps do (no L2 flush), and
    at least ``DECODE_GRAPH_MIN_REPS`` of them."""
    reps = max(policy.max_reps, DECODE_GRAPH_MIN_REPS)
    return TimingPolicy(
        warmup_s=0.0, budget_s=0.0, min_reps=reps, max_reps=reps, warmup_calls=GRAPH_WARMUP_REPLAYS, flush_l2=False
    )


def graph_predicted_s(policy: TimingPolicy, call_s: float) -> float:
    """Wall time of capturing a call of ``call_s`` seconds and timing its replays under
    ``policy``, counting each replay as long as an eager call (an upper bound: a replay
    saves the launches)."""
    return WARMUP_CALLS * call_s + policy.predicted_s(call_s)


def capturable_call(work: Workload) -> Callable[[], None]:
    """The call a graph captures for a run point, built on the current stream. fwd and
    fwdbwd capture ``work.run`` as it is timed. bwd times the backward of a forward built
    untimed before each repetition, so the graph captures the backward of one forward built
    here, kept alive (and its saved tensors with it, ``retain_graph``) for as long as the
    graph replays it. Autograd runs a backward op on the stream of its forward op, so that
    forward must be built on the stream that captures (``with_graph`` sees to it)."""
    if work.point.mode != "bwd":
        return work.run
    out = work.forward()
    inputs = work.leaves()
    grad_out = work.grad_out

    def backward() -> None:
        torch.autograd.grad(out, inputs, grad_out, retain_graph=True)

    return backward


def with_graph(
    result: ProcessResult,
    make_call: Callable[[], Callable[[], object]],
    device: torch.device,
    policy: TimingPolicy,
) -> ProcessResult:
    """``result`` with ``cuda_graph`` and the median replay time ``device_ms`` of one captured
    call of the function ``make_call`` returns (made on the capturing stream); with
    ``cuda_graph`` False and ``graph_error`` when it cannot be captured."""
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    try:
        with torch.cuda.stream(side):
            call = make_call()
        graph = capture(call, device, stream=side)
        timing = time_with_policy(graph.replay, device, policy)
    except Exception as exc:  # a call that cannot be captured (or replayed) keeps its eager time, and says why
        _settle(device)
        return replace(result, cuda_graph=False, graph_error=why_not_capturable(exc))
    del graph, call  # the graph's pool (and a bwd's forward) go back to the allocator
    return replace(result, cuda_graph=True, device_ms=timing.median_ms)


def with_launches(
    result: ProcessResult, fn: Callable[[], object], device: torch.device, before: Callable[[], object] | None = None
) -> ProcessResult:
    """``result`` with the ``host_syncs`` and the ``kernels_per_call`` of one untimed call of
    ``fn`` each (after ``before``, uncounted); each left as it is when it cannot be counted.
    The syncs first: the launch count's profiler slows what runs after it (launches.py)."""
    from linbench.measure.host_syncs import count_host_syncs
    from linbench.measure.launches import count_kernel_launches

    syncs = _count("host_syncs", count_host_syncs, fn, device, before)
    launches = _count("kernels_per_call", count_kernel_launches, fn, device, before)
    return replace(
        result,
        host_syncs=result.host_syncs if syncs is None else syncs,
        kernels_per_call=result.kernels_per_call if launches is None else launches,
    )


def _count(
    column: str,
    count_in: Callable[[Callable[[], object], torch.device], int | None],
    fn: Callable[[], object],
    device: torch.device,
    before: Callable[[], object] | None,
) -> int | None:
    """One count of one untimed call of ``fn`` (after ``before``); None when it cannot be made."""
    try:
        if before is not None:
            before()
        return count_in(fn, device)
    except Exception as exc:  # a count that cannot be trusted is left out, never guessed
        print(f"{column} not counted: {_first_line(exc)}", file=sys.stderr)
        return None


def with_device_split(
    result: ProcessResult,
    fn: Callable[[], object],
    device: torch.device,
    before: Callable[[], object] | None = None,
    energy: bool = True,
) -> ProcessResult:
    """``result`` with the kernels' own device time of a call and their names (torch.profiler),
    then the energy of calls back to back (NVML) with the power limit and memory clock; what
    cannot be read is left empty and ``device_split_note`` says why. Last of all: the profiler
    slows the process after it (launches.py)."""
    notes: list[str] = []
    if energy:
        result = replace(result, **_energy(fn, (result.time_ms or 0.0) / 1e3, device, notes))
    else:  # a bwd call needs its forward built before each call, whose energy would count too
        notes.append("energy not read: a bwd call needs a forward built before it, which the counter would count")
    try:
        from linbench.measure.cuda_timer import l2_flush_bytes
        from linbench.measure.kernel_time import measure_kernel_time

        flush = torch.empty(l2_flush_bytes(device) // 4, dtype=torch.int32, device=device)
        split = measure_kernel_time(fn, device, before=before, flush=flush.zero_)
        if split is not None:
            result = replace(result, kernel_ms=split.kernel_ms, kernel_names=";".join(split.names))
    except Exception as exc:  # a figure that cannot be trusted is left out, never guessed
        notes.append(f"kernel time not read: {_first_line(exc)}")
    return replace(result, device_split_note="; ".join(notes) or None)


def _energy(fn: Callable[[], object], call_s: float, device: torch.device, notes: list[str]) -> dict[str, Any]:
    """energy_j, power_w, energy_window_s, energy_updates, power_limit_w and mem_clock_mhz of
    calls of ``fn`` (``call_s`` seconds each, as timed) back to back."""
    from linbench.measure.energy import measure_energy, power_facts
    from linbench.measure.nvml import load_nvml, nvml_handle

    try:
        nvml = load_nvml()
    except Exception as exc:
        notes.append(f"energy not read: NVML unavailable: {_first_line(exc)}")
        return {}
    try:
        handle = nvml_handle(nvml, device.index if device.index is not None else torch.cuda.current_device())
        window = measure_energy(
            fn,
            lambda: float(nvml.nvmlDeviceGetTotalEnergyConsumption(handle)),
            lambda: torch.cuda.synchronize(device),
            _marker,
            call_s,
        )
        facts: dict[str, Any] = dict(power_facts(nvml, handle))
        if window.millijoules <= 0:  # a counter that went back (a driver reload) measures nothing
            notes.append("energy not read: NVML's energy counter went back")
            return facts
        read = {"energy_window_s": round(window.seconds, 4), "energy_updates": window.updates}
        return facts | read | {"energy_j": window.joules_per_call, "power_w": round(window.watts, 1)}
    except Exception as exc:  # a GPU without the counter (before Volta), one that never moves, a failed call
        notes.append(f"energy not read: {_first_line(exc)}")
        return {}
    finally:
        nvml.nvmlShutdown()


def _marker() -> Callable[[], bool]:
    """A probe of the work queued on the current stream so far: a recorded event's query."""
    event = torch.cuda.Event()
    event.record()
    return event.query


def _settle(device: torch.device) -> None:
    """Wait for the device after a failed capture; an error there belongs to the capture,
    which is already reported, so it must not fail the point's eager result."""
    try:
        torch.cuda.synchronize(device)
    except Exception as exc:
        print(f"after a failed CUDA-graph capture: {_first_line(exc)}", file=sys.stderr)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def time_with_policy(
    fn: Callable[[], object],
    device: torch.device,
    policy: TimingPolicy,
    before: Callable[[], object] | None = None,
    hold: AbstractContextManager[object] | None = None,
) -> Timing:
    """``fn`` timed with CUDA events as ``policy`` says (warm-up, budget, repetitions, L2 flush),
    ``hold`` held while the repetitions are queued (the NVML sampler's lock)."""
    from linbench.measure.cuda_timer import time_cuda

    return time_cuda(
        fn,
        device=device,
        before=before,
        warmup_s=policy.warmup_s,
        min_warmup_calls=policy.warmup_calls,
        budget_s=policy.budget_s,
        min_reps=policy.min_reps,
        max_reps=policy.max_reps,
        flush_l2=policy.flush_l2,
        hold=hold,
    )


def with_rotating_graphs(
    result: ProcessResult, steps: Sequence[Callable[[], object]], device: torch.device, policy: TimingPolicy
) -> ProcessResult:
    """``result`` with the median replay time ``device_ms`` of graphs of ``steps`` (one per
    rotating pool) replayed in turn, so that each replay reads a pool the last ones did not
    touch (``graph_pools`` of them); as with_graph, ``graph_error`` when they cannot be captured."""
    side = torch.cuda.Stream(device)
    try:
        graphs = [capture(step, device, stream=side) for step in steps]
        order = itertools.cycle(graphs)

        def replay() -> None:
            next(order).replay()

        timing = time_with_policy(replay, device, policy)
    except Exception as exc:  # a step that cannot be captured keeps its eager time, and says why
        _settle(device)
        return replace(result, cuda_graph=False, graph_error=why_not_capturable(exc))
    return replace(result, cuda_graph=True, device_ms=timing.median_ms, graph_pools=len(steps))
