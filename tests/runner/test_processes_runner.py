"""Points measured in several fresh worker processes (CPU): rounds, failures, resume, sharing."""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

import pytest
from result_rows import process_row
from sweep_helpers import PLANTED, make_points, run_store

from linbench.results.store import RunStore
from linbench.runner.session import Session


def _processes_by_seq(store: RunStore) -> dict[int, list[dict[str, Any]]]:
    by_seq: dict[int, list[dict[str, Any]]] = {}
    for row in store.process_rows():  # typed: seq and process are numbers
        by_seq.setdefault(row["seq"], []).append(row)
    return by_seq


def test_each_point_is_measured_in_as_many_fresh_processes_as_asked(tmp_path: Path) -> None:
    store = run_store(tmp_path, make_points([("planted", "good")], [64, 128]), processes=3)
    processes = _processes_by_seq(store)
    for row in store.rows():
        mine = processes[row["seq"]]
        assert sorted(p["process"] for p in mine) == [0, 1, 2]
        assert len({p["pid"] for p in mine}) == 3  # three fresh processes, none reused
        assert row["status"] == "ok" and row["processes"] == 3
        medians = [float(p["time_ms"]) for p in mine]
        assert float(row["time_ms"]) == pytest.approx(statistics.median(medians), rel=1e-5)
        assert float(row["time_ms_proc_lo"]) == pytest.approx(min(medians), rel=1e-5)
        assert row["between_spread"] is not None and row["timing"] == "eager"
        assert int(row["samples"]) == sum(int(p["samples"]) for p in mine)
    # Only the first process ran after the gate; its gate columns reach the results row.
    assert all(r["check_seq"] and r["rel_err"] for r in store.rows())


@pytest.mark.parametrize("share_workers", [False, True])
def test_only_a_points_first_process_profiles_a_call_for_its_allocations(tmp_path: Path, share_workers: bool) -> None:
    """alloc_peak_bytes is the same in every process, and its profiled call costs a call or
    more: the first process counts it, the later ones run no profiled call."""
    store = run_store(tmp_path, make_points([("planted", "good")], [64, 128]), processes=3, share_workers=share_workers)
    for seq, mine in _processes_by_seq(store).items():
        figures = {p["process"]: p["alloc_peak_bytes"] for p in mine}
        assert figures[0] is not None and figures[1] is figures[2] is None, (seq, figures)
    assert all(r["alloc_peak_bytes"] is not None for r in store.rows())


def test_a_process_that_fails_after_the_first_fails_the_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A flaky impl is a broken one: the crash of its second measuring process is the point's
    status, and the error says which process it was."""
    # No process measured again for being oversubscribed (tests/runner/test_oversubscribed_retry.py's
    # subject): on a busy machine the first one's retry would be the second worker to call flaky.
    monkeypatch.setattr(Session, "recheck", lambda self: False)
    # This session's ledger of the workers that called flaky (planted.flaky_ledger), new and
    # then removed: another session's is its own.
    ledger = Path(tempfile.gettempdir()) / f"linbench-planted-flaky-{os.getpid()}"
    ledger.unlink(missing_ok=True)  # left by an earlier session of the same pid
    try:
        store = run_store(tmp_path, make_points([("planted", "flaky")], [64]), processes=3)
        assert ledger.is_file()  # the workers kept this session's ledger, and no other
    finally:
        ledger.unlink(missing_ok=True)
    (row,) = store.rows()
    assert row["status"] == "crashed" and row["error"].startswith("process 2 of 2: worker killed by SIGSEGV")
    assert row["time_ms"] is None and row["processes"] == 2


def test_a_resumed_point_measures_only_the_processes_it_lacks(tmp_path: Path) -> None:
    points = make_points([("planted", "good")], [64])
    store = RunStore.create(tmp_path, "test")
    store.write_meta({"plugins": [PLANTED]})
    for process in (0, 1):  # an earlier session measured two of three, then was killed
        store.append_process(process_row(64, process) | {"variant": "planted", "impl": "good", "heads": 2} | _small)
    run_store(tmp_path, points, processes=3, store=store)
    mine = store.process_rows()
    assert [p["process"] for p in mine] == [0, 1, 2] and mine[2]["pid"] not in (1000, 1001)
    (row,) = store.rows()
    assert row["processes"] == 3 and row["status"] == "ok"


_small = {"dim_k": 16, "dim_v": 16}


def test_on_shared_workers_a_curve_shares_one_process_per_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On CPU the points of one curve are measured in one process a round, the first round
    (a warm worker, in plan order) included; no two rounds share a process, so a point's
    processes are never one process. (On a GPU the first round is a fork per point.)"""
    # A process that other work on the machine oversubscribed is measured once more where the
    # idle cores allow (tests/runner/test_oversubscribed_retry.py); in a fresh-clone CI run a
    # round here then held two processes. This test is about sharing, not that retry: the
    # re-check always says "still taken", so the machine's load cannot change what it counts.
    monkeypatch.setattr(Session, "recheck", lambda self: False)
    store = run_store(tmp_path, make_points([("planted", "good")], [64, 128]), processes=3, share_workers=True)
    by_round: dict[int, set[int]] = {}
    for row in store.process_rows():
        by_round.setdefault(row["process"], set()).add(row["pid"])
    assert [len(by_round[r]) for r in (0, 1, 2)] == [1, 1, 1]
    assert len(by_round[0] | by_round[1] | by_round[2]) == 3
    assert [r["processes"] for r in store.rows()] == [3, 3]
