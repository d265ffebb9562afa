"""The sweep loop: for each point, skip it, gate it, or measure it — then write its row.

A point is measured in one or more fresh worker processes (``RunPlan.processes``). The first
process of every point runs in plan order (so failures at one size predict the larger ones);
the points that want more are then measured in interleaved rounds, each round in a shuffled
order, so a slow stretch of the machine lands on many points once rather than on one point
every time (docs/gate.md). Each process's row goes to processes.csv the
moment it exists; a point's results row is written when its last process has run. A point
whose impl disagrees with the reference is never timed; one that fails in any way is
recorded with its status and the sweep goes on.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

import torch

from linbench.machine.load import LoadMonitor
from linbench.results.meta import LoadSection, Overhead
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
from linbench.runner.ledger import TimeLedger
from linbench.runner.plan import RunPlan
from linbench.runner.policy import SkipPolicy
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
    process) and "row" (when a point's results row is written)."""

    def __init__(self, plan: RunPlan, store: RunStore, listener: Listener = _silent) -> None:
        self.plan = plan
        self.store = store
        self.listener = listener
        self.supervisor = Supervisor(store.log_path)
        self.policy = SkipPolicy(plan.timeout_s, plan.timing, fixed_tokens=plan.tokens is not None, kind=plan.kind)
        self._gates: dict[tuple[object, ...], ProcessResult] = {}
        self._processes: dict[tuple[str, ...], list[ProcessResult]] = {}
        # A point's check, from its first process on (a point resumed mid-way has none).
        self._checked: dict[tuple[str, ...], Checked] = {}
        self.ledger = TimeLedger()
        gpu = (plan.device.index or 0) if plan.device.type == "cuda" else None
        threads = plan.threads or torch.get_num_threads()
        self.load = LoadMonitor(gpu_index=gpu, threads=threads, previous=self._recorded_load())

    def _recorded_load(self) -> dict[str, Any] | None:
        """The load samples of an earlier session of this run (--resume) go on in meta.json."""
        try:
            load = LoadSection.read(self.store.read_meta())
        except RunStoreError:
            return None
        return None if load is None else load.section()

    def pending(self) -> list[Point]:
        """The plan's points without a row yet; earlier rows also teach the skip policy, and
        the processes a pending point already has (an interrupted run) are kept for it."""
        by_key = {point.key: point for point in self.plan.points}
        done = set()
        for row in self.store.rows():
            point = by_key.get(row_key(row))
            if point is not None:
                done.add(point.key)
                self.policy.record(point, row)
        for row in self.store.process_rows():
            key = row_key(row)
            if key in by_key and key not in done:
                self._processes.setdefault(key, []).append(ProcessResult.from_row(row))
        return [point for point in self.plan.points if point.key not in done]

    def run(self, points: list[Point]) -> None:
        """Run ``points``: every point's first process in order, then rounds of the points
        that want more; the machine's load is sampled before, between points (every
        SAMPLE_INTERVAL_S at most) and after, into meta.json, and so is where the time went."""
        self._sample_load("start")
        self.ledger.start()
        try:
            self._check_ahead(points)
            open_points = [point for point in points if not self._first(point)]
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
            self._sample_load("end")
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
        # On probation the worker stops after its first call when that call says the point
        # cannot finish in time (runner/policy.py).
        probation = self.policy.probation(point) is not None
        process = self._measure(point, stop_after_s=self.plan.timeout_s if probation else None)
        self.policy.record(point, process.columns())
        return self._finish_if_done(point)

    def _another(self, point: Point) -> bool:
        """One more process for ``point``; True once its row is written."""
        self.listener("start", point, None)
        self._measure(point)
        return self._finish_if_done(point)

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
            tasks = [self._task("measure", point, count_launches=False) for point in curve]
            for point, (result, wall_s) in zip(
                curve, self.supervisor.run_batch(tasks, self.plan.timeout_s), strict=True
            ):
                if result is None:
                    self._measure(point)
                else:
                    self._record(point, result, wall_s)
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
        if self.plan.processes.needs_more(processes):
            return False
        return self._finish(point, point_row(facts, checked, processes))

    def _measure(self, point: Point, stop_after_s: float | None = None) -> ProcessResult:
        """Measure ``point`` in one fresh process; its row goes to processes.csv."""
        processes = self._processes.setdefault(point.key, [])
        first = not processes
        task = self._task("measure", point, stop_after_s=stop_after_s, count_launches=first)
        started = time.perf_counter()
        result = self.supervisor.run(task, self.plan.timeout_s)
        return self._record(point, result, time.perf_counter() - started)

    def _record(self, point: Point, result: ProcessResult, wall_s: float) -> ProcessResult:
        """One process's result as a processes.csv row (and its samples)."""
        processes = self._processes.setdefault(point.key, [])
        samples = result.samples_ms
        timed_s = sum(samples) / 1e3
        self.ledger.add_process(wall_s, timed_s)
        result = replace(result, process=len(processes), wall_s=wall_s, timed_s=timed_s, samples_ms=())
        self.store.append_process(process_row(self.plan.facts[point], result), samples)
        processes.append(result)
        if self.load.due():
            self._sample_load("during")
        return result

    def _sample_load(self, when: str) -> None:
        self.load.sample(when)
        self.store.update_meta({"load": self.load.section()})

    def _check_ahead(self, points: list[Point]) -> None:
        """Run the correctness gates of ``points`` in one worker before any is measured: a
        gate measures nothing, so it needs no fresh process, and the checks of one variant at
        one shape are adjacent, so its fp64 reference is computed once for all its impls. A
        gate a dead worker never reached runs alone when its point comes."""
        wanted: dict[tuple[object, ...], Point] = {}
        for point in points:
            key = gate_key(point)
            if key not in self._gates and not self._processes.get(point.key):
                wanted.setdefault(key, gate_point(point))
        if len(wanted) < 2:
            return
        order = sorted(wanted.items(), key=lambda item: _reference_order(item[1]))
        started = time.perf_counter()
        outcomes = self.supervisor.run_batch([self._task("gate", p) for _, p in order], self.plan.timeout_s)
        self.ledger.add_gate(time.perf_counter() - started, count=sum(r is not None for r, _ in outcomes))
        for (key, _), (result, _) in zip(order, outcomes, strict=True):
            if result is not None:  # a hang or a crash is its gate's own: a retry would end the same
                self._gates[key] = result

    def _gate(self, point: Point) -> ProcessResult:
        key = gate_key(point)
        if key not in self._gates:
            started = time.perf_counter()
            self._gates[key] = self.supervisor.run(self._task("gate", gate_point(point)), self.plan.timeout_s)
            self.ledger.add_gate(time.perf_counter() - started)
        return self._gates[key]

    def _task(
        self,
        job: Literal["gate", "measure"],
        point: Point,
        stop_after_s: float | None = None,
        count_launches: bool = False,
    ) -> Task:
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
            threads=self.plan.threads,
            count_launches=count_launches,
        )

    def _finish(self, point: Point, row: dict[str, Any]) -> bool:
        """Write the point's results row (record.py built it) and forget its processes."""
        self.store.append(row)
        self.policy.record(point, row)
        self.listener("row", point, row)
        self._processes.pop(point.key, None)
        self._checked.pop(point.key, None)
        return True
