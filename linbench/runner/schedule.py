"""Which process a sweep runs next, and in which worker.

A point is measured in one or more worker processes (``RunPlan.processes``). The first process
of every point runs in plan order (so failures at one size predict the larger ones); the points
that want more are then measured in interleaved rounds, each round in a shuffled order, so a
slow stretch of the machine lands on many points once rather than on one point every time
(docs/gate.md). On CPU the first processes of one curve (one impl in one mode and dtype) share a
warm worker; before any point is measured, the correctness checks that share an fp64 reference
run in the worker of the first curve among them, which that check leaves warm; a later round
gives each curve a new worker, so a point's processes are never one process. A process whose
timed repetitions other processes oversubscribed is measured again, once, when the idle cores
watched again say it could come out clean (with fewer threads). What each process found goes
to the recorder (recorder.py), which writes the rows.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

from linbench.machine.cpu_use import usable_cpus
from linbench.results.processes import ProcessResult
from linbench.runner.gate_point import gate_key, gate_point
from linbench.runner.hooks import PointHooks
from linbench.runner.kind_protocol import Task
from linbench.runner.ledger import TimeLedger
from linbench.runner.plan import RunPlan
from linbench.runner.policy import SkipPolicy
from linbench.runner.recorder import Listener, PointRecorder
from linbench.runner.session import Session
from linbench.runner.supervisor import Supervisor
from linbench.sweep.points import Point


def _reference_order(point: Point) -> tuple[object, ...]:
    """Checks that share an fp64 reference (variant, masking, dtype, shape, gradients) sort together."""
    return (*_reference_group(point), point.impl, point.mode)


def _reference_group(point: Point) -> tuple[object, ...]:
    """What the checks that share one fp64 reference have in common."""
    return (point.variant, point.causal, point.dtype, point.mode != "fwd", point.shape)


class Schedule:
    """Runs the processes of a plan's points through ``supervisor`` and hands each result to
    ``recorder``; ``listener`` hears "start" before each process."""

    def __init__(
        self,
        plan: RunPlan,
        supervisor: Supervisor,
        session: Session,
        ledger: TimeLedger,
        policy: SkipPolicy,
        hooks: PointHooks,
        recorder: PointRecorder,
        listener: Listener,
    ) -> None:
        self.plan, self.supervisor, self.session, self.policy = plan, supervisor, session, policy
        self.hooks, self.recorder, self.listener = hooks, recorder, listener
        self.ledger = ledger
        self._gates: dict[tuple[object, ...], ProcessResult] = {}
        # CPU: the first processes of a curve share a warm worker (on a GPU each point's first
        # process counts its launches last, and the profiler slows the process after it).
        self._warm = plan.share_workers and plan.device.type == "cpu"

    def run(self, points: list[Point]) -> None:
        """Every point's first process in order, then rounds of the points that want more."""
        self._check_ahead(points)
        open_points = [point for point in points if not self._first(point)]
        self.supervisor.retire_warm()  # a later round's processes are new ones
        self._warm = False
        round_index = 0
        while open_points:
            round_index += 1
            shuffle = random.Random(self.plan.processes.seed + round_index).shuffle
            if self.plan.share_workers:
                open_points = self._shared_round(open_points, shuffle)
            else:
                order = list(open_points)
                shuffle(order)
                open_points = [point for point in order if not self._another(point)]
            open_points.sort(key=points.index)

    def _first(self, point: Point) -> bool:
        """The point's first process (or, resumed, what it already has); True once its row is
        written."""
        if self.recorder.started(point):
            return self.recorder.finish_if_done(point)
        self.listener("start", point, None)
        reason = self.policy.skip_reason(point)
        if reason is not None:
            return self.recorder.skip(point, reason)
        if self.plan.check and not self.recorder.check(point, self._gate(point)):
            return True
        refused = self.hooks.before_point(point)
        if refused is not None:
            return self.recorder.skip(point, refused)
        # On probation the worker stops after its first call when that call says the point
        # cannot finish in time (runner/policy.py).
        probation = self.policy.probation(point) is not None
        process = self._measure(point, stop_after_s=self.plan.timeout_s if probation else None)
        self.policy.record(point, process.columns())
        return self.recorder.finish_if_done(point)

    def _another(self, point: Point) -> bool:
        """One more process for ``point``; True once its row is written."""
        self.listener("start", point, None)
        if not self._refused(point):
            self._measure(point)
        return self.recorder.finish_if_done(point)

    def _refused(self, point: Point) -> bool:
        """Whether the hooks refuse the point's next process (another process holds the GPU);
        the refusal is recorded as that process, skipped, so the point's row says so."""
        reason = self.hooks.before_point(point)
        if reason is None:
            return False
        self.recorder.process(point, ProcessResult("skipped", error=reason), 0.0)
        return True

    def _shared_round(self, points: list[Point], shuffle: Callable[[list[Any]], None]) -> list[Point]:
        """One round in which each curve's points share one worker (GPU: a process per curve
        instead of per point; allocator peaks are reset per call). Curves run in shuffled
        order; a point a dead worker never reached runs alone. The points still open after."""
        curves: dict[tuple[object, ...], list[Point]] = {}
        for point in points:
            curves.setdefault(point.series, []).append(point)
        order = list(curves.values())
        shuffle(order)
        still_open = []
        for curve in order:
            for point in curve:
                self.listener("start", point, None)
            refused = [point for point in curve if self._refused(point)]
            still_open += [point for point in refused if not self.recorder.finish_if_done(point)]
            curve = [point for point in curve if point not in refused]
            tasks = [self._task("measure", point, first=False) for point in curve]
            for point, (result, wall_s) in zip(curve, self.supervisor.run_batch(tasks, self._limit), strict=True):
                if result is None:
                    self._measure(point)
                else:
                    self.recorder.process(point, *self._kept(point, result, wall_s))
                if not self.recorder.finish_if_done(point):
                    still_open.append(point)
        return still_open

    def _measure(self, point: Point, stop_after_s: float | None = None) -> ProcessResult:
        """Measure ``point`` in one more process (in its curve's warm worker in the first round
        on CPU, else a fresh one) and record it."""
        result, wall_s = self._run(point, stop_after_s)
        return self.recorder.process(point, *self._kept(point, result, wall_s, stop_after_s))

    def _kept(
        self, point: Point, result: ProcessResult, wall_s: float, stop_after_s: float | None = None
    ) -> tuple[ProcessResult, float]:
        """``result``, or when other processes oversubscribed it and the idle cores, watched
        again, say another process could come out clean (the threads follow them), the result
        of that one (measured once more at most; its own mark stays)."""
        if result.status != "ok" or not result.oversubscribed or not self.session.recheck():
            return result, wall_s
        self.ledger.add_retried(wall_s)
        # What a call allocates is the same in every process at the same threads (measure/
        # allocations.py): the dropped process's count stands, and its profiled call is not run again.
        known = result.alloc_peak_bytes if result.threads == self.session.threads else None
        again, again_s = self._run(point, stop_after_s, count_allocations=known is None)
        if known is not None and again.status == "ok":
            again = replace(again, alloc_peak_bytes=known)
        return again, again_s

    def _run(
        self, point: Point, stop_after_s: float | None, count_allocations: bool = True
    ) -> tuple[ProcessResult, float]:
        """One measuring process of ``point``, and its wall time from hand-over to result;
        ``count_allocations``: False where the point's count is already known."""
        first = not self.recorder.started(point)
        task = self._task("measure", point, stop_after_s=stop_after_s, first=first, count_allocations=count_allocations)
        started = time.perf_counter()
        result = self.supervisor.run(task, self._limit(task), worker=self._worker(point))
        return result, time.perf_counter() - started

    def _worker(self, point: Point) -> tuple[object, ...] | None:
        """The warm worker that measures ``point`` (its curve's), or None for a fresh fork."""
        return point.series if self._warm else None

    def _check_ahead(self, points: list[Point]) -> None:
        """Run the correctness gates of ``points`` before any is measured: a gate measures
        nothing, so it needs no fresh process, and the checks of one variant at one shape are
        adjacent, so its fp64 reference is computed once for all its impls. On CPU they run
        in warm workers, those sharing a reference in the worker of the first point among
        them: its set-up serves the checks, and its curve, whose impl the check ran there,
        needs no warm-up at its first point (worker.py). Elsewhere they run in one fresh
        process. A gate a dead worker never reached runs alone when its point comes."""
        wanted: dict[tuple[object, ...], Point] = {}
        homes: dict[tuple[object, ...], Point] = {}  # a shared reference's checks: the worker of this point
        for point in points:
            key = gate_key(point)
            if not self.recorder.started(point):
                homes.setdefault(_reference_group(gate_point(point)), point)
                if key not in self._gates:
                    wanted.setdefault(key, gate_point(point))
        if (len(wanted) < 2 and not (wanted and self._warm)) or not self.plan.check:
            return
        order = sorted(wanted.items(), key=lambda item: _reference_order(item[1]))
        tasks = [self._task("gate", p) for _, p in order]
        started = time.perf_counter()
        outcomes: list[tuple[ProcessResult | None, float]]
        if self._warm:
            workers = [self._worker(homes[_reference_group(gated)]) for _, gated in order]
            outcomes = [(result, 0.0) for result in self._gates_side_by_side(tasks, workers)]
        else:
            outcomes = self.supervisor.run_batch(tasks, self._limit)
        self.ledger.add_gate(time.perf_counter() - started, count=sum(r is not None for r, _ in outcomes))
        for (key, _), (result, _) in zip(order, outcomes, strict=True):
            if result is not None:  # a hang or a crash is its gate's own: a retry would end the same
                self._gates[key] = result

    def _gates_side_by_side(
        self, tasks: list[Task], workers: list[tuple[object, ...] | None]
    ) -> list[ProcessResult | None]:
        """The checks, each in its warm worker, the workers' queues side by side as far as the
        threads chosen take cores (their threads shared out: one each on two cores), since a
        check measures nothing; one after the other where there is one thread or one worker."""
        queues: dict[tuple[object, ...] | None, list[int]] = {}
        for index, worker in enumerate(workers):
            queues.setdefault(worker, []).append(index)
        threads = self.session.threads or 1
        width = min(len(queues), threads, len(usable_cpus()))
        if width < 2:
            pairs = zip(tasks, workers, strict=True)
            return [self.supervisor.run(task, self._limit(task), worker=worker) for task, worker in pairs]
        lanes: list[list[int]] = [[] for _ in range(width)]
        for number, queue in enumerate(queues.values()):
            lanes[number % width] += queue
        handed = [[(workers[i], replace(tasks[i], threads=threads // width)) for i in lane] for lane in lanes]
        results: list[ProcessResult | None] = [None] * len(tasks)
        by_lane = self.supervisor.run_side_by_side(handed, self._limit)
        for lane, lane_results in zip(lanes, by_lane, strict=True):
            for index, result in zip(lane, lane_results, strict=True):
                results[index] = result
        return results

    def _limit(self, task: Task) -> float:
        """The seconds ``task`` may take (the compile allowance beside --timeout-s for a
        torch.compile impl's)."""
        return self.plan.time_limit_s(task.point)

    def _gate(self, point: Point) -> ProcessResult:
        key = gate_key(point)
        if key not in self._gates:
            started = time.perf_counter()
            task = self._task("gate", gate_point(point))
            self._gates[key] = self.supervisor.run(task, self._limit(task), worker=self._worker(point))
            self.ledger.add_gate(time.perf_counter() - started)
        return self._gates[key]

    def _task(
        self,
        job: Literal["gate", "measure"],
        point: Point,
        stop_after_s: float | None = None,
        first: bool = True,
        count_allocations: bool = True,
    ) -> Task:
        """A task for ``point``; ``first``: the point's first process, the one that counts its
        launches (CUDA) and its allocations (CPU, unless ``count_allocations`` is False: known
        already), each the same in every process."""
        return Task(
            job=job,
            point=point,
            timing=self.plan.timing,
            kind=self.plan.kind,
            plugins=self.plan.plugins,
            memory_limit_bytes=self.plan.memory_limit_bytes,
            cuda_graph=self.plan.cuda_graph,
            stop_after_s=stop_after_s,
            params=self.plan.point_params(point),
            threads=self.session.threads,
            count_launches=first and self.plan.device.type == "cuda",
            count_allocations=first and count_allocations,
        )
