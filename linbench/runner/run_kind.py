"""``linbench run``'s kind of point: one attention call over a sequence, timed against a budget.

What a kind supplies is runner/kind_protocol.py's ``Kind``; this one's rows are fwd, bwd or
fwdbwd calls, its FLOPs the variant's count, and its gate the impl against the fp64 reference.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from linbench.dtypes import torch_dtype
from linbench.measure.timing_policy import TimingPolicy
from linbench.results.kinds import RUN_ROWS, Words
from linbench.results.processes import ProcessResult
from linbench.results.protocol import ProcessProtocol
from linbench.results.record import PointFacts
from linbench.runner.kind_protocol import SharedKind, Task, Work
from linbench.sweep import estimate
from linbench.sweep.points import Point
from linbench.variants.declarations import Param
from linbench.variants.feature_forms.triton_interpreter import untimeable_reason
from linbench.variants.registry import get_variant
from linbench.variants.selection import Selected, select_impls
from linbench.variants.traffic import minimal_bytes
from linbench.variants.variant import Variant

if TYPE_CHECKING:
    import torch

    from linbench.check.correctness import CaseResult
    from linbench.sweep.spec import SweepSpec

# Each of several processes needs less of its own budget: between processes, not within,
# is where the noise is (docs/gate.md).
CUDA_PROCESS_BUDGET_S = 0.3


@dataclass(frozen=True)
class RunKind(SharedKind):
    """``linbench run``: one attention call over a sequence, timed against a budget."""

    name: str = RUN_ROWS.name
    modes: tuple[str, ...] = RUN_ROWS.modes
    rate: str = RUN_ROWS.rate
    words: Words = RUN_ROWS.words
    # With one measured length, time is assumed to grow as seq² (the slower of the two
    # families), optimistically as seq, pessimistically as seq³ (runner/policy.py).
    default_exponent: float = 2.0
    single_point_range: tuple[float, float] = (1.0, 3.0)
    # A call can run once more after the timed ones: on a CPU, untimed, to count what it
    # allocates through torch (alloc_peak_bytes).
    calls_again: bool = True

    def select(self, specs: Iterable[str]) -> list[Selected]:
        return select_impls(specs)

    def unavailable_reason(self, pick: Selected, device: torch.device) -> str | None:
        impl = pick.variant.impls[pick.impl]
        return impl.unavailable_reason(device) or untimeable_reason(impl.library, device)

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
        traffic = minimal_bytes(point.mode, point.shape, torch_dtype(point.dtype), variant.extra_inputs)
        impl = variant.impl(point.impl)
        native = impl.gva if point.shape.value_grouped else impl.gqa
        return self._facts(point, device_name, params, flops, context=None, traffic=traffic, native=native)

    def held_bytes(self, point: Point) -> int:
        return estimate.input_bytes(point)

    def refusal(self, point: Point, held: str, device: str) -> str:
        return (
            f"the point {point.shape.label} {point.dtype} needs {held} for its inputs q, k and v alone; "
            f"{device}, so no impl can run it: lower {self.lower}"
        )

    def call_s(self, point: Point) -> float:
        return estimate.call_seconds(point, call_flops(point), estimate.form_rate(point))

    def setup_s(self, point: Point) -> float:
        return 0.0

    def check(self, task: Task) -> CaseResult:
        """The impl against the variant's fp64 reference at the task's shape (outputs, and
        gradients when the mode has a backward)."""
        from linbench.check.correctness import check_impl

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
        """The call, after one at a tiny length (thread pools and kernels start there), or for
        a Triton impl at the point's own length (its kernels compile and tune there:
        runner/triton_tuning.py)."""
        from linbench.runner.triton_tuning import warm_up as tuned_warm_up
        from linbench.runner.workload import TINY_SEQ, Workload, warm_up

        tuned_warm_up(task.point, lambda seq: warm_up(task.point, device, seq, task.params), TINY_SEQ)
        return Workload(task.point, device, task.seed, task.params), None

    def after_eager(self, task: Task, work: Work, device: torch.device, result: ProcessResult) -> ProcessResult:
        """The graph's replays, then the launch count, the kernels' device time and the energy:
        in this order, since the profiler slows the process after it (execute_gpu.py)."""
        from linbench.runner import execute_gpu
        from linbench.runner.workload import Workload

        assert isinstance(work, Workload)
        if task.cuda_graph:
            graph = self.graph_policy(task.timing)
            result = execute_gpu.with_graph(result, lambda: execute_gpu.capturable_call(work), device, graph)
        if task.count_launches:
            result = execute_gpu.with_launches(result, work.run, device, before=work.before)
            # The kernels' own time and the energy: once per point, as the launches are counted.
            energy = task.point.mode != "bwd"
            result = execute_gpu.with_device_split(result, work.run, device, before=work.before, energy=energy)
        return result

    def graph_policy(self, timing: TimingPolicy) -> TimingPolicy:
        from linbench.runner.execute_gpu import run_graph_policy

        return run_graph_policy(timing)


def call_flops(point: Point) -> float:
    """The FLOPs of one call for the estimate: the variant's count, or the S×S count for an
    impl that is quadratic in time where its variant is not (cosine:quadratic)."""
    from linbench.variants.flops import quadratic_flops

    variant = get_variant(point.variant)
    if variant.impl(point.impl).time_exponent == 2 and variant.time_exponent != 2:
        return quadratic_flops(*point.shape.sizes(), point.causal, point.mode)
    return variant.flops(*point.shape.sizes(), point.causal, point.mode)


# The run kind: it holds nothing per sweep, so one serves every run (runner/kinds.py).
RUN = RunKind()
