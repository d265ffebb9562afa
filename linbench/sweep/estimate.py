"""Before a sweep starts: whether its sizes can fit the device at all, and about how long it
will take.

**Fit.** A ``run`` point needs its inputs, q, k and v: B·H·S·(2·Dk + Dv) elements. When that
alone passes the device's whole memory (CPU: the machine's RAM; GPU: the device's memory),
no impl can run the point, and the sweep is refused before any folder is made. A ``decode``
point streams its context through the prefill, so only decoders whose state grows with the
context (a KV cache: state O(s·d)) need its keys and values, B·H·S·(Dk + Dv) elements.

**Duration.** A rough model, meant to tell minutes from days, not to predict a run. Each point
costs a fixed overhead (its worker forked, the correctness gate, its row written) plus the wall
time the timing policy gives one call (warm-up and repetitions, as the skip policy predicts it),
and one more call for the gate; a CPU ``run`` point's first process runs one more, profiled for
alloc_peak_bytes, where its warm-up calls cannot take it in (a call longer than the warm-up): at
most one more, since where the profiler's cost is negligible that call is a timed repetition
instead, which the estimate cannot know before the call. A point is measured in ``--processes``
processes, and more, up to ``--max-processes``, while they disagree: the estimate counts the
processes asked for, and ``most_estimate`` (linbench/runner/sizing.py) the most allowed, the
range the start line gives. One call takes the point's FLOPs (the variant's matmul count) at a
rate per device (at least MIN_CALL_S); decode points take a prefill (the state's work over the
context) and one step per timed token. A point whose time passes ``--timeout-s`` costs the
timeout, and the longer points of its series cost nothing: the runner skips them.

The CPU constants were fitted to the runs recorded on the development machine (2 cores, torch
2.13.0), estimate against measured wall time: paper-fig5 6 min / 5 min 42 s and paper-fig2
6 min / 4 min 58 s (results/cpu-reference/); from the README (measured before cosine:kernel
existed, so counted without it) ``--variant cosine --seq 1k..16k`` 5 min / 4 min 53 s,
``--seq 1k..64k`` 12 min / 9 min 4 s, and the 75-point sweep over three head dims 2 min /
1 min 44 s. An impl quadratic in time where its variant is not (cosine:quadratic) is counted
with the S×S FLOPs (linbench/runner/kinds.py counts each point's FLOPs from what its
variant declares). The GPU rate and minimum call are guesses; the CUDA overhead is the middle
of the 5-8 s of process start-up and correctness gate an H200 point took (results/h200/README.md).
Measured since (load 3.6-4.6, torch 2.13.0): the run-overhead sweep ``--variant cosine:kernel
--against softmax:sdpa --seq 4k,8k,16k --mode fwd`` took 38-40 s against 98 s (ratios
0.39-0.41, three runs at load 2.7-5.0; softmax:sdpa ran at 75 GFLOP/s against the model's 20),
while a user's gated run took 329 s against 161 s (2.0) and a decode run 89 s against 210 s
(0.42). One CPU rate cannot fit both directions, so a run call's rate is the form's
(CPU_FORM_RATE: sdpa and the kernels faster than RATE, the chunked and recurrent loops of
small ops slower): the run-overhead sweep is now estimated at 26 s and took 41-48 s at load
2.6-4.0 (docs/measurement.md), paper-fig5 377 s against 342 s.

**Memory of a form.** An impl declares how its memory grows (``memory_complexity``: the
quadratic forms ``O(s²)`` or ``O(s²d)``); ``working_set_bytes`` turns that into the least a call
holds (WORKING_COPIES tensors of that size). A sweep of bare variant names leaves out the points
where that passes the memory a worker may take (linbench/runner/oversized.py).

**Build.** A command that builds linbench's kernels on first use (linbench/runner/sizing.py
tells) adds ``BUILD_S``. The model is an idle machine's: on a busy one every worker start and
call takes longer. Each run keeps its estimate, what it took and their ratio in meta.json
(linbench/results/estimate_record.py), and tests/runner/test_estimate_record.py checks this
model against the runs committed under results/.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from linbench.measure.timing_policy import TimingPolicy
from linbench.sweep.points import Point
from linbench.units import format_bytes

ELEMENT_BYTES = {"fp64": 8, "fp32": 4, "bf16": 2, "fp16": 2}
# FLOP/s a call achieves, seconds a call takes at least, and the fixed cost of a point.
RATE = {"cpu": 20e9, "cuda": 20e12}
# A run call's FLOP/s on the CPU by the form of its impl (its name, or the part before a dash:
# sdpa-math is sdpa), where one rate is off tens of times. The quiet reference run
# results/cpu-reference/*-paper-fig5 (B1 H8, D16-128, 1k-8k, fwd and fwdbwd, fp32, 2 threads),
# each call's FLOPs as the model counts them, gave (middle half of its points) sdpa 89-146
# GFLOP/s, cosine:kernel 40-101, cosine:chunked 9-53, cosine:recurrent 0.4-8.6 (median 1.8);
# cosine:quadratic 24-57 and softmax:naive 14-41 are RATE's. The gated run beside it (busy:
# sdpa 6x slower) kept the order: chunked forms 2-4, recurrent 0.3-1.4, sdpa 11-20. Each rate
# is near its median, rounded down. Any other form (a plugin's) takes RATE; so do decode
# steps, whose decoders' names say nothing of a step's speed.
CPU_FORM_RATE = {"sdpa": 100e9, "kernel": 40e9, "chunked": 15e9, "recurrent": 1.5e9}
MIN_CALL_S = {"cpu": 2e-4, "cuda": 2e-5}
# CUDA: an H200 point took 5-8 s of process start-up and correctness gate
# (results/h200/README.md), the middle of that range.
OVERHEAD_S = {"cpu": 0.6, "cuda": 6.5}
# The first-use build of csrc/ (linbench/kernels/build.py), counted when a command makes it: the
# CPU part took 21-26 s on two idle cores (docs/kernels.md); the CUDA build adds nvcc's, a guess.
BUILD_S = {"cpu": 25.0, "cuda": 120.0}
# The fewest tensors of its declared size (memory_complexity) a form held at its peak, measured
# on the CPU in fwd fp32 at 512 and 1k tokens: cosine:quadratic 2 of S×S, softmax:naive 2.3,
# retention:quadratic 3.2, deltanet:quadratic 4.3; gla:quadratic 4 of S×S×Dk (8 GiB at 1k, B1
# H8 D64). The fewest, so that a form is never left out where it would have fitted; a form
# measured to hold more declares it (Impl.working_copies: gla:quadratic 4, deltanet's 4,
# retention's 3), else it would run at 2k on a 24 GiB machine and end out of memory.
WORKING_COPIES = 2
# A sweep past either limit runs only with --yes.
MAX_POINTS = 2000
MAX_ESTIMATE_S = 2 * 3600.0
MAX_ELEMENTS = 2**63


class SweepTooLargeError(ValueError):
    """A sweep whose sizes no device here can hold."""


class PointModel(Protocol):
    """What the model asks of a kind of point (linbench/runner/kinds.py's kinds answer, with
    the formulas below and what the variants declare)."""

    @property
    def lower(self) -> str:
        """The options that shrink a point: ``--seq, --batch, --heads or --dim``."""
        ...

    def held_bytes(self, point: Point) -> int:
        """Bytes the point's tensors need at least."""
        ...

    def refusal(self, point: Point, held: str, device: str) -> str:
        """Why the point cannot run, when it needs ``held`` and ``device`` says what there is."""
        ...

    def call_s(self, point: Point) -> float:
        """Seconds one timed call takes by the model."""
        ...

    def setup_s(self, point: Point) -> float:
        """Seconds of untimed work before the calls (a decode point's prefill)."""
        ...

    @property
    def calls_again(self) -> bool:
        """Whether a CPU point's first process runs one more call, profiled (alloc_peak_bytes)."""
        ...


