"""The sweep loop: for each point, skip it, gate it, or measure it — then write its row.

A point is measured in one or more worker processes (``RunPlan.processes``). The first
process of every point runs in plan order (so failures at one size predict the larger ones);
the points that want more are then measured in interleaved rounds, each round in a shuffled
order, so a slow stretch of the machine lands on many points once rather than on one point
every time (docs/gate.md). On CPU the first processes of one curve (one impl in one mode and
dtype) share a warm worker, which also runs the correctness checks before any point is
measured; a later round gives each curve a new worker, so a point's processes are never one
process. A process whose timed repetitions other processes oversubscribed is measured again,
once, when the idle cores watched again say it could come out clean (with fewer threads).
Each process's row goes to processes.csv the moment it exists; a point's results row is
written when its last process has run. A point whose impl disagrees with the reference is
never timed; one that fails in any way is recorded with its status and the sweep goes on.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, Literal

from linbench.results.meta import Overhead
from linbench.results.record import (
    Checked,
    ProcessResult,
    failure_row,
    first_failure,
    point_row,
    process_row,
    row_key,
)
from linbench.results.store import RunStore, RunStoreError
from linbench.runner.hooks import NO_HOOKS, PointHooks
from linbench.runner.ledger import TimeLedger
from linbench.runner.plan import RunPlan
from linbench.runner.policy import SkipPolicy
from linbench.runner.session import Session
from linbench.runner.supervisor import Supervisor
from linbench.runner.task import Task, gate_key, gate_point
from linbench.sweep.points import Point

Listener = Callable[[str, Point, "dict[str, Any] | None"], None]


def _silent(event: str, point: Point, row: dict[str, Any] | None) -> None:
    return None


def _reference_order(point: Point) -> tuple[object, ...]:
    """Checks that share an fp64 reference (variant, masking, dtype, shape, gradients) sort together."""
    return (point.variant, point.causal, point.dtype, point.mode != "fwd", point.shape, point.impl, point.mode)


class SweepRunner:
    """Runs a plan into a store; ``listener(event, point, row)`` hears "start" (before each
    process) and "row" (when a point's results row is written); ``hooks`` may refuse a
    process and stamp the row (linbench/runner/hooks.py)."""

    def __init__(
        self, plan: RunPlan, store: RunStore, listener: Listener = _silent, hooks: PointHooks = NO_HOOKS
    ) -> None:
        self.plan = plan
        self.store = store
        self.listener = listener
        self.hooks = hooks
        self.supervisor = Supervisor(store.log_path)
        self.policy = SkipPolicy(plan.timeout_s, plan.timing, fixed_tokens=plan.tokens is not None, kind=plan.kind)
        self._gates: dict[tuple[object, ...], ProcessResult] = {}
        self._processes: dict[tuple[str, ...], list[ProcessResult]] = {}
        # A point's check, from its first process on (a point resumed mid-way has none).
        self._checked: dict[tuple[str, ...], Checked] = {}
        self.ledger = TimeLedger()
        self.session = Session(plan, store, self.ledger)
        # CPU: the first processes of a curve share a warm worker (on a GPU each point's first
        # process counts its launches last, and the profiler slows the process after it).
        self._warm = plan.share_workers and plan.device.type == "cpu"

    def learn(self, rows: Iterable[Mapping[str, Any]]) -> set[tuple[str, ...]]:
        """Teach the skip policy what these results rows of the plan's points found (an oom
        or a timeout at one length stands for the longer ones); the keys of those points."""
        by_key = {point.key: point for point in self.plan.points}
        done = set()
        for row in rows:
            point = by_key.get(row_key(row))
            if point is not None:
                done.add(point.key)
                self.policy.record(point, row)
        return done

    def pending(self) -> list[Point]:
        """The plan's points without a row yet; earlier rows also teach the skip policy, and
        the processes a pending point already has (an interrupted run) are kept for it."""
        by_key = {point.key: point for point in self.plan.points}
        done = self.learn(self.store.rows())
        for row in self.store.process_rows():
            key = row_key(row)
            if key in by_key and key not in done:
                self._processes.setdefault(key, []).append(ProcessResult.from_row(row))
        return [point for point in self.plan.points if point.key not in done]

    def run(self, points: list[Point]) -> None:
        """Run ``points``: every point's first process in order, then rounds of the points
        that want more; the machine's load is sampled before, between points (every
        SAMPLE_INTERVAL_S at most) and after, into meta.json, and so is where the time went."""
        self.ledger.start()
        try:
            self.supervisor.ready()
            self.session.begin()
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
        finally:
            self.supervisor.stop()
            self.ledger.stop()
            self.session.end()
            self.ledger.end_command()
            self.store.update_meta({"overhead": self.ledger.overhead(self._recorded_overhead()).section()})

    def _recorded_overhead(self) -> Overhead | None:
        try:
            return Overhead.read(self.store.read_meta())
        except RunStoreError:
            return None

    def _first(self, point: Point) -> bool:
        """The point's first process (or, resumed, what it already has); True once its row is
        written."""
        if self._processes.get(point.key):
            return self._finish_if_done(point)
        self.listener("start", point, None)
        facts = self.plan.facts[point]
        reason = self.policy.skip_reason(point)
        if reason is not None:
            return self._finish(point, failure_row(facts, ProcessResult("skipped", error=reason)))
        gate = self._gate(point)
        checked = Checked(rel_err=gate.rel_err, check_seq=gate_point(point).shape.seq)
        if gate.status != "ok":
            if gate.status != "mismatch" and gate.error:
                gate = replace(gate, error=f"during the correctness check: {gate.error}")
            return self._finish(point, failure_row(facts, gate, checked))
        self._checked[point.key] = checked
        refused = self.hooks.before_point(point)
        if refused is not None:
            return self._finish(point, failure_row(facts, ProcessResult("skipped", error=refused), checked))
        # On probation the worker stops after its first call when that call says the point
        # cannot finish in time (runner/policy.py).
        probation = self.policy.probation(point) is not None
        process = self._measure(point, stop_after_s=self.plan.timeout_s if probation else None)
        self.policy.record(point, process.columns())
        return self._finish_if_done(point)

    def _another(self, point: Point) -> bool:
        """One more process for ``point``; True once its row is written."""
        self.listener("start", point, None)
        if not self._refused(point):
            self._measure(point)
        return self._finish_if_done(point)

    def _refused(self, point: Point) -> bool:
        """Whether the hooks refuse the point's next process (another process holds the GPU);
        the refusal is recorded as that process, skipped, so the point's row says so."""
        reason = self.hooks.before_point(point)
        if reason is None:
            return False
        self._record(point, ProcessResult("skipped", error=reason), 0.0)
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
            still_open += [point for point in refused if not self._finish_if_done(point)]
            curve = [point for point in curve if point not in refused]
            tasks = [self._task("measure", point, first=False) for point in curve]
            for point, (result, wall_s) in zip(
                curve, self.supervisor.run_batch(tasks, self.plan.timeout_s), strict=True
            ):
                if result is None:
                    self._measure(point)
                else:
                    self._record(point, *self._kept(point, result, wall_s))
                if not self._finish_if_done(point):
                    still_open.append(point)
        return still_open

    def _finish_if_done(self, point: Point) -> bool:
        """Write the point's row once its processes are enough: at once when one failed (a
        later process's failure says which one it was), else when the protocol wants no more."""
        facts, processes = self.plan.facts[point], self._processes[point.key]
        checked = self._checked.get(point.key, Checked())
        failed = first_failure(processes)
        if failed is not None:
            index = processes.index(failed)
            where = f"process {index + 1} of {len(processes)}" if index else None
            return self._finish(point, failure_row(facts, failed, checked, processes=len(processes), where=where))
        if self.plan.processes.needs_more(processes, cpu=self.plan.device.type == "cpu"):
            return False
        return self._finish(point, point_row(facts, checked, processes))

    def _measure(self, point: Point, stop_after_s: float | None = None) -> ProcessResult:
        """Measure ``point`` in one more process (in its curve's warm worker in the first round
        on CPU, else a fresh one); its row goes to processes.csv."""
        first = not self._processes.get(point.key)
        task = self._task("measure", point, stop_after_s=stop_after_s, first=first)
        started = time.perf_counter()
        result = self.supervisor.run(task, self.plan.timeout_s, worker=self._worker(point))
        return self._record(point, *self._kept(point, result, time.perf_counter() - started, stop_after_s))

    def _kept(
        self, point: Point, result: ProcessResult, wall_s: float, stop_after_s: float | None = None
    ) -> tuple[ProcessResult, float]:
        """``result``, or when other processes oversubscribed it and the idle cores, watched
        again, say another process could come out clean (the threads follow them), the result
        of that one (measured once more at most; its own mark stays)."""
        if result.status != "ok" or not result.oversubscribed or not self.session.recheck():
            return result, wall_s
        self.ledger.add_retried(wall_s)
        first = not self._processes.get(point.key)
        task = self._task("measure", point, stop_after_s=stop_after_s, first=first)
        started = time.perf_counter()
        result = self.supervisor.run(task, self.plan.timeout_s, worker=self._worker(point))
        return result, time.perf_counter() - started

    def _worker(self, point: Point) -> tuple[object, ...] | None:
        """The warm worker that measures ``point`` (its curve's), or None for a fresh fork."""
        return point.series if self._warm else None

    def _record(self, point: Point, result: ProcessResult, wall_s: float) -> ProcessResult:
        """One process's result as a processes.csv row (and its samples)."""
        processes = self._processes.setdefault(point.key, [])
        samples = result.samples_ms
        timed_s = sum(samples) / 1e3
        self.ledger.add_process(wall_s, timed_s)
        result = replace(result, process=len(processes), wall_s=wall_s, timed_s=timed_s, samples_ms=())
        self.store.append_process(process_row(self.plan.facts[point], result), samples)
        processes.append(result)
        self.session.between()
        return result

    def _check_ahead(self, points: list[Point]) -> None:
        """Run the correctness gates of ``points`` in one worker before any is measured (on
        CPU the first point's warm worker: its set-up then serves the checks too): a gate
        measures nothing, so it needs no fresh process, and the checks of one variant at one
        shape are adjacent, so its fp64 reference is computed once for all its impls. A gate
        a dead worker never reached runs alone when its point comes."""
        wanted: dict[tuple[object, ...], Point] = {}
        for point in points:
            key = gate_key(point)
            if key not in self._gates and not self._processes.get(point.key):
                wanted.setdefault(key, gate_point(point))
        first = next((point for point in points if not self._processes.get(point.key)), None)
        if len(wanted) < 2 and not (wanted and self._warm):
            return
        order = sorted(wanted.items(), key=lambda item: _reference_order(item[1]))
        tasks = [self._task("gate", p) for _, p in order]
        started = time.perf_counter()
        outcomes: list[tuple[ProcessResult | None, float]]
        if self._warm and first is not None:
            worker = self._worker(first)
            outcomes = [(self.supervisor.run(task, self.plan.timeout_s, worker=worker), 0.0) for task in tasks]
        else:
            outcomes = self.supervisor.run_batch(tasks, self.plan.timeout_s)
        self.ledger.add_gate(time.perf_counter() - started, count=sum(r is not None for r, _ in outcomes))
        for (key, _), (result, _) in zip(order, outcomes, strict=True):
            if result is not None:  # a hang or a crash is its gate's own: a retry would end the same
                self._gates[key] = result

    def _gate(self, point: Point) -> ProcessResult:
        key = gate_key(point)
        if key not in self._gates:
            started = time.perf_counter()
            task = self._task("gate", gate_point(point))
            self._gates[key] = self.supervisor.run(task, self.plan.timeout_s, worker=self._worker(point))
            self.ledger.add_gate(time.perf_counter() - started)
        return self._gates[key]

    def _task(
        self,
        job: Literal["gate", "measure"],
        point: Point,
        stop_after_s: float | None = None,
        first: bool = True,
    ) -> Task:
        """A task for ``point``; ``first``: the point's first process, the one that counts its
        launches (CUDA) and its allocations (CPU), each the same in every process."""
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
            count_allocations=first,
        )

    def _finish(self, point: Point, row: dict[str, Any]) -> bool:
        """Write the point's results row (record.py built it, the hooks stamp where it ran) and
        forget its processes."""
        row = row | dict(self.hooks.row_columns(point))
        self.store.append(row)
        self.session.count(row)
        self.policy.record(point, row)
        self.hooks.after_row(point, row)
        self.listener("row", point, row)
        self._processes.pop(point.key, None)
        self._checked.pop(point.key, None)
        return True
