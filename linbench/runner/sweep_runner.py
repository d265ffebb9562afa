"""The sweep loop: for each point, skip it, gate it, or measure it — then write its row.

Two pieces do the work: the schedule (schedule.py) decides which process runs next, in which
worker (first processes in plan order, then shuffled rounds; warm or fresh workers; the checks
run ahead), and the recorder (recorder.py) decides what goes into the rows (each process's row
in processes.csv the moment it exists, a point's results row when its last process has run). A
point whose impl disagrees with the reference is never timed; one that fails in any way is
recorded with its status and the sweep goes on. This module joins them to the supervisor, the
session's load readings and the time ledger, and takes up an interrupted run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from linbench.results.meta import Overhead
from linbench.results.record import row_key
from linbench.results.store import RunStore, RunStoreError
from linbench.runner.hooks import NO_HOOKS, PointHooks
from linbench.runner.ledger import TimeLedger
from linbench.runner.plan import RunPlan
from linbench.runner.policy import SkipPolicy
from linbench.runner.recorder import Listener, PointRecorder, silent
from linbench.runner.schedule import Schedule
from linbench.runner.session import Session
from linbench.runner.supervisor import Supervisor
from linbench.sweep.points import Point

__all__ = ["SweepRunner"]


class SweepRunner:
    """Runs a plan into a store; ``listener(event, point, row)`` hears "start" (before each
    process) and "row" (when a point's results row is written); ``hooks`` may refuse a
    process and stamp the row (linbench/runner/hooks.py)."""

    def __init__(
        self, plan: RunPlan, store: RunStore, listener: Listener = silent, hooks: PointHooks = NO_HOOKS
    ) -> None:
        self.plan = plan
        self.store = store
        self.hooks = hooks
        self.supervisor = Supervisor(store.log_path)
        self.policy = SkipPolicy(plan.timeout_s, plan.timing, fixed_tokens=plan.tokens is not None, kind=plan.kind)
        self.ledger = TimeLedger()
        self.session = Session(plan, store, self.ledger)
        self.recorder = PointRecorder(plan, store, self.session, self.ledger, self.policy, hooks, listener)

    @property
    def listener(self) -> Listener:
        return self.recorder.listener

    @listener.setter
    def listener(self, listener: Listener) -> None:
        self.recorder.listener = listener

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
        the processes a pending point already has (an interrupted run) are kept for it, with
        the check its first process carries."""
        done = self.learn(self.store.rows())
        self.recorder.resume(done)
        return [point for point in self.plan.points if point.key not in done]

    def run(self, points: list[Point]) -> None:
        """Run ``points`` (schedule.py says in which order and worker); the machine's load is
        sampled before, between points (every SAMPLE_INTERVAL_S at most) and after, into
        meta.json, and so is where the time went."""
        self.ledger.start()
        try:
            self.supervisor.ready()
            self.session.begin()
            schedule = Schedule(
                self.plan,
                supervisor=self.supervisor,
                session=self.session,
                ledger=self.ledger,
                policy=self.policy,
                hooks=self.hooks,
                recorder=self.recorder,
                listener=self.listener,
            )
            schedule.run(points)
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