def device_type(device: str) -> str:
    """The key of the constants above for a device name (cpu, cuda, cuda:1)."""
    return "cuda" if device.startswith("cuda") else "cpu"


def _device_type(point: Point) -> str:
    return device_type(point.device)


def input_bytes(point: Point) -> int:
    """Bytes of a call's inputs, q, k and v (k and v with the point's key/value heads, v with its
    value heads under GVA)."""
    b, _, s, dk, dv = point.shape.sizes()
    shape = point.shape
    elements = shape.heads * dk + shape.kv_heads * dk + shape.v_tensor_heads * dv
    return b * s * elements * ELEMENT_BYTES.get(point.dtype, 4)


def context_bytes(point: Point) -> int:
    """Bytes of the keys and values of a decode point's context (per key/value head, values per
    value head under GVA)."""
    b, _, s, dk, dv = point.shape.sizes()
    elements = point.shape.kv_heads * dk + point.shape.v_tensor_heads * dv
    return b * s * elements * ELEMENT_BYTES.get(point.dtype, 4)


def working_set_bytes(point: Point, s_power: int, d_power: int, copies: int | None = None) -> int:
    """The least memory a call of an impl holds by its memory declaration (``O(s²d)``: s_power
    2, d_power 1): ``copies`` (the impl's measured ``working_copies``, else WORKING_COPIES)
    tensors of B·H·s^s_power·d^d_power elements of the point's dtype (d: the smaller head
    dim). A lower bound: a form that needs more than the machine has by it would run out of
    memory, so a sweep can leave it out before it runs."""
    b, h, s, dk, dv = point.shape.sizes()
    elements = b * h * s**s_power * min(dk, dv) ** d_power
    return elements * ELEMENT_BYTES.get(point.dtype, 4) * (copies or WORKING_COPIES)


