"""A process other processes oversubscribed is measured again once when the idle cores say a
clean measurement is possible; only the kept process is recorded, and the dropped one's seconds
are harness cost (device: cpu; a stand-in supervisor and idle-core check, nothing timed)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from linbench.measure.timing_policy import TimingPolicy
from linbench.results.processes import ProcessResult
from linbench.results.store import RunStore
from linbench.runner.kind_protocol import Task
from linbench.runner.kinds import RUN
from linbench.runner.plan import RunPlan
from linbench.runner.sweep_runner import SweepRunner
from linbench.runner.targets import Targets
from linbench.shape import Shape
from linbench.sweep.points import Point


class _Crowded:
    """Stands in for the workers: the first ``crowded`` measurements come out oversubscribed."""

    def __init__(self, crowded: int) -> None:
        self.crowded = crowded
        self.measured: list[int | None] = []  # the threads each measurement was given
        self.counted: list[bool] = []  # whether each measurement counted its allocations
        self.threads_seen = 1  # the threads a worker reports it ran with

    def ready(self) -> None:
        pass  # no fork server to wait for

    def run(self, task: Task, timeout_s: float, worker: object = None) -> ProcessResult:
        if task.job == "gate":
            return ProcessResult("ok", rel_err=0.0)
        self.measured.append(task.threads)
        self.counted.append(task.count_allocations)
        marked = len(self.measured) <= self.crowded
        ms = 70.0 if marked else 1.0
        allocated = 1000 + len(self.measured) if task.count_allocations else None
        return ProcessResult("ok", time_ms=ms, samples=3, samples_ms=(ms, ms, ms), neighbour_cpu=1.8 if marked
                             else 0.0, oversubscribed=marked, threads=self.threads_seen,
                             alloc_peak_bytes=allocated)  # fmt: skip

    def run_batch(self, tasks: list[Task], timeout_s: float) -> list[tuple[ProcessResult | None, float]]:
        return [(self.run(task, timeout_s), 0.0) for task in tasks]

    def stop(self) -> None:
        return None

    def retire_warm(self) -> None:
        return None


def _runner(tmp_path: Path, crowded: int, clean_now: bool, monkeypatch: pytest.MonkeyPatch) -> SweepRunner:
    point = Point("cosine", "chunked", "fwd", True, "fp32", "cpu", Shape(1, 2, 64, 16, 16))
    plan = RunPlan(
        points=(point,),
        targets=Targets(pairs=(("cosine", "chunked"),), baselines=(), notes=()),
        device=torch.device("cpu"),
        device_name="test cpu",
        timeout_s=60.0,
        timing=TimingPolicy(warmup_s=0.0, budget_s=0.0, min_reps=3, max_reps=3),
        kind=RUN,
        threads=1,
    )
    runner = SweepRunner(plan, RunStore.create(tmp_path, "crowded"))
    runner.supervisor = _Crowded(crowded)  # type: ignore[assignment]
    monkeypatch.setattr(runner.session, "recheck", lambda: clean_now)
    return runner


def test_an_oversubscribed_process_is_measured_again_and_only_the_clean_one_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = _runner(tmp_path, crowded=1, clean_now=True, monkeypatch=monkeypatch)
    runner.run(runner.pending())
    (process,) = runner.store.process_rows()
    assert process["oversubscribed"] is False and process["time_ms"] == 1.0
    (row,) = runner.store.rows()
    assert row["oversubscribed"] is False
    assert runner.ledger.retried == 1 and runner.ledger.processes == 1


def test_the_mark_stays_when_the_second_process_is_oversubscribed_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = _runner(tmp_path, crowded=2, clean_now=True, monkeypatch=monkeypatch)
    runner.run(runner.pending())
    (row,) = runner.store.rows()
    assert row["oversubscribed"] is True and row["neighbour_cpu"] == 1.8
    assert runner.ledger.retried == 1  # measured again once, never more


def test_no_second_process_while_the_cores_are_still_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = _runner(tmp_path, crowded=1, clean_now=False, monkeypatch=monkeypatch)
    runner.run(runner.pending())
    (row,) = runner.store.rows()
    assert row["oversubscribed"] is True and runner.ledger.retried == 0


def test_a_process_measured_again_at_the_same_threads_keeps_the_dropped_ones_allocation_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a call allocates is the same in every process at the same threads: the second
    process does not profile a call again, and the kept row carries the first one's count."""
    runner = _runner(tmp_path, crowded=1, clean_now=True, monkeypatch=monkeypatch)
    runner.run(runner.pending())
    assert runner.supervisor.counted == [True, False]  # type: ignore[attr-defined]
    (process,) = runner.store.process_rows()
    assert process["time_ms"] == 1.0 and process["alloc_peak_bytes"] == 1001


def test_at_other_threads_the_process_measured_again_counts_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = _runner(tmp_path, crowded=1, clean_now=True, monkeypatch=monkeypatch)
    runner.supervisor.threads_seen = 2  # type: ignore[attr-defined]  # not the session's 1
    runner.run(runner.pending())
    assert runner.supervisor.counted == [True, True]  # type: ignore[attr-defined]
    (process,) = runner.store.process_rows()
    assert process["alloc_peak_bytes"] == 1002
