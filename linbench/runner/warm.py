"""``linbench warm``: every point's Triton kernels compiled and tuned into the store, ahead of a run.

A Triton impl's point pays, in its first process, for compiling its kernels and benchmarking
their configs at its shape (runner/triton_tuning.py): seconds a point on a fresh GPU, in no
timed call but in the run's wall time. Warming pays it once, before timing: each point that the
store of choices lacks is warmed up as a measuring process would warm it (one call at its own
shape, its kernels compiled into Triton's on-disk cache and its choices into linbench's store),
one process per curve, one after the other, so no two processes compile one kernel at once. A
run after it reads every choice back (``triton_config_source`` says ``cache``) and its estimate
no longer counts the tuning.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from linbench.measure.autotune import full_scope
from linbench.measure.autotune_store import ConfigStore
from linbench.results.processes import ProcessResult
from linbench.runner.kind_protocol import Task
from linbench.runner.plan import RunPlan
from linbench.runner.supervisor import Supervisor
from linbench.runner.triton_tuning import scope
from linbench.sweep.points import Point

# Where the warming workers' output goes (beside the store: there is no run folder).
LOG_NAME = "warm-worker.log"


@dataclass(frozen=True)
class Warmed:
    """A point and how its warming ended: the worker's result, or None where the store had its
    choices already."""

    point: Point
    result: ProcessResult | None

    @property
    def failed(self) -> bool:
        return self.result is not None and self.result.status != "ok"

    @property
    def tuned(self) -> bool:
        return self.result is not None and bool(self.result.triton_configs)


@dataclass(frozen=True)
class WarmReport:
    """What ``warm`` did, and the seconds it took."""

    points: tuple[Warmed, ...]
    wall_s: float
    store: ConfigStore

    def summary(self) -> str:
        done = [w for w in self.points if w.result is not None and not w.failed]
        compile_s = sum(w.result.compile_s or 0.0 for w in done if w.result is not None)
        tune_s = sum(w.result.autotune_s or 0.0 for w in done if w.result is not None)
        tuned = sum(w.tuned for w in done)
        already = sum(w.result is None for w in self.points)
        failed = sum(w.failed for w in self.points)
        line = (
            f"warmed {len(done)} point(s) in {self.wall_s:.1f} s ({compile_s:.1f} s compiling, {tune_s:.1f} s "
            f"tuning): {tuned} ran autotuned Triton kernels, {len(done) - tuned} none"
        )
        if already:
            line += f"; {already} already warm"
        if failed:
            line += f"; {failed} failed"
        return f"{line}; choices kept in {self.store.folder}"


def warm(plan: RunPlan, on_point: Callable[[Warmed], None] = lambda warmed: None) -> WarmReport:
    """Warm every point of ``plan`` whose choices the store lacks, a curve's points in one worker
    (its library imported once), the curves one after the other; ``on_point`` hears each."""
    started = time.monotonic()
    store = ConfigStore()
    store.folder.mkdir(parents=True, exist_ok=True)
    supervisor = Supervisor(store.folder / LOG_NAME)
    curves: dict[tuple[object, ...], list[Point]] = {}
    warmed: list[Warmed] = []
    for point in plan.points:
        if store.has(full_scope(scope(point, plan.point_params(point), plan.device_name))):
            warmed.append(Warmed(point, None))
            on_point(warmed[-1])
        else:
            curves.setdefault(point.series, []).append(point)
    try:
        for points in curves.values():
            tasks = [_task(plan, point) for point in points]
            outcomes = supervisor.run_batch(tasks, lambda task: plan.time_limit_s(task.point))
            for point, (result, _) in zip(points, outcomes, strict=True):
                gone = ProcessResult("crashed", error="its worker died before it (a point before it crashed)")
                warmed.append(Warmed(point, result or gone))
                on_point(warmed[-1])
    finally:
        supervisor.stop()
    return WarmReport(tuple(warmed), time.monotonic() - started, store)


def _task(plan: RunPlan, point: Point) -> Task:
    return Task(
        job="warm",
        point=point,
        timing=plan.timing,
        kind=plan.kind,
        plugins=plan.plugins,
        memory_limit_bytes=plan.memory_limit_bytes,
        params=plan.point_params(point),
        count_launches=False,
        count_allocations=False,
    )
