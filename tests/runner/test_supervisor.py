"""The supervisor's hand-over of a task to a worker fork, and warm workers side by side (device: cpu)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from sweep_helpers import FAST, PLANTED

from linbench.machine.load import read_processes
from linbench.runner.kind_protocol import Task
from linbench.runner.kinds import RUN
from linbench.runner.supervisor import WORKER_MODULE, Supervisor, _sigint_deferred, start_worker_server
from linbench.shape import Shape
from linbench.sweep.points import Point


def test_ctrl_c_during_the_hand_over_is_raised_once_it_is_complete() -> None:
    reached_end_of_block = False
    with pytest.raises(KeyboardInterrupt), _sigint_deferred():
        signal.raise_signal(signal.SIGINT)
        reached_end_of_block = True
    assert reached_end_of_block
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_no_ctrl_c_means_nothing_is_raised() -> None:
    with _sigint_deferred():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _fork_servers() -> dict[int, bytes]:
    """This process's children that are multiprocessing fork servers, with their command lines."""
    found = {}
    for stat in read_processes().values():
        if stat.ppid != os.getpid():
            continue
        try:
            command = Path(f"/proc/{stat.pid}/cmdline").read_bytes()
        except OSError:
            continue  # it ended after the table was read
        if b"multiprocessing.forkserver" in command:
            found[stat.pid] = command
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads /proc (Linux)")
def test_a_fork_server_started_early_preloads_the_worker_and_is_the_one_kept(tmp_path: Path) -> None:
    """What ``linbench run`` does at its start (the server's imports beside its own), then what
    the runner does before its first sample: wait until the server forks."""
    start_worker_server()
    servers = _fork_servers()
    assert len(servers) == 1 and WORKER_MODULE.encode() in next(iter(servers.values()))
    Supervisor(tmp_path / "worker.log").ready()
    start_worker_server()  # one is running: it is kept, not started again
    assert _fork_servers() == servers


# planted's crash and hang impls fail from this length on (tests/plugins/planted.py).
FAIL_FROM_SEQ = 512


def _gate(impl: str, seq: int = 16) -> Task:
    point = Point("planted", impl, "fwd", True, "fp32", "cpu", Shape(1, 2, seq, 8, 8))
    return Task(job="gate", point=point, timing=FAST, kind=RUN, plugins=(PLANTED,), threads=1)


def test_lanes_run_side_by_side_each_task_in_its_keys_warm_worker(tmp_path: Path) -> None:
    """The correctness checks' lanes (runner/schedule.py): a lane's tasks one after the other,
    each in the warm worker of its key; a crash ends its own lane (the tasks after it are left
    to the caller) and no other, and only a worker whose tasks ended ok is kept warm."""
    supervisor = Supervisor(tmp_path / "worker.log")
    try:
        lanes = [
            [("a", _gate("good")), ("a", _gate("wrong"))],
            [("b", _gate("good")), ("b", _gate("crash", seq=FAIL_FROM_SEQ)), ("b", _gate("good"))],
        ]
        results = supervisor.run_side_by_side(lanes, timeout_s=60.0)
        assert [r.status if r else None for r in results[0]] == ["ok", "mismatch"]
        assert [r.status if r else None for r in results[1]] == ["ok", "crashed", None]
        assert "SIGSEGV" in (results[1][1].error if results[1][1] else "")
        assert supervisor._warm == {}  # a mismatch and a crash: neither worker is kept
        kept = supervisor.run_side_by_side([[("c", _gate("good"))], [("d", _gate("good"))]], timeout_s=60.0)
        assert [[r.status for r in lane if r] for lane in kept] == [["ok"], ["ok"]]
        assert set(supervisor._warm) == {"c", "d"}
    finally:
        supervisor.stop()


def test_a_lane_past_its_limit_is_killed_and_reported_as_a_timeout(tmp_path: Path, short_grace: None) -> None:
    supervisor = Supervisor(tmp_path / "worker.log")
    try:
        lanes = [[("a", _gate("hang", seq=FAIL_FROM_SEQ))], [("b", _gate("good"))]]
        results = supervisor.run_side_by_side(lanes, timeout_s=1.0)
        assert results[0][0] is not None and results[0][0].status == "timeout"
        assert results[1][0] is not None and results[1][0].status == "ok"
        assert set(supervisor._warm) == {"b"}
    finally:
        supervisor.stop()
