"""What a worker does with a task: check a point against its reference, or measure it.

Both return a ProcessResult (what the worker measured, or how it failed); the runner adds
the point's own columns when it records the process. What differs between a run point and a
decode point (the check, the workload, what a GPU times after the eager calls) is the task's
kind's (kinds.py): a decode point is checked by decoding against the reference's last rows,
and measured like any other point once its context is prefilled: the first step's peak
memory, then one timed repetition per generated token. On a GPU, after the eager timing, a
call (or step) may also be timed as CUDA-graph replays and its launches counted
(execute_gpu.py).
"""

from __future__ import annotations

import gc
import time
from dataclasses import replace

import torch

from linbench.check.correctness import CaseResult, forget_references
from linbench.machine.cpu_use import NeighbourWindow
from linbench.measure.allocations import ProfiledCall, profiled_call
from linbench.measure.compile_time import compile_seconds
from linbench.measure.memory import PeakRSS, release_free_heap
from linbench.measure.nvml import GPU_IDLE, NvmlSampler, throttle_names
from linbench.measure.pace import PACE_WORK, Pace, paced
from linbench.measure.timer import Timing, time_cpu
from linbench.measure.timing_policy import TimingPolicy
from linbench.results.processes import ProcessResult
from linbench.runner import triton_tuning
from linbench.runner.execute_gpu import graph_predicted_s, time_with_policy
from linbench.runner.kind_protocol import Task, Work
from linbench.variants.backends import declared_backend, take_noted
from linbench.variants.registry import get_variant


def run_gate(task: Task) -> ProcessResult:
    """The point checked against its variant's fp64 reference, as its kind checks it (a Triton
    impl's autotuners holding the checked point's choices alone: triton_tuning.py)."""
    triton_tuning.begin(task.point, task.params, torch.device(task.point.device), lock=False)
    return gate_result(task.kind.check(task))


def gate_result(case: CaseResult) -> ProcessResult:
    """What a gate reports: ok or mismatch with its relative error, or why it could not judge."""
    if case.unavailable:  # the impl cannot take this point (an SDPA backend, say): not a failure
        return ProcessResult("skipped", error=f"unavailable: {case.unavailable}")
    if case.error:
        return ProcessResult("oom" if case.out_of_memory else "error", error=case.error)
    status = "ok" if case.ok else "mismatch"
    return ProcessResult(status, rel_err=case.rel_error, error="" if case.ok else case.describe())


# Why a CPU row has no kernel_ms or energy_j (results/schema.py).
CPU_SPLIT_NOTE = "CPU: no GPU kernels to time apart and no energy counter (kernel_ms and energy_j are CUDA's)"

# A long first call (TimingPolicy.long_first_call_timed) kept as a repetition may be this much
# slower than the slowest later one: a call past it had not reached its steady speed.
FIRST_CALL_SLACK = 0.1


class StopEarlyError(Exception):
    """A point on probation whose first call says it cannot finish within its limit."""


def run_measure(task: Task, *, warm_curve: bool = False) -> ProcessResult:
    """Peak memory of the first full-size call, then the timed repetitions; on a CPU one call,
    profiled, also counts what it allocates through torch (the first warm-up call after the
    measured one where the point warms up, else the call after it, timed as a repetition where
    the profiler's cost is negligible and untimed where not); on a GPU then what the kind
    times after them. ``state_bytes``: what the point's state holds once prepared.
    ``warm_curve``: this worker has measured the point's curve at another size or checked its
    impl (a warm CPU worker), so the point needs no warm-up: its first call is timed as a
    repetition too, kept where it was steady (TimingPolicy.long_first_call_timed)."""
    started = time.perf_counter()
    compiled_before = compile_seconds()
    forget_references()  # the fp64 references of checks this worker ran: not the point's memory
    gc.collect()  # and what an earlier point in this worker left in reference cycles
    device = torch.device(task.point.device)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    kind = task.kind
    take_noted()  # what an earlier call in this worker (a check, another point) ran is not this point's
    # A Triton impl's kernels are compiled and tuned in the workload's warm-up, at this point's
    # shape, in a scope of their own; the timed calls run them unwatched (triton_tuning.py).
    watched = triton_tuning.begin(task.point, task.params, device, lock=True)
    try:
        with kind.measuring():
            work, held = kind.workload(task, device)
            if watched:
                triton_tuning.timed_calls()
            result = replace(_measure(task, work, device, started, warm_curve), state_bytes=held)
            backend = _backend(task)
            if device.type == "cuda":
                result = kind.after_eager(task, work, device, result)
            # A workload's own readings after its timed calls (a serving decode point's: what a
            # request holds, the drift of its state), columns of the process's result.
            readings = getattr(work, "readings", None)
            if readings is not None:
                result = replace(result, **readings())
        tuned, triton_compile_s = triton_tuning.reading(watched)
        return replace(
            result, compile_s=triton_tuning.compiled_s(compiled_before, triton_compile_s), backend=backend, **tuned
        )
    except StopEarlyError as stop:
        return ProcessResult("timeout", error=str(stop))
    finally:
        if watched:
            triton_tuning.timed_calls()  # a failed warm-up lets the point's lock go too


