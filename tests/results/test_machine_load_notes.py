"""The lines a run's summary and report add about the machine: oversubscribed points, and a
resumed run whose sessions met different loads (device: cpu; made-up rows and meta.json)."""

from __future__ import annotations

from typing import Any

import numpy as np

from linbench.results.machine_load import oversubscribed_note, run_notes, sessions_note


def _row(seq: int, marked: Any, status: str = "ok") -> dict[str, Any]:
    return {"variant": "cosine", "impl": "chunked", "mode": "fwd", "seq": seq, "status": status,
            "oversubscribed": marked}  # fmt: skip


def _session(number: int, threads: int, idle: float, busy: bool, points: int = 4) -> dict[str, Any]:
    return {"session": number, "started_at": f"2026-11-24T0{number}:00:00+00:00", "threads": threads,
            "threads_by": "idle cores", "idle_cores": idle, "load_avg": [0.2 if not busy else 3.1, 0, 0],
            "busy": busy, "points": points, "oversubscribed": 0}  # fmt: skip


def test_the_oversubscribed_points_are_counted_and_named() -> None:
    # As rows read back typed (a run's rows, or a report's frame: numpy's True); a failed
    # point is not counted, nor one whose mark is empty (None) or NaN.
    rows = [_row(1024, False), _row(2048, True), _row(4096, np.True_), _row(8192, True, status="timeout")]
    rows += [_row(16384, None), _row(32768, float("nan"))]
    note = oversubscribed_note(rows)
    assert note is not None and note.startswith("2 of 6 points were measured oversubscribed")
    assert "cosine:chunked fwd seq 2048, cosine:chunked fwd seq 4096" in note
    assert "left out of the fastest, speedups, fits, crossovers and the gate" in note


def test_no_note_without_a_marked_point_or_the_column() -> None:
    assert oversubscribed_note([_row(1024, False), _row(2048, None)]) is None
    assert oversubscribed_note([{"status": "ok", "seq": 1}]) is None


def test_a_run_resumed_under_other_load_says_so_naming_its_sessions() -> None:
    meta = {"load": {"samples": [], "sessions": [_session(1, 2, 1.95, False), _session(2, 1, 0.9, True, 3)]}}
    note = sessions_note(meta)
    assert note is not None and note.startswith("this run's points come from 2 sessions under different load")
    assert "session 1 at 2026-11-24T01:00:00+00:00: 4 points, 2 threads, 1.95 cores idle, load 0.2" in note
    assert "session 2 at 2026-11-24T02:00:00+00:00: 3 points, 1 thread, 0.9 cores idle, load 3.1, busy" in note


def test_sessions_under_the_same_load_say_nothing() -> None:
    alike = {"load": {"sessions": [_session(1, 2, 1.9, False), _session(2, 2, 1.7, False)]}}
    assert sessions_note(alike) is None
    # A session that wrote no point (resumed with nothing left) does not count.
    empty = {"load": {"sessions": [_session(1, 2, 1.9, False), _session(2, 1, 0.2, True, points=0)]}}
    assert sessions_note(empty) is None
    assert sessions_note({"load": {"samples": []}}) is None and sessions_note({}) is None


def test_idle_cores_far_apart_or_threads_that_changed_mid_session_differ() -> None:
    apart = {"load": {"sessions": [_session(1, 1, 1.75, False), _session(2, 1, 1.1, False)]}}
    assert sessions_note(apart) is not None
    changed = _session(2, 2, 1.9, False) | {"threads_changes": [{"threads": 1, "idle_cores": 0.8}]}
    assert sessions_note({"load": {"sessions": [_session(1, 2, 1.9, False), changed]}}) is not None


def test_run_notes_gives_the_lines_that_apply() -> None:
    meta = {"load": {"sessions": [_session(1, 2, 1.95, False), _session(2, 1, 0.9, True)]}}
    assert len(run_notes([_row(1024, True)], meta)) == 2
    assert run_notes([_row(1024, False)], {}) == []
