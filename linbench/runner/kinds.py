"""The kinds of point a sweep measures, and everything that differs between them.

A ``run`` point times one attention call (a forward, a backward, or both) over a sequence;
a ``decode`` point prefills a context and times the tokens it generates, one step a call.
The kind is resolved once, from the sweep's command (``kind_of``), and carried on the plan
and on every task: the planner, the skip policy, the estimate and the worker ask their kind
what to do instead of testing the mode. execute.py calls a kind; a kind never calls it back.

A kind supplies (``Kind``):

- who it is: ``name`` (the command), the ``modes`` of its rows, the ``rate`` its rows derive
  from their time, and ``words`` for what it says;
- planning: which registry entries its names ``select`` and which cannot run here
  (``unavailable_reason``, ``optional``, ``unsupported_reason``), the ``param_specs`` an entry
  takes, the ``timing`` policy, the process ``protocol``, whether curves may share workers
  (``shares_workers``), and each point's row ``facts`` (FLOPs, context);
- the skip policy's guesses from one length: ``default_exponent`` and ``single_point_range``;
- the estimate (sweep/estimate.py's PointModel): ``held_bytes``, ``refusal``, ``call_s``, ``setup_s``;
- the worker: the correctness ``check``, the ``measuring`` context, the ``workload`` it times,
  what it measures ``after_eager`` on a GPU, and the ``graph_policy`` of CUDA-graph replays.

A third kind (prefill only, say) is one more class with these members, listed in ``KINDS``.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from linbench.dtypes import torch_dtype
from linbench.results.processes import ProcessResult
from linbench.results.protocol import ProcessProtocol
from linbench.results.record import PER_SECOND, PER_TOKEN, PointFacts
from linbench.results.schema import DECODE_MODE, MODES
from linbench.runner.task import GATE_STEPS, Task, TimingPolicy
from linbench.sweep import estimate
from linbench.sweep.points import Point
from linbench.sweep.settings import LENGTH_AXIS
from linbench.variants.declarations import Param
from linbench.variants.registry import get_variant
from linbench.variants.selection import Selected, select_decoders, select_impls
from linbench.variants.traffic import minimal_bytes
from linbench.variants.variant import Variant

if TYPE_CHECKING:
    import torch

    from linbench.correctness import CaseResult
    from linbench.sweep.spec import SweepSpec

# Each of several processes needs less of its own budget: between processes, not within,
# is where the noise is (docs/gate.md).
CUDA_PROCESS_BUDGET_S = 0.3


class Work(Protocol):
    """What a kind's workload gives the timers: untimed ``before`` and timed ``run`` of one
    repetition."""

    def before(self) -> None: ...

    def run(self) -> None: ...


@dataclass(frozen=True)
class Words:
    """What a kind's messages call things."""

    call: str  # one timed call ("stopped after its first call")
    per: str  # what a time is per ("0.5 s per call")
    lengths: str  # its lengths ("fitted to 3 shorter lengths")
    targets: str  # what its names select ("3 impls")
    length: str  # the setting of its length axis (sweep/settings.py), and its column header
    length_label: str  # a length in a line ("S=1k")
    time: str  # the header of its time


class Kind(Protocol):
    """What differs between the kinds of point (module doc)."""

    @property
    def name(self) -> str: ...
    @property
    def modes(self) -> tuple[str, ...]: ...
    @property
    def rate(self) -> str: ...
    @property
    def words(self) -> Words: ...
    @property
    def default_exponent(self) -> float: ...
    @property
    def single_point_range(self) -> tuple[float, float]: ...
    @property
    def lower(self) -> str: ...
    def select(self, specs: Iterable[str]) -> list[Selected]: ...
    def unavailable_reason(self, pick: Selected, device: torch.device) -> str | None: ...
    def optional(self, pick: Selected) -> bool: ...
    def unsupported_reason(
        self, pair: tuple[str, str], dim_k: int, dim_v: int, dtype: str, device_type: str | None = None
    ) -> str | None: ...
    def param_specs(self, variant: Variant, name: str) -> dict[str, Param]: ...
    def timing(self, spec: SweepSpec, device: torch.device) -> TimingPolicy: ...
    def protocol(self, spec: SweepSpec) -> ProcessProtocol: ...
    def shares_workers(self, device: torch.device) -> bool: ...
    def facts(self, point: Point, device_name: str, params: str) -> PointFacts: ...
    def held_bytes(self, point: Point) -> int: ...
    def refusal(self, point: Point, held: str, device: str) -> str: ...
    def call_s(self, point: Point) -> float: ...
    def setup_s(self, point: Point) -> float: ...
    def check(self, task: Task) -> CaseResult: ...
    def measuring(self) -> AbstractContextManager[object]: ...
    def workload(self, task: Task, device: torch.device) -> tuple[Work, int | None]: ...
    def after_eager(self, task: Task, work: Work, device: torch.device, result: ProcessResult) -> ProcessResult: ...
    def graph_policy(self, timing: TimingPolicy) -> TimingPolicy: ...