def _backend(task: Task) -> str:
    """The library and kernel the timed calls ran: what they noted, else what the impl
    declares (linbench/variants/backends.py)."""
    noted = take_noted()
    if noted is not None:
        return noted
    variant = get_variant(task.point.variant)
    return declared_backend(variant.impls.get(task.point.impl))


def _check_probation(task: Task, first_s: float, started: float) -> None:
    """On probation, stop when the calls still to come, at the first call's speed, would
    take the point past its limit (a timeout after one call instead of after the limit)."""
    limit = task.stop_after_s
    if limit is None:
        return
    projected = time.perf_counter() - started + task.timing.predicted_s(first_s) - first_s
    if task.cuda_graph:
        projected += graph_predicted_s(task.kind.graph_policy(task.timing), first_s)
    if projected > limit:
        per = task.kind.words.call
        raise StopEarlyError(
            f"stopped after its first {per}: {first_s:.2f} s per {per} puts the point at "
            f"{projected:.0f} s, past --timeout-s {limit:g}"
        )


def _measure(task: Task, work: Work, device: torch.device, started: float, warm_curve: bool) -> ProcessResult:
    if device.type == "cuda":
        return _measure_cuda(task, work, device, started)
    return _measure_cpu(task, work, started, warm_curve)


def _measure_cpu(task: Task, work: Work, started: float, warm_curve: bool) -> ProcessResult:
    policy = task.timing
    # In a warm worker, memory an earlier point or check freed stays in malloc's heap and would
    # be reused unseen by the RSS window: hand it back first, as a fresh fork holds none.
    release_free_heap()
    work.before()
    with PeakRSS() as peak:
        cpu_start, start = time.process_time_ns(), time.perf_counter_ns()
        work.run()
        first_ms = (time.perf_counter_ns() - start) / 1e6
        first_cpu_ms = (time.process_time_ns() - cpu_start) / 1e6
    _check_probation(task, first_ms / 1e3, started)
    keep_first = policy.first_is_timed(first_ms / 1e3, warm=warm_curve)
    neighbours = NeighbourWindow()
    # The measured call was the first warm-up call; only the rest of the warm-up time remains,
    # none where it was that long itself or the worker is warm from this curve's last point.
    warmup_s = 0.0 if keep_first or warm_curve else max(policy.warmup_s - first_ms / 1e3, 0.0)
    warmup_s, warmup_calls, allocated = _profiled_warm_up(task, work, warmup_s, policy.warmup_calls)
    first = Timing((first_ms,), (first_cpu_ms,)) if keep_first else Timing(())
    alloc_call_timed = None if allocated is None else False  # profiled as a warm-up call
    if allocated is None and _counts_allocations(task):  # no warm-up call to spare: no warm-up left
        later, allocated, alloc_call_timed = _profiled_repetition(work, policy, first, neighbours)
    else:
        later = _repeat(work, policy, warmup_s, warmup_calls, first, neighbours)
    timing = _with_first_call(later, first_ms, first_cpu_ms, work) if keep_first else later
    threads = torch.get_num_threads()
    return replace(
        _timed(timing),
        device_split_note=CPU_SPLIT_NOTE,
        peak_bytes=peak.peak_bytes,
        alloc_peak_bytes=allocated,
        alloc_call_timed=alloc_call_timed,
        neighbour_cpu=None if neighbours.cores is None else round(neighbours.cores, 2),
        oversubscribed=neighbours.oversubscribed(threads) if neighbours.cores is not None else None,
    )


def _profiled_repetition(
    work: Work, policy: TimingPolicy, first: Timing, window: NeighbourWindow
) -> tuple[Timing, int, bool]:
    """Where the point has no warm-up call to spare, the profiled call comes right after the
    measured one, inside the window of the timed calls, and is one of the repetitions when the
    profiler cost it nothing measurable (ProfiledCall.timeable) and the policy wants one more;
    else it is one untimed call more. The repetitions after the first call, the allocation
    figure, and whether the profiled call is among those repetitions."""
    with window:
        profiled = _profiled_call(work)
        timed = profiled.timeable and first.count < policy.max_reps
        ahead = Timing((profiled.wall_ms,), (profiled.cpu_ms,)) if timed else Timing(())
        rest = _repeat(work, policy, 0.0, 0, _joined(first, ahead), None)
    return _joined(ahead, rest), profiled.peak_bytes, timed


