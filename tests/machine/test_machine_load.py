"""The machine's load: /proc read right, linbench's own processes left out, the busy rule,
and the one-line warning built from meta.json."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from linbench.machine import load
from linbench.machine.load import LoadMonitor, ProcStat, busy_processes, busy_reasons, own_pids, parse_stat
from linbench.results.machine_load import load_warning

TICKS = load._CLOCK_TICKS


def test_stat_lines_parse_even_with_parentheses_in_the_name() -> None:
    fields = " ".join(["S", "42"] + ["0"] * 9 + ["150", "50", "7", "3"] + ["0"] * 30)
    stat = parse_stat(f"1234 (tricky) name)) {fields}")
    assert stat == ProcStat(1234, 42, "tricky) name)", 200, child_ticks=10)
    assert parse_stat("garbage") is None


def test_linbench_s_own_cpu_time_keeps_a_worker_that_ended_between_two_readings() -> None:
    """A worker the fork server waited for leaves its ticks in the fork server's child time,
    so the own time between two readings neither loses nor counts it twice."""
    root, server, worker, other = 100, 101, 102, 200
    before = {
        root: ProcStat(root, 1, "linbench", 10),
        server: ProcStat(server, root, "python", 5),
        worker: ProcStat(worker, server, "python", 40),
        other: ProcStat(other, 1, "hog", 500),
    }
    after = {
        root: ProcStat(root, 1, "linbench", 12),
        server: ProcStat(server, root, "python", 5, child_ticks=70),  # the worker ended at 70
        other: ProcStat(other, 1, "hog", 900),
    }
    assert load.own_ticks(after, root) - load.own_ticks(before, root) == 2 + 70 - 40


def test_this_process_and_its_children_are_linbench_s_own() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        table = load.read_processes()
        assert table[os.getpid()].name  # /proc is read
        ours = own_pids(table)
        assert {os.getpid(), child.pid} <= ours
        assert os.getppid() not in ours
    finally:
        child.kill()
        child.wait()


def test_cpu_percent_is_cpu_time_over_wall_time_and_skips_excluded_and_reused_pids() -> None:
    before = {
        10: ProcStat(10, 1, "hog", 0),
        11: ProcStat(11, 1, "idle", 0),
        12: ProcStat(12, 1, "ours", 0),
        13: ProcStat(13, 1, "old", 0),
    }
    after = {
        10: ProcStat(10, 1, "hog", 2 * TICKS),  # 2 s of CPU in 2 s: one core
        11: ProcStat(11, 1, "idle", 0),
        12: ProcStat(12, 1, "ours", 2 * TICKS),
        13: ProcStat(13, 1, "new", 2 * TICKS),  # pid reused by another process
        14: ProcStat(14, 1, "born", 2 * TICKS),  # not there before: no rate
    }
    assert busy_processes(before, after, 2.0, exclude={12}) == [{"pid": 10, "name": "hog", "cpu_percent": 100.0}]


def test_a_process_is_never_said_to_use_more_than_every_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three clock ticks counted over an 8 ms window read as 367% on a 2-core machine."""
    monkeypatch.setattr(load, "cpu_cores", lambda: 2)
    before, after = {10: ProcStat(10, 1, "hog", 0)}, {10: ProcStat(10, 1, "hog", 3 * TICKS // 100)}
    assert busy_processes(before, after, 0.0082, exclude=set()) == [{"pid": 10, "name": "hog", "cpu_percent": 200.0}]


def test_a_sample_right_after_another_still_watches_a_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """The end sample can follow a between-points one at once: rather than divide a clock tick
    by a few milliseconds, it reaches back to the reading before (overlapping the last
    sample's window) and waits for nothing; with no reading that old, it waits out the
    shortest window."""
    _fake_machine(monkeypatch, hog_percent=100.0, load_1m=0.5)
    monitor = LoadMonitor(interval_s=10.0)
    start = monitor.sample("start")  # nothing before it: it waits out the shortest window
    assert start["window_s"] == load.MIN_WINDOW_S and load.time.monotonic() == load.MIN_WINDOW_S
    load.time.sleep(0.004)
    end = monitor.sample("end")
    assert end["window_s"] == round(load.MIN_WINDOW_S + 0.004, 2)
    assert load.time.monotonic() == load.MIN_WINDOW_S + 0.004  # no wait
    (hog,) = end["busy_processes"]  # 25 whole clock ticks in 0.254 s
    assert hog["pid"] == 999999 and hog["cpu_percent"] == pytest.approx(100.0, abs=2.0)


def test_the_start_window_opens_with_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """``linbench run`` opens the start sample's window as it starts: its imports and planning
    (1.5 s here) make the window, and the start sample waits for nothing. The reading serves
    one monitor: the next one in the process opens its own."""
    _fake_machine(monkeypatch, hog_percent=100.0, load_1m=0.5)
    load.open_start_window()
    load.time.sleep(1.5)
    start = LoadMonitor().sample("start")
    assert start["window_s"] == 1.5 and load.time.monotonic() == 1.5
    assert start["busy_processes"] == [{"pid": 999999, "name": "hog", "cpu_percent": 100.0}]
    assert LoadMonitor().sample("start")["window_s"] == load.MIN_WINDOW_S


def test_the_busy_rule() -> None:
    quiet = {"load_avg": [1.5, 1.0, 1.0], "busy_processes": [{"pid": 5, "name": "cron", "cpu_percent": 20.0}]}
    assert busy_reasons(quiet, cores=2) == []
    loaded = {"load_avg": [2.5, 1.0, 1.0], "busy_processes": []}
    assert busy_reasons(loaded, cores=2) == ["load average 2.50 on 2 cores"]
    hog = {"load_avg": [0.5, 0.5, 0.5], "busy_processes": [{"pid": 7, "name": "make", "cpu_percent": 51.0}]}
    assert busy_reasons(hog, cores=16) == ["make (pid 7) at 51% CPU"]
    gpu = {"load_avg": None, "busy_processes": [], "gpu_processes": [{"pid": 9, "name": "train", "used_bytes": 1}]}
    assert busy_reasons(gpu, cores=16) == ["train (pid 9) on the GPU"]


def _fake_machine(monkeypatch: pytest.MonkeyPatch, hog_percent: float, load_1m: float) -> None:
    """A machine where one other process ("hog", pid 999999) burns ``hog_percent`` of a core."""
    clock = {"t": 0.0}
    fake_time = SimpleNamespace(monotonic=lambda: clock["t"], sleep=lambda s: clock.__setitem__("t", clock["t"] + s))
    monkeypatch.setattr(load, "time", fake_time)
    # No start window left open by a command an earlier test ran in this process: its reading is
    # of the real clock, and a monitor made here would reach back to it across the fake one.
    monkeypatch.setattr(load, "_start_window", [])

    def processes(proc: Any = None) -> dict[int, ProcStat]:
        ticks = int(clock["t"] * hog_percent / 100 * TICKS)
        return {os.getpid(): ProcStat(os.getpid(), 1, "linbench", 0), 999999: ProcStat(999999, 1, "hog", ticks)}

    monkeypatch.setattr(load, "read_processes", processes)
    monkeypatch.setattr(load, "load_average", lambda: [load_1m, load_1m, load_1m])
    monkeypatch.setattr(load, "cpu_cores", lambda: 2)


def test_the_monitor_samples_at_start_between_points_and_at_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_machine(monkeypatch, hog_percent=100.0, load_1m=0.5)
    monitor = LoadMonitor(interval_s=10.0)
    first = monitor.sample("start")
    assert first["busy_processes"] == [{"pid": 999999, "name": "hog", "cpu_percent": 100.0}]
    assert first["busy"] == ["hog (pid 999999) at 100% CPU"]
    assert not monitor.due()
    load.time.sleep(10.0)
    assert monitor.due()
    later = monitor.sample("during")
    assert later["window_s"] == 10.0 and later["busy_processes"][0]["cpu_percent"] == 100.0
    section = monitor.section()
    assert section["busy"] is True and section["cores"] == 2 and len(section["samples"]) == 2
    assert "50% of a core" in section["rule"]


def test_a_resumed_run_keeps_its_earlier_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_machine(monkeypatch, hog_percent=0.0, load_1m=0.5)
    earlier = {"samples": [{"when": "start", "busy": []}]}
    monitor = LoadMonitor(previous=earlier)
    monitor.sample("start")
    assert [s["when"] for s in monitor.section()["samples"]] == ["start", "start"]
    assert monitor.section()["busy"] is False


def test_the_warning_names_the_load_and_the_busiest_processes() -> None:
    meta = {
        "load": {
            "cores": 2,
            "samples": [
                {"load_avg": [0.4, 0, 0], "busy_processes": [], "busy": []},
                {
                    "load_avg": [3.2, 0, 0],
                    "busy_processes": [{"pid": 42, "name": "python3", "cpu_percent": 97.0}],
                    "busy": ["load average 3.20 on 2 cores", "python3 (pid 42) at 97% CPU"],
                },
            ],
        }
    }
    warning = load_warning(meta)
    assert warning is not None and "\n" not in warning
    assert "1 of 2 load samples" in warning and "load average up to 3.2 on 2 cores" in warning
    assert "python3 (pid 42) up to 97% CPU" in warning


def test_no_warning_for_a_quiet_machine_or_a_run_without_load_samples() -> None:
    assert load_warning({}) is None
    assert load_warning({"load": {"cores": 2, "samples": [{"load_avg": [0.1, 0, 0], "busy": []}]}}) is None
    assert load_warning({"load": "garbage"}) is None
