"""Each session of a run (the run, and each --resume of it) records the threads it chose and
the machine it met, so a run finished under other load says so (device: cpu; tiny real sweeps,
nothing asserted about the load itself)."""

from __future__ import annotations

from pathlib import Path

from sweep_helpers import make_points, run_store

from linbench.results.machine_load import sessions_note


def test_a_run_resumed_with_other_threads_names_both_sessions(tmp_path: Path) -> None:
    first, second = make_points([("planted", "good")], [64, 128])
    store = run_store(tmp_path, [first], threads=2)
    run_store(tmp_path, [first, second], threads=1, store=store)  # --resume: only 128 is left
    meta = store.read_meta()
    sessions = meta["load"]["sessions"]
    assert [s["session"] for s in sessions] == [1, 2]
    chosen = [(s["threads"], s["threads_by"], s["points"]) for s in sessions]
    assert chosen == [(2, "--threads", 1), (1, "--threads", 1)]
    assert all(s["started_at"] and s["ended_at"] for s in sessions)
    assert [row["threads"] for row in store.rows()] == [2, 1]
    note = sessions_note(meta)
    assert note is not None and "2 sessions under different load" in note
    assert "session 1 at" in note and "1 point, 2 threads" in note and "1 point, 1 thread" in note
    assert meta["timing"]["threads_choice"]["by"] == "--threads" and meta["timing"]["threads"] == 1


def test_by_default_a_cpu_worker_takes_the_idle_cores_and_records_why(tmp_path: Path) -> None:
    store = run_store(tmp_path, make_points([("planted", "good")], [64]))
    choice = store.read_meta()["timing"]["threads_choice"]
    assert choice["by"] == "idle cores" and "one thread per core" in choice["rule"]
    # Whatever the machine's load: at least one thread, at most torch's default.
    assert 1 <= choice["threads"] <= choice["most"]
    # (The threads follow the idle cores between points, so the row's may differ from the start's.)
    assert 1 <= store.rows()[0]["threads"] <= choice["most"]
