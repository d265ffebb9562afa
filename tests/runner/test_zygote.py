"""The fork server forked from the command once it holds the worker's imports (device: cpu):
its workers run tasks as a spawned server's do, it holds no descriptor of the command's but its
own, it ends with the command, and it is not forked where it cannot be (another thread)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from linbench.runner.zygote import can_fork_server

pytestmark = pytest.mark.skipif(
    not can_fork_server() or not Path("/proc/self/fd").is_dir(),
    reason="this Python's fork server is not the one zygote.py forks (or no /proc)",
)

# In a fresh process: fork the server, run one real task in a worker through it, report.
SCRIPT = r"""
import json, os, sys, threading
from pathlib import Path
from linbench.runner.zygote import fork_server
import multiprocessing.forkserver as forkserver
import linbench.runner.worker
from linbench.runner.supervisor import WORKER_MODULE, Supervisor, start_worker_server
from linbench.runner.kind_protocol import Task
from linbench.runner.kinds import RUN
from linbench.measure.timing_policy import TimingPolicy
from linbench.shape import Shape
from linbench.sweep.points import Point

if sys.argv[1] == "thread":
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()
    print(json.dumps({"forked": fork_server(WORKER_MODULE)}))
    stop.set()
    sys.exit(0)
keep = open(sys.argv[2], "w")  # a descriptor of the command's own, which the server must not hold
start_worker_server(fork=True)
supervisor = Supervisor(Path(sys.argv[2]).with_name("worker.log"))
supervisor.ready()  # the server has closed what it does not hold by the time it forks
server = forkserver._forkserver._forkserver_pid
held = sorted(os.readlink(f"/proc/{server}/fd/{fd}") for fd in os.listdir(f"/proc/{server}/fd"))
point = Point("cosine", "chunked", "fwd", True, "fp32", "cpu", Shape(1, 2, 64, 8, 8))
timing = TimingPolicy(warmup_s=0.0, budget_s=0.02, min_reps=2, max_reps=3)
result = supervisor.run(Task("measure", point, timing, RUN), 60.0)
report = {"server": server, "parent": os.getpid(), "status": result.status, "pid": result.pid, "held": held}
report["worker_parent"] = int(Path(f"/proc/{server}/stat").read_text().split()[3])
report["same_command"] = Path(f"/proc/{server}/cmdline").read_bytes() == Path("/proc/self/cmdline").read_bytes()
print(json.dumps(report), flush=True)
"""


def test_the_forked_server_runs_a_real_task_and_holds_none_of_the_commands_descriptors(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, "fork", str(tmp_path / "kept.txt")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["status"] == "ok" and report["pid"] != report["server"]
    assert report["same_command"] and report["worker_parent"] == report["parent"]  # a fork of the command
    # Its socket, its end of the alive pipe, what its loop opens (a signal pipe, a selector, a
    # pipe per worker) and the standard streams: not the command's file.
    assert report["held"] and not [target for target in report["held"] if target.endswith("kept.txt")]
    # It ended with the command (its alive pipe closed): no process of that pid is left.
    deadline = time.monotonic() + 10
    while Path(f"/proc/{report['server']}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{report['server']}").exists() or _zombie(report["server"])


def test_a_process_with_a_second_thread_is_not_forked() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, "thread", "-"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"forked": False}


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True
