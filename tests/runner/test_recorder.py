"""What the recorder writes of a point's correctness check: its first processes.csv row carries
the check as docs/results.md says, and a run killed mid-point and resumed takes the check up from
that row (device: cpu, real worker processes at a tiny size)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sweep_helpers import make_points, sweep_plan

from linbench.results.store import RunStore
from linbench.runner.sweep_runner import SweepRunner
from linbench.sweep.points import Point


class _CtrlCAtStart:
    """A listener that stands for Ctrl-C: it lets ``allowed`` processes start, then interrupts."""

    def __init__(self, allowed: int) -> None:
        self.allowed = allowed

    def __call__(self, event: str, point: Point, row: dict[str, Any] | None) -> None:
        if event == "start":
            if not self.allowed:
                raise KeyboardInterrupt
            self.allowed -= 1


def test_the_check_reaches_processes_csv_and_survives_a_resume_mid_point(tmp_path: Path) -> None:
    plan = sweep_plan(make_points([("planted", "good")], [64]), processes=3)
    store = RunStore.create(tmp_path, "test")
    killed = SweepRunner(plan, store, listener=_CtrlCAtStart(allowed=1))
    with pytest.raises(KeyboardInterrupt):
        killed.run(killed.pending())
    assert store.rows() == []  # the point is open: one process of three
    (first,) = store.process_rows()
    assert first["process"] == 0 and first["check_seq"] == 64 and first["rel_err"] >= 0.0

    resumed = SweepRunner(plan, store)
    resumed.run(resumed.pending())
    processes = store.process_rows()
    assert [p["process"] for p in processes] == [0, 1, 2]
    # Only the first carries the check (docs/results.md): the later ones ran no gate.
    assert [(p["rel_err"], p["check_seq"]) for p in processes[1:]] == [(None, None), (None, None)]
    (row,) = store.rows()
    assert row["status"] == "ok" and row["processes"] == 3
    assert (row["rel_err"], row["check_seq"]) == (first["rel_err"], first["check_seq"])