class _Shared:
    """What the kinds share: the options that shrink a point, and its row's facts."""

    rate: str
    words: Words

    @property
    def lower(self) -> str:
        return f"--{self.words.length}, --batch, --heads or --dim"

    def _facts(
        self,
        point: Point,
        device_name: str,
        params: str,
        flops: float | None,
        context: int | None,
        traffic: int | None = None,
        native: bool = False,
    ) -> PointFacts:
        tokens = point.shape.batch * point.shape.seq
        # With fewer key/value heads than heads, how the impl (decoder) took them.
        gqa = ("native" if native else "expanded") if point.shape.grouped else ""
        return PointFacts(point.as_row(), device_name, params, flops, context, self.rate, tokens, traffic, gqa=gqa)


@dataclass(frozen=True)
class RunKind(_Shared):
    """``linbench run``: one attention call over a sequence, timed against a budget."""

    name: str = "run"
    modes: tuple[str, ...] = MODES
    rate: str = PER_SECOND
    words: Words = Words("call", "call", "lengths", "impls", LENGTH_AXIS["run"], "S", "time")
    # With one measured length, time is assumed to grow as seq² (the slower of the two
    # families), optimistically as seq, pessimistically as seq³ (runner/policy.py).
    default_exponent: float = 2.0
    single_point_range: tuple[float, float] = (1.0, 3.0)

    def select(self, specs: Iterable[str]) -> list[Selected]:
        return select_impls(specs)

    def unavailable_reason(self, pick: Selected, device: torch.device) -> str | None:
        return pick.variant.impls[pick.impl].unavailable_reason(device)

    def optional(self, pick: Selected) -> bool:
        return pick.variant.impls[pick.impl].optional

    def unsupported_reason(
        self, pair: tuple[str, str], dim_k: int, dim_v: int, dtype: str, device_type: str | None = None
    ) -> str | None:
        return get_variant(pair[0]).impl(pair[1]).unsupported_reason(dim_k, dim_v, dtype, device_type)

    def param_specs(self, variant: Variant, name: str) -> dict[str, Param]:
        """The variant's parameters, the impl's own (ValueError naming the impls) and how its
        extra inputs are drawn (gate_regime)."""
        specs = (*variant.param_specs, *variant.impl(name).params, *variant.draw_params)
        return {spec.name: spec for spec in specs}

    def timing(self, spec: SweepSpec, device: torch.device) -> TimingPolicy:
        """The device's defaults, less budget per process with several, and the spec's own."""
        budget = spec.budget_s
        if budget is None and (spec.processes or 1) > 1 and device.type == "cuda":
            budget = CUDA_PROCESS_BUDGET_S
        timing = TimingPolicy.for_device(device.type, budget)
        if spec.warmup_s is not None:
            timing = replace(timing, warmup_s=spec.warmup_s)
        if spec.min_reps is not None:
            timing = replace(timing, min_reps=spec.min_reps, max_reps=max(timing.max_reps, spec.min_reps))
        return timing

    def protocol(self, spec: SweepSpec) -> ProcessProtocol:
        return ProcessProtocol.of(spec.processes, spec.max_processes)

    def shares_workers(self, device: torch.device) -> bool:
        """Everywhere: a GPU's allocator peaks are reset per call, and a CPU worker hands its
        freed heap back before the call whose peak RSS it reads (execute.py)."""
        return True

    def facts(self, point: Point, device_name: str, params: str) -> PointFacts:
        """FLOPs by the variant's count, and the fewest bytes the call moves (its gates and β
        included: variants/traffic.py), for GFLOP/s and the roofline."""
        variant = get_variant(point.variant)
        flops = variant.flops(*point.shape.sizes(), point.causal, point.mode)
        traffic = minimal_bytes(point.mode, point.shape.sizes(), torch_dtype(point.dtype), variant.extra_inputs)
        native = variant.impl(point.impl).gqa
        return self._facts(point, device_name, params, flops, context=None, traffic=traffic, native=native)

    def held_bytes(self, point: Point) -> int:
        return estimate.input_bytes(point)

    def refusal(self, point: Point, held: str, device: str) -> str:
        return (
            f"the point {point.shape.label} {point.dtype} needs {held} for its inputs q, k and v alone; "
            f"{device}, so no impl can run it: lower {self.lower}"
        )

    def call_s(self, point: Point) -> float:
        return estimate.call_seconds(point, call_flops(point))

    def setup_s(self, point: Point) -> float:
        return 0.0

    def check(self, task: Task) -> CaseResult:
        """The impl against the variant's fp64 reference at the task's shape (outputs, and
        gradients when the mode has a backward)."""
        from linbench.correctness import check_impl

        point = task.point
        variant, dtype = get_variant(point.variant), torch_dtype(point.dtype)
        return check_impl(
            variant,
            point.impl,
            point.shape,
            causal=point.causal,
            dtype=dtype,
            device=point.device,
            seed=task.seed,
            gradients=point.mode != "fwd",
            params=task.params,
        )

    def measuring(self) -> AbstractContextManager[object]:
        return nullcontext()

    def workload(self, task: Task, device: torch.device) -> tuple[Work, int | None]:
        """The call, after one at a tiny length (thread pools and kernels start there)."""
        from linbench.runner.workload import Workload, warm_up

        warm_up(task.point, device, params=task.params)
        return Workload(task.point, device, task.seed, task.params), None

    def after_eager(self, task: Task, work: Work, device: torch.device, result: ProcessResult) -> ProcessResult:
        """The graph's replays, then the launch count: in this order, since the profiler slows
        the process after it (execute_gpu.py)."""
        from linbench.runner import execute_gpu
        from linbench.runner.workload import Workload

        assert isinstance(work, Workload)
        if task.cuda_graph:
            graph = self.graph_policy(task.timing)
            result = execute_gpu.with_graph(result, lambda: execute_gpu.capturable_call(work), device, graph)
        if task.count_launches:
            result = execute_gpu.with_launches(result, work.run, device, before=work.before)
        return result

    def graph_policy(self, timing: TimingPolicy) -> TimingPolicy:
        from linbench.runner.execute_gpu import run_graph_policy

        return run_graph_policy(timing)