def _repeat(
    work: Work, policy: TimingPolicy, warmup_s: float, warmup_calls: int, ahead: Timing, window: NeighbourWindow | None
) -> Timing:
    """The rest of the warm-up, then the timed repetitions the policy asks for beyond those
    already timed (``ahead``: their count and time come off its bounds and budget)."""
    return time_cpu(
        work.run,
        before=work.before,
        warmup_s=warmup_s,
        min_warmup_calls=warmup_calls,
        budget_s=policy.budget_s - sum(ahead.samples_ms) / 1e3,
        min_reps=max(policy.min_reps - ahead.count, 0),
        max_reps=max(policy.max_reps - ahead.count, 0),
        timed_window=window,
        pace=_pace(),
    )


def _pace() -> Pace | None:
    """The reference call timed beside each repetition where the gate judges CPU time (one
    torch thread: measure/pace.py), else None."""
    return Pace() if paced(torch.get_num_threads(), "cpu") else None


def _joined(earlier: Timing, later: Timing) -> Timing:
    """Two runs of repetitions as one, in the order they were timed."""
    return earlier.then(later)


def _profiled_warm_up(task: Task, work: Work, warmup_s: float, warmup_calls: int) -> tuple[float, int, int | None]:
    """Where the point makes untimed warm-up calls anyway and counts allocations, the profiled
    call is the first of them: its time is warm-up time spent (a call of the same code), not a
    call more. The warm-up left (seconds, calls) and the figure, None where not counted here."""
    if not _counts_allocations(task) or (warmup_s <= 0 and warmup_calls <= 0):
        return warmup_s, warmup_calls, None
    started = time.perf_counter()
    allocated = _profiled_call(work).peak_bytes
    return max(warmup_s - (time.perf_counter() - started), 0.0), max(warmup_calls - 1, 0), allocated


def _counts_allocations(task: Task) -> bool:
    """Whether the point's process counts what a call allocates: not for a kind with no call
    to spare (a decoder's steps), nor in a point's later processes (the figure is its first
    process's)."""
    return task.kind.calls_again and task.count_allocations


def _profiled_call(work: Work) -> ProfiledCall:
    """One call under torch's profiler (measure/allocations.py): what it allocates through
    torch, and its time, which counts as a repetition only where ProfiledCall.timeable says
    the profiler cost it nothing measurable; else it is a warm-up call or one call more."""
    work.before()
    return profiled_call(work.run)


def _with_first_call(later: Timing, first_ms: float, first_cpu_ms: float, work: Work) -> Timing:
    """The repetitions with the measured first call among them when it was steady (no slower
    than the slowest later one by more than FIRST_CALL_SLACK, or the only one); else with one
    more repetition timed in its place, so a point keeps its count of repetitions."""
    if not later.samples_ms or first_ms <= max(later.samples_ms) * (1 + FIRST_CALL_SLACK):
        return _joined(Timing((first_ms,), (first_cpu_ms,)), later)
    more = time_cpu(
        work.run, before=work.before, warmup_s=0.0, min_warmup_calls=0, budget_s=0.0, min_reps=1, pace=_pace()
    )
    return _joined(later, more)


def _measure_cuda(task: Task, work: Work, device: torch.device, started: float) -> ProcessResult:
    from linbench.measure.cuda_memory import CudaPeak

    policy = task.timing
    with NvmlSampler(device.index if device.index is not None else torch.cuda.current_device()) as nvml:
        work.before()
        torch.cuda.synchronize(device)
        start = time.perf_counter()
        with CudaPeak(device) as peak:
            work.run()
        _check_probation(task, time.perf_counter() - start, started)
        # The sampler waits while the repetitions are queued (measure/nvml.py).
        timing = time_with_policy(work.run, device, policy, before=work.before, hold=nvml.quiet)
    result = with_nvml(_timed(timing), nvml)
    return replace(result, peak_bytes=peak.peak_bytes, reserved_bytes=peak.reserved_bytes)


def with_nvml(result: ProcessResult, nvml: NvmlSampler) -> ProcessResult:
    """``result`` with what results.csv keeps from the NVML sampler (and its error, if any)."""
    return replace(
        result,
        nvml_peak_bytes=nvml.peak_used_bytes,
        sm_clock_mhz=nvml.min_sm_clock_mhz,
        temp_c=nvml.max_temp_c,
        # The GPU is idle between kernels of a small op; that reason says nothing.
        throttle_reasons=throttle_names(nvml.throttle_mask & ~GPU_IDLE),
        error=nvml.error or result.error,
    )


def _timed(timing: Timing) -> ProcessResult:
    return ProcessResult(
        "ok",
        threads=torch.get_num_threads(),
        time_ms=timing.median_ms,
        time_ms_p20=timing.percentile_ms(20),
        time_ms_p80=timing.percentile_ms(80),
        cpu_ms_p20=timing.cpu_percentile_ms(20),
        paced_p20=timing.paced_percentile(20),
        pace_ms=timing.pace_ms,
        pace_work=PACE_WORK if timing.paced_samples else None,
        samples=timing.count,
        samples_ms=tuple(timing.samples_ms),
    )
