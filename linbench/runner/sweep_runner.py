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
from typing import Any

import torch

from linbench.machine.load import LoadMonitor
from linbench.results.processes import summarise
from linbench.results.rates import rate_columns
from linbench.results.schema import KEY_COLUMNS, MEASURED_COLUMNS
from linbench.results.store import RunStore, RunStoreError
from linbench.runner.ledger import TimeLedger
from linbench.runner.plan import RunPlan
from linbench.runner.policy import SkipPolicy
from linbench.runner.supervisor import Supervisor
from linbench.runner.task import Task, gate_key, gate_point
from linbench.sweep.points import Point
from linbench.sweep.spec import DECODE_MODE
from linbench.variants.registry import get_variant

Listener = Callable[[str, Point, "dict[str, Any] | None"], None]


def _silent(event: str, point: Point, row: dict[str, Any] | None) -> None:
    return None


# The columns that hold a time, empty unless the point passed its check and ran to the end.
TIME_COLUMNS = (
    *("time_ms", "time_ms_p20", "time_ms_p80", "samples", "tflops", "time_per_token_ms", "device_ms"),
    *("tokens_per_s", "time_ms_proc_lo", "time_ms_proc_hi", "between_spread", "timing"),
)
# Gate columns a point's first process carries, for its results row.
GATE_COLUMNS = ("rel_err", "check_seq")


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
        self.policy = SkipPolicy(plan.timeout_s, plan.timing, fixed_tokens=plan.tokens is not None)
        self._gates: dict[tuple[object, ...], dict[str, Any]] = {}
        self._processes: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        self.ledger = TimeLedger()
        gpu = (plan.device.index or 0) if plan.device.type == "cuda" else None
        threads = plan.threads or torch.get_num_threads()
        self.load = LoadMonitor(gpu_index=gpu, threads=threads, previous=self._recorded_load())

    def _recorded_load(self) -> dict[str, Any] | None:
        """The load samples of an earlier session of this run (--resume) go on in meta.json."""
        try:
            return self.store.read_meta().get("load")
        except RunStoreError:
            return None

    def pending(self) -> list[Point]:
        """The plan's points without a row yet; earlier rows also teach the skip policy, and
        the processes a pending point already has (an interrupted run) are kept for it."""
        by_key = {point.key: point for point in self.plan.points}
        done = set()
        for row in self.store.rows():
            point = by_key.get(tuple(row[c] for c in KEY_COLUMNS))
            if point is not None:
                done.add(point.key)
                self.policy.record(point, row)
        for row in self.store.process_rows():
            key = tuple(row[c] for c in KEY_COLUMNS)
            if key in by_key and key not in done:
                self._processes.setdefault(key, []).append(dict(row))
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
            self.store.update_meta({"overhead": self.ledger.section(self._recorded_overhead())})

    def _recorded_overhead(self) -> dict[str, Any] | None:
        try:
            return self.store.read_meta().get("overhead")
        except RunStoreError:
            return None

    def _first(self, point: Point) -> bool:
        """The point's first process (or, resumed, what it already has); True once its row is
        written."""
        if self._processes.get(point.key):
            return self._finish_if_done(point)
        self.listener("start", point, None)
        reason = self.policy.skip_reason(point)
        if reason is not None:
            return self._finish(point, {"status": "skipped", "error": reason})
        gate = self._gate(point)
        if gate.get("status") != "ok":
            result = {k: v for k, v in gate.items() if k in MEASURED_COLUMNS}
            if result.get("status") != "mismatch" and result.get("error"):
                result["error"] = f"during the correctness check: {result['error']}"
            return self._finish(point, result | self._gate_columns(point, gate))
        # On probation the worker stops after its first call when that call says the point
        # cannot finish in time (runner/policy.py).
        probation = self.policy.probation(point) is not None
        process = self._measure(point, stop_after_s=self.plan.timeout_s if probation else None)
        process |= self._gate_columns(point, gate)
        self.policy.record(point, process)
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
        processes = self._processes[point.key]
        failed = next((p for p in processes if p.get("status") != "ok"), None)
        if failed is not None:
            return self._finish(point, self._failure(failed, processes))
        if self.plan.processes.needs_more(processes):
            return False
        gate = {c: processes[0].get(c) for c in GATE_COLUMNS}
        return self._finish(point, summarise(processes) | gate)

    @staticmethod
    def _failure(failed: dict[str, Any], processes: list[dict[str, Any]]) -> dict[str, Any]:
        """A point one of whose processes failed takes that failure; a later process's
        failure says which one it was (a flaky impl is a broken one)."""
        result = {c: failed.get(c) for c in MEASURED_COLUMNS if failed.get(c) not in (None, "")}
        result |= {c: processes[0].get(c) for c in GATE_COLUMNS}
        index = processes.index(failed)
        if index:
            result["error"] = f"process {index + 1} of {len(processes)}: {failed.get('error') or failed['status']}"
        result["processes"] = len(processes)
        return result

    def _measure(self, point: Point, stop_after_s: float | None = None) -> dict[str, Any]:
        """Measure ``point`` in one fresh process; its row goes to processes.csv."""
        processes = self._processes.setdefault(point.key, [])
        first = not processes
        task = self._task("measure", point, stop_after_s=stop_after_s, count_launches=first)
        started = time.perf_counter()
        result = self.supervisor.run(task, self.plan.timeout_s)
        return self._record(point, result, time.perf_counter() - started)

    def _record(self, point: Point, result: dict[str, Any], wall_s: float) -> dict[str, Any]:
        """One process's result as a processes.csv row (and its samples)."""
        processes = self._processes.setdefault(point.key, [])
        samples = list(result.pop("samples_ms", []))
        pid = result.pop("pid", None)
        timed_s = sum(samples) / 1e3
        self.ledger.add_process(wall_s, timed_s)
        row = point.as_row() | {"process": len(processes), "pid": pid, "wall_s": wall_s, "timed_s": timed_s}
        row |= result
        self.store.append_process(row, samples)
        processes.append(row)
        if self.load.due():
            self._sample_load("during")
        return row

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

    def _gate(self, point: Point) -> dict[str, Any]:
        key = gate_key(point)
        if key not in self._gates:
            started = time.perf_counter()
            self._gates[key] = self.supervisor.run(self._task("gate", gate_point(point)), self.plan.timeout_s)
            self.ledger.add_gate(time.perf_counter() - started)
        return self._gates[key]

    @staticmethod
    def _gate_columns(point: Point, gate: dict[str, Any]) -> dict[str, Any]:
        return {"check_seq": gate_point(point).shape.seq, "rel_err": gate.get("rel_err")}

    def _task(self, kind: str, point: Point, stop_after_s: float | None = None, count_launches: bool = False) -> Task:
        return Task(
            kind=kind,  # type: ignore[arg-type]
            point=point,
            timing=self.plan.timing,
            plugins=self.plan.plugins,
            memory_limit_bytes=self.plan.memory_limit_bytes,
            cuda_graph=self.plan.cuda_graph,
            stop_after_s=stop_after_s,
            params=self.plan.impl_params(point.variant, point.impl),
            threads=self.plan.threads,
            count_launches=count_launches,
        )

    def _finish(self, point: Point, result: dict[str, Any]) -> bool:
        row = self._row(point, result)
        self.store.append(row)
        self.policy.record(point, row)
        self.listener("row", point, row)
        self._processes.pop(point.key, None)
        return True

    def _row(self, point: Point, result: dict[str, Any]) -> dict[str, Any]:
        decode = point.mode == DECODE_MODE
        row = point.as_row() | {"device_name": self.plan.device_name, "params": self.plan.params_column(point)}
        row |= {k: v for k, v in result.items() if k not in ("pid", "process", "wall_s", "timed_s")}
        # A variant's FLOP formula counts a whole sequence; a decode step is another thing.
        flops = None if decode else get_variant(point.variant).flops(*point.shape.sizes(), point.causal, point.mode)
        row["flops"] = flops
        if decode:
            row["context"] = point.shape.seq
        if row.get("status") == "ok" and row.get("time_ms"):
            row |= rate_columns(float(row["time_ms"]), flops, point.shape.batch, point.shape.seq, decode)
        else:
            # A time is reported only for a point that passed its check and ran to the end.
            for column in TIME_COLUMNS:
                row[column] = None
        return row