@dataclass(frozen=True)
class DecodeKind(_Shared):
    """``linbench decode``: one generated token a call, after a prefilled context."""

    name: str = "decode"
    modes: tuple[str, ...] = (DECODE_MODE,)
    rate: str = PER_TOKEN
    words: Words = Words("step", "token", "contexts", "decoders", LENGTH_AXIS["decode"], "context", "time/token")
    # A KV cache's step is linear in the context, a recurrent one constant; the naive
    # recompute's quadratic step shows its exponent from its second context on.
    default_exponent: float = 1.0
    single_point_range: tuple[float, float] = (0.0, 2.0)

    def select(self, specs: Iterable[str]) -> list[Selected]:
        return select_decoders(specs)

    def unavailable_reason(self, pick: Selected, device: torch.device) -> str | None:
        return None  # decoders run wherever torch does

    def optional(self, pick: Selected) -> bool:
        return False

    def unsupported_reason(
        self, pair: tuple[str, str], dim_k: int, dim_v: int, dtype: str, device_type: str | None = None
    ) -> str | None:
        return None  # decoders take any head dim

    def param_specs(self, variant: Variant, name: str) -> dict[str, Param]:
        """A decoder takes its variant's parameters (ValueError naming the decoders) and how
        its extra inputs are drawn (gate_regime)."""
        variant.decoder(name)
        return {spec.name: spec for spec in (*variant.param_specs, *variant.draw_params)}

    def timing(self, spec: SweepSpec, device: torch.device) -> TimingPolicy:
        return TimingPolicy.for_decode(spec.tokens or 1)

    def protocol(self, spec: SweepSpec) -> ProcessProtocol:
        return ProcessProtocol(1, 1)

    def shares_workers(self, device: torch.device) -> bool:
        return False

    def facts(self, point: Point, device_name: str, params: str) -> PointFacts:
        # A variant's FLOP formula counts a whole sequence; a decode step is another thing. Its
        # length is the context the steps follow.
        native = get_variant(point.variant).decoder(point.impl).gqa
        return self._facts(point, device_name, params, None, context=point.shape.seq, native=native)

    def held_bytes(self, point: Point) -> int:
        """The context's keys and values, for a decoder whose state grows with it."""
        decoder = get_variant(point.variant).decoders.get(point.impl)
        return estimate.context_bytes(point) if decoder is None or decoder.state_grows else 0

    def refusal(self, point: Point, held: str, device: str) -> str:
        return (
            f"{point.variant}:{point.impl} at {point.shape.label} {point.dtype} keeps {held} of keys and "
            f"values; {device}: lower {self.lower}, or drop the decoder"
        )

    def call_s(self, point: Point) -> float:
        decoder = get_variant(point.variant).decoders.get(point.impl)
        exponent = decoder.step_exponent if decoder is not None else None
        return estimate.call_seconds(point, estimate.step_flops(point, exponent))

    def setup_s(self, point: Point) -> float:
        return estimate.prefill_s(point)

    def check(self, task: Task) -> CaseResult:
        """Decoding against the reference's last rows, after a prefill of the point's context."""
        from linbench.correctness import check_decoder

        point = task.point
        shape = replace(point.shape, seq=point.shape.seq + GATE_STEPS)
        variant, dtype = get_variant(point.variant), torch_dtype(point.dtype)
        return check_decoder(
            variant,
            point.impl,
            shape,
            steps=GATE_STEPS,
            dtype=dtype,
            device=point.device,
            seed=task.seed,
            params=task.params,
        )

    def measuring(self) -> AbstractContextManager[object]:
        import torch

        return torch.no_grad()

    def workload(self, task: Task, device: torch.device) -> tuple[Work, int | None]:
        """The steps after an untimed prefill, and the bytes the state holds then (``cuda_graph``
        reserves the spare token a repeatable step needs)."""
        from linbench.runner.decode_workload import DecodeWorkload, warm_up
        from linbench.variants.decoding import state_bytes

        warm_up(task.point, device, params=task.params)
        work = DecodeWorkload(
            task.point, device, task.timing.calls, task.seed, spare=task.cuda_graph, params=task.params
        )
        work.prefill()
        return work, state_bytes(work.state)

    def after_eager(self, task: Task, work: Work, device: torch.device, result: ProcessResult) -> ProcessResult:
        """With ``cuda_graph``, the replays of one captured step, then its launches."""
        from linbench.runner import execute_gpu
        from linbench.runner.decode_workload import DecodeWorkload

        assert isinstance(work, DecodeWorkload)
        if not task.cuda_graph:
            return result
        step = work.repeatable_step()
        result = execute_gpu.with_graph(result, lambda: step, device, self.graph_policy(task.timing))
        return execute_gpu.with_launches(result, step, device) if task.count_launches else result

    def graph_policy(self, timing: TimingPolicy) -> TimingPolicy:
        from linbench.runner.execute_gpu import decode_graph_policy

        return decode_graph_policy(timing)


RUN = RunKind()
DECODE = DecodeKind()
KINDS: dict[str, Kind] = {kind.name: kind for kind in (RUN, DECODE)}


def kind_of(command: str) -> Kind:
    """The kind of point ``command`` (run, decode) measures."""
    return KINDS[command]


def kind_of_mode(mode: str) -> Kind:
    """The kind of point a row of ``mode`` is (a run's fwd, bwd or fwdbwd; decode)."""
    return next((kind for kind in KINDS.values() if mode in kind.modes), RUN)


def call_flops(point: Point) -> float:
    """The FLOPs of one call for the estimate: the variant's count, or the S×S count for an
    impl that is quadratic in time where its variant is not (cosine:quadratic)."""
    from linbench.variants.flops import quadratic_flops

    variant = get_variant(point.variant)
    if variant.impl(point.impl).time_exponent == 2 and variant.time_exponent != 2:
        return quadratic_flops(*point.shape.sizes(), point.causal, point.mode)
    return variant.flops(*point.shape.sizes(), point.causal, point.mode)
