"""Points on probation: the runner marks them, and the worker stops one after its first
call when that call says the point cannot finish within its limit."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from linbench.measure.timing_policy import TimingPolicy
from linbench.results.processes import ProcessResult
from linbench.results.store import RunStore
from linbench.runner.execute import run_measure
from linbench.runner.kind_protocol import Task
from linbench.runner.kinds import DECODE, RUN
from linbench.runner.plan import RunPlan
from linbench.runner.sweep_runner import SweepRunner
from linbench.runner.targets import Targets
from linbench.shape import Shape
from linbench.sweep.points import Point
from linbench.variants.registry import Impl, Variant, register_variant, unregister_variant

SLEEPY = "sleepy_for_probation_tests"
CALL_S = 0.1
THREE_REPS = TimingPolicy(warmup_s=0.0, budget_s=0.0, min_reps=3, max_reps=3)


def _slow(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    time.sleep(CALL_S)
    return v.clone()


@pytest.fixture
def sleepy() -> Iterator[str]:
    register_variant(
        Variant(
            name=SLEEPY,
            summary="v, slowly",
            impl_list=(Impl("slow", _slow, "sleeps", "O(1)", "O(1)"),),
            reference="slow",
            param_specs=(),
            flop_formula=lambda *args: 0.0,
            time_complexity="O(1)",
            memory_complexity="O(1)",
        )
    )
    yield SLEEPY
    unregister_variant(SLEEPY)


def _task(variant: str, stop_after_s: float | None) -> Task:
    point = Point(variant, "slow", "fwd", True, "fp32", "cpu", Shape(1, 1, 16, 4, 4))
    return Task(job="measure", point=point, timing=THREE_REPS, kind=RUN, stop_after_s=stop_after_s)


def test_a_point_on_probation_stops_after_its_first_call(sleepy: str) -> None:
    # Four calls of at least 0.1 s each cannot fit in 0.2 s, however busy the machine is.
    result = run_measure(_task(sleepy, stop_after_s=0.2))
    assert result.status == "timeout"
    assert "stopped after its first call" in str(result.error) and "--timeout-s 0.2" in str(result.error)
    assert result.samples_ms == ()


def test_a_point_on_probation_that_fits_is_measured_in_full(sleepy: str) -> None:
    result = run_measure(_task(sleepy, stop_after_s=600.0))
    assert result.status == "ok" and result.samples == 3


def test_a_point_not_on_probation_is_never_stopped_early(sleepy: str) -> None:
    result = run_measure(_task(sleepy, stop_after_s=None))
    assert result.status == "ok" and result.samples == 3


class _RecordingSupervisor:
    """Stands in for the worker processes: a softmax:recompute-like step per context."""

    def __init__(self) -> None:
        self.step_ms = {1024: 77.0, 2048: 291.0, 4096: 800.0, 8192: 4300.0}
        self.measured: dict[int, float | None] = {}

    def ready(self) -> None:
        pass  # no fork server to wait for

    def run(self, task: Task, timeout_s: float, worker: object = None) -> ProcessResult:
        if task.job == "gate":
            return ProcessResult("ok", rel_err=0.0)
        seq = task.point.shape.seq
        self.measured[seq] = task.stop_after_s
        ms = self.step_ms[seq]
        return ProcessResult("ok", time_ms=ms, time_ms_p20=ms * 0.95, time_ms_p80=ms * 1.05, samples=32)

    def run_batch(self, tasks: list[Task], timeout_s: float) -> list[tuple[ProcessResult | None, float]]:
        return [(self.run(task, timeout_s), 0.0) for task in tasks]

    def stop(self) -> None:
        return None

    def retire_warm(self) -> None:
        return None


def test_the_runner_puts_only_doubtful_points_on_probation(tmp_path: Path) -> None:
    points = tuple(
        Point("softmax", "recompute", "decode", True, "fp32", "cpu", Shape(1, 8, seq, 64, 64))
        for seq in (1024, 2048, 4096, 8192)
    )
    plan = RunPlan(
        points=points,
        targets=Targets(pairs=(("softmax", "recompute"),), baselines=(), notes=()),
        device=torch.device("cpu"),
        device_name="test cpu",
        timeout_s=120.0,
        timing=TimingPolicy.for_decode(32),
        kind=DECODE,
    )
    runner = SweepRunner(plan, RunStore.create(tmp_path, "probation"))
    supervisor = _RecordingSupervisor()
    runner.supervisor = supervisor  # type: ignore[assignment]
    runner.run(runner.pending())
    # 1k and 2k have no prediction or a safe one; 8k's pessimistic prediction passes 120 s.
    assert supervisor.measured[1024] is None and supervisor.measured[2048] is None
    assert supervisor.measured[8192] == 120.0
