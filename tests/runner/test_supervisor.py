"""The supervisor's hand-over of a task to a worker fork."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from linbench.machine.load import read_processes
from linbench.runner.supervisor import WORKER_MODULE, Supervisor, _sigint_deferred, start_worker_server


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
