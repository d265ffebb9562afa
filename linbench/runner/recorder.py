"""What goes into a sweep's rows: each process's processes.csv row the moment the process ends,
and a point's results row once its processes are enough, or one of them failed.

Which process runs next, and in which worker, is schedule.py's; this module only records what
they found. A point's correctness check stands for all its processes: its results row carries
the check (``rel_err``, ``check_seq``), and so does its first processes.csv row, from which a run
resumed mid-point takes the check up again (docs/results.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from linbench.results.record import Checked, ProcessResult, failure_row, first_failure, point_row, process_row, row_key
from linbench.results.store import RunStore
from linbench.runner.gate_point import gate_point
from linbench.runner.hooks import PointHooks
from linbench.runner.ledger import TimeLedger
from linbench.runner.plan import RunPlan
from linbench.runner.policy import SkipPolicy
from linbench.runner.session import Session
from linbench.sweep.points import Point

Listener = Callable[[str, Point, "dict[str, Any] | None"], None]
Key = tuple[str, ...]


def silent(event: str, point: Point, row: dict[str, Any] | None) -> None:
    return None


class PointRecorder:
    """The rows of a plan's points, written into ``store``; ``listener`` hears "row" when a
    point's results row is written, and ``hooks`` stamp that row (runner/hooks.py)."""

    def __init__(
        self,
        plan: RunPlan,
        store: RunStore,
        session: Session,
        ledger: TimeLedger,
        policy: SkipPolicy,
        hooks: PointHooks,
        listener: Listener = silent,
    ) -> None:
        self.plan, self.store, self.session, self.ledger = plan, store, session, ledger
        self.policy, self.hooks, self.listener = policy, hooks, listener
        # The processes of the points without a results row yet, and their checks.
        self._processes: dict[Key, list[ProcessResult]] = {}
        self._checked: dict[Key, Checked] = {}

    def resume(self, done: set[Key]) -> None:
        """Take up what an interrupted run recorded of the plan's points not in ``done``: their
        processes, and the check their first process carries."""
        planned = {point.key for point in self.plan.points}
        for row in self.store.process_rows():
            key = row_key(row)
            if key in planned and key not in done:
                self._processes.setdefault(key, []).append(ProcessResult.from_row(row))
        for key, processes in self._processes.items():
            first = next((process for process in processes if process.process == 0), None)
            if first is not None and first.check_seq is not None:  # older runs recorded none
                self._checked[key] = Checked(rel_err=first.rel_err, check_seq=first.check_seq)

    def started(self, point: Point) -> bool:
        """Whether ``point`` has a process recorded."""
        return bool(self._processes.get(point.key))

    def check(self, point: Point, gate: ProcessResult) -> bool:
        """Record ``point``'s correctness check (``gate``, run at gate_point's length); when the
        impl failed it, or the check itself failed, write the point's row and say False."""
        checked = Checked(rel_err=gate.rel_err, check_seq=gate_point(point).shape.seq)
        if gate.status == "ok":
            self._checked[point.key] = checked
            return True
        if gate.status != "mismatch" and gate.error:
            gate = replace(gate, error=f"during the correctness check: {gate.error}")
        self.finish(point, failure_row(self.plan.facts[point], gate, checked))
        return False

    def skip(self, point: Point, reason: str) -> bool:
        """Write the row of a point not measured for ``reason`` (with its check, where it ran)."""
        skipped = ProcessResult("skipped", error=reason)
        return self.finish(point, failure_row(self.plan.facts[point], skipped, self._checked.get(point.key)))

    def process(self, point: Point, result: ProcessResult, wall_s: float) -> ProcessResult:
        """One process's result as a processes.csv row (and its samples); the point's first
        carries its check."""
        processes = self._processes.setdefault(point.key, [])
        samples = result.samples_ms
        timed_s = sum(samples) / 1e3
        self.ledger.add_process(wall_s, timed_s)
        result = replace(result, process=len(processes), wall_s=wall_s, timed_s=timed_s, samples_ms=())
        checked = self._checked.get(point.key)
        if not processes and checked is not None:
            result = replace(result, rel_err=checked.rel_err, check_seq=checked.check_seq)
        self.store.append_process(process_row(self.plan.facts[point], result), samples)
        processes.append(result)
        self.session.between()
        return result

    def finish_if_done(self, point: Point) -> bool:
        """Write the point's row once its processes are enough: at once when one failed (a
        later process's failure says which one it was), else when the protocol wants no more."""
        facts, processes = self.plan.facts[point], self._processes[point.key]
        checked = self._checked.get(point.key, Checked())
        failed = first_failure(processes)
        if failed is not None:
            index = processes.index(failed)
            where = f"process {index + 1} of {len(processes)}" if index else None
            return self.finish(point, failure_row(facts, failed, checked, processes=len(processes), where=where))
        if self.plan.processes.needs_more(processes, cpu=self.plan.device.type == "cpu"):
            return False
        return self.finish(point, point_row(facts, checked, processes))

    def finish(self, point: Point, row: dict[str, Any]) -> bool:
        """Write the point's results row (record.py built it, the hooks stamp where it ran) and
        forget its processes; True, the point is done."""
        row = row | dict(self.hooks.row_columns(point))
        self.store.append(row)
        self.session.count(row)
        self.policy.record(point, row)
        self.hooks.after_row(point, row)
        self.listener("row", point, row)
        self._processes.pop(point.key, None)
        self._checked.pop(point.key, None)
        return True
