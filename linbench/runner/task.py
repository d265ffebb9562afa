"""What the supervisor sends a worker: one point to check or to measure, and the rules."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from linbench.sweep.points import Point

if TYPE_CHECKING:
    from linbench.runner.kind_protocol import Kind

# The decode gate compares this many steps after its prefill with the reference's last rows.
GATE_STEPS = 4
# The correctness gate runs the fp64 reference, which holds a few B·H·S×S tensors; at
# long lengths it runs at the longest length whose reference fits this budget instead.
GATE_BUDGET_BYTES = 512 * 1024 * 1024
_GATE_COPIES = 4  # scores, probabilities and their gradients, in fp64
MIN_GATE_SEQ = 16


@dataclass(frozen=True)
class TimingPolicy:
    """Warm-up and repetition budget of one measured point."""

    warmup_s: float
    budget_s: float
    min_reps: int
    max_reps: int
    warmup_calls: int = 0  # untimed calls after the measured first one, whatever the warm-up time
    # GPU: overwrite L2 before each timed call, so no call reads the last one's data from cache.
    flush_l2: bool = True
    # CPU: a measured first call at least as long as the warm-up time is timed as a repetition
    # too, kept unless it was slower than every later one by more than FIRST_CALL_SLACK (then one
    # more repetition is timed in its place). Such a call is its own warm-up (the warm-up time
    # is over when it returns), and lazy start-up ran in the tiny call before it.
    long_first_call_timed: bool = False

    @classmethod
    def for_device(cls, device_type: str, budget_s: float | None = None) -> TimingPolicy:
        """The defaults for ``device_type``; ``budget_s`` replaces the repetition budget."""
        if device_type == "cuda":
            policy = cls(warmup_s=0.1, budget_s=0.5, min_reps=10, max_reps=1000)
        else:
            # CPU points are long and noisy at once: three repetitions at least, a second of budget.
            policy = cls(warmup_s=0.2, budget_s=1.0, min_reps=3, max_reps=100, long_first_call_timed=True)
        if budget_s is None:
            return policy
        return replace(policy, warmup_s=min(policy.warmup_s, budget_s), budget_s=budget_s)

    @classmethod
    def for_decode(cls, tokens: int) -> TimingPolicy:
        """Decoding times each generated token: exactly ``tokens`` steps, whatever they take
        (each step consumes a token, so there is no budget to repeat it against), after the
        step whose memory is read and one more untimed. On a GPU the steps run back to back,
        as they do in generation: L2 is not flushed between them (the state a step reads is
        the one the step before wrote, and a flush between steps would give the host a head
        start that hides its launch time in a launch-bound step)."""
        return cls(warmup_s=0.0, budget_s=0.0, min_reps=tokens, max_reps=tokens, warmup_calls=1, flush_l2=False)

    @property
    def calls(self) -> int:
        """The most calls a point makes: the measured first, the warm-up calls, the repetitions."""
        return 1 + self.warmup_calls + self.max_reps

    def first_is_timed(self, first_s: float) -> bool:
        """Whether a measured first call of ``first_s`` seconds counts as a repetition."""
        return self.long_first_call_timed and first_s >= self.warmup_s and self.max_reps > 1

    def predicted_s(self, call_s: float) -> float:
        """Wall time of a point whose single call takes ``call_s``: the measured first call,
        the rest of the warm-up, then the timed repetitions (one fewer where the first counts)."""
        warmup = max(self.warmup_s - call_s, 0.0) + self.warmup_calls * call_s
        reps = max(self.min_reps * call_s, min(self.budget_s, self.max_reps * call_s))
        if self.first_is_timed(call_s):
            reps = max(reps - call_s, call_s)
        return call_s + warmup + reps


@dataclass(frozen=True)
class Task:
    """One job for a worker process: ``gate`` checks a point against its reference,
    ``measure`` times it and reads its peak memory, as its ``kind`` of point says."""

    job: Literal["gate", "measure"]
    point: Point
    timing: TimingPolicy
    kind: Kind  # run or decode (runner/kinds.py)
    plugins: tuple[str, ...] = ()
    # CPU only: the most address space the worker may add; None leaves it unlimited.
    memory_limit_bytes: int | None = None
    seed: int = 0
    cuda_graph: bool = False  # on CUDA: also time replays of a call (run) or step (decode) captured in a graph
    # On probation (runner/policy.py): the point's time limit, checked after its first call.
    stop_after_s: float | None = None
    params: dict[str, Any] = field(default_factory=dict)  # --param values for the point's impl
    threads: int | None = None  # torch.set_num_threads in the worker; None: torch's default
    # On CUDA: count the launches of one untimed call (kernels_per_call) after the timing. The
    # count is the same in every process, and the profiler slows the process after it: count
    # in one process per point, as the last measurement that process makes.
    count_launches: bool = True
    # On CPU: profile one untimed call after the timing for alloc_peak_bytes. The figure is the
    # same in every process (tests/runner/test_alloc_peak.py), and a profiled call costs about
    # one call or more: count in one process per point, its first.
    count_allocations: bool = True


def gate_seq(point: Point) -> int:
    """The length the correctness gate runs at: the point's own, or the longest that fits."""
    shape = point.shape
    per_position_pair = shape.batch * shape.heads * 8 * _GATE_COPIES
    fits = int((GATE_BUDGET_BYTES / per_position_pair) ** 0.5)
    return min(shape.seq, max(fits, MIN_GATE_SEQ))


def gate_point(point: Point) -> Point:
    """The point the gate checks: ``point`` at ``gate_seq``."""
    return replace(point, shape=replace(point.shape, seq=gate_seq(point)))


def gate_key(point: Point) -> tuple[object, ...]:
    """Points with the same gate key share one gate run (fwd needs no gradients checked)."""
    gated = gate_point(point)
    # Each chunk size of a --chunk sweep is its own code path, checked apart.
    point_axes = (gated.shape, gated.packing, gated.chunk)
    return (*gated.series[:2], gated.mode != "fwd", gated.causal, gated.dtype, gated.device, *point_axes)