def check_fits(points: Iterable[Point], memory_bytes: int, model: PointModel) -> None:
    """SweepTooLargeError naming the first point whose tensors alone pass ``memory_bytes``, or
    whose element count passes what a tensor can index (2^63 - 1)."""
    for point in points:
        b, h, s, dk, dv = point.shape.sizes()
        if b * h * s * max(dk, dv) >= MAX_ELEMENTS:
            raise SweepTooLargeError(
                f"the point {point.shape.label} has more elements than a tensor can index (2^63 - 1); "
                f"lower {model.lower}"
            )
        need = model.held_bytes(point)
        if need > memory_bytes:
            device = f"the device {point.device} has {_bytes(memory_bytes)} in all"
            raise SweepTooLargeError(model.refusal(point, _bytes(need), device))


def _bytes(count: int) -> str:
    return format_bytes(count) if count < 1 << 50 else f"{count:.1e} bytes"


def call_seconds(point: Point, flops: float, rate: float | None = None) -> float:
    """Seconds one call of ``flops`` takes by the model (at least MIN_CALL_S), at ``rate``
    FLOP/s, else the device's RATE."""
    device = _device_type(point)
    return max(flops / (rate or RATE[device]), MIN_CALL_S[device])


def form_rate(point: Point) -> float:
    """FLOP/s of a run call of ``point``'s impl: by its form on the CPU (CPU_FORM_RATE),
    else the device's RATE."""
    device = _device_type(point)
    if device != "cpu":
        return RATE[device]
    return CPU_FORM_RATE.get(point.impl.split("-")[0], RATE[device])


def step_flops(point: Point, step_exponent: int | None) -> float:
    """A decode step's FLOPs, grown with the context as its decoder declares
    (``step_exponent``: 2 recomputes, 1 reads a cache, 0 or None updates a fixed state)."""
    b, h, s, dk, dv = point.shape.sizes()
    if step_exponent == 2:
        return 4.0 * b * h * s * s * (dk + dv) / 2
    if step_exponent == 1:
        return 2.0 * b * h * s * (dk + dv)
    return 4.0 * b * h * dk * dv


def prefill_s(point: Point) -> float:
    """Decode: the prefill, taken as the state's work over the context (4·Dk·Dv per token)."""
    b, h, s, dk, dv = point.shape.sizes()
    return 4.0 * b * h * s * dk * dv / RATE[_device_type(point)]


def estimate_s(
    points: Sequence[Point], timing: TimingPolicy, timeout_s: float, model: PointModel, processes: int = 1
) -> float:
    """Seconds the points will take by the model, each in ``processes`` processes: each
    process's overhead, set-up, calls under ``timing`` and one more for the gate, at most
    ``timeout_s`` (the longer points of a series that passed it are skipped); on a CPU, the
    profiled call of a point's first process (``model.calls_again``: alloc_peak_bytes) where
    the point's warm-up does not take it in."""
    total = 0.0
    stopped: set[tuple[object, ...]] = set()
    for point in points:
        if point.series in stopped:
            continue  # a shorter point of the series timed out: the runner skips this one
        one = model.call_s(point)
        seconds = timing.predicted_s(one) + one + model.setup_s(point)
        if seconds > timeout_s:
            stopped.add(point.series)
            seconds = timeout_s
        device = _device_type(point)
        profiled = _profiled_s(one, timing) if model.calls_again and device == "cpu" else 0.0
        total += (OVERHEAD_S[device] + seconds) * processes + min(profiled, timeout_s)
    return total


def _profiled_s(call_s: float, timing: TimingPolicy) -> float:
    """What the profiled call adds to a point: the warm-up calls the point makes anyway
    (``timing.predicted_s``'s) take it in, and only the part of one call past them is more."""
    warmup = max(timing.warmup_s - call_s, 0.0) + timing.warmup_calls * call_s
    return max(call_s - warmup, 0.0)


def format_duration(seconds: float) -> str:
    """``45 s``, ``4 min``, ``3.2 h``, ``12 days``."""
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:,.0f} days"


def too_large(points: int, seconds: float) -> str | None:
    """Why a sweep needs --yes, or None when it does not."""
    reasons = []
    if points > MAX_POINTS:
        reasons.append(f"{points} points (more than {MAX_POINTS})")
    if seconds > MAX_ESTIMATE_S:
        reasons.append(f"about {format_duration(seconds)} by a rough estimate (more than 2 h)")
    return " and ".join(reasons) or None
