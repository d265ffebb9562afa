"""The test suite's stand-in for the runner: rows without measurements, on fake GPUs only.

It writes what the real runner writes for each point (a processes.csv row, its samples, a
results row), with a time derived from the point's key, so that sharded and unsharded runs
can be compared row for row. It refuses to run unless the fake inventory is switched on, so
it can never produce rows that look measured on a real machine.

The fake inventory's ``stall`` entry (``{"seq": "256", "marker": "/tmp/x"}``) makes the
first agent that reaches a point of that length write its pid into ``marker`` and wait there
until it is killed: the tests kill it to see what a dead agent leaves behind. The marker is
created exclusively, so every later agent runs the point normally.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from linbench.fleet.errors import AgentError
from linbench.fleet.inventory import FAKE_DEVICES_ENV, read_fake_inventory
from linbench.fleet.seam import PointHooks, ShardWork
from linbench.fleet.shards import PointKey
from linbench.results.schema import KEY_COLUMNS
from linbench.results.store import RunStore

FAKE_SAMPLES = 3


def fake_time_ms(key: PointKey) -> float:
    """A stable time for a point (the same in every process and on every fake card)."""
    digest = hashlib.sha256("|".join(key).encode()).digest()
    return 1.0 + int.from_bytes(digest[:4], "big") / 2**32


def run_fake_points(work: ShardWork, store: RunStore, hooks: PointHooks) -> None:
    """Write a fake row per point of ``work`` into ``store``."""
    fake = os.environ.get(FAKE_DEVICES_ENV)
    if not fake:
        raise AgentError(f"the fake runner runs only on a fake inventory ({FAKE_DEVICES_ENV} is for tests)")
    stall = read_fake_inventory(Path(fake)).fake_extra.get("stall")
    for key in work.keys:
        row: dict[str, object] = {**dict(zip(KEY_COLUMNS, key, strict=True)), "device_name": work.device_name}
        reason = hooks.before_point(key)
        if reason is not None:
            row |= {"status": "skipped", "error": reason}
        else:
            _maybe_stall(stall, row)
            ms = fake_time_ms(key)
            process: dict[str, object] = {**dict(zip(KEY_COLUMNS, key, strict=True))}
            process |= {"process": 0, "pid": os.getpid(), "status": "ok"}
            process |= {"time_ms": ms, "samples": FAKE_SAMPLES, "wall_s": 0.0, "timed_s": ms * FAKE_SAMPLES / 1e3}
            store.append_process(process, [ms] * FAKE_SAMPLES)
            row |= {"status": "ok", "time_ms": ms, "samples": FAKE_SAMPLES, "processes": 1, "error": "fake"}
        store.append(row)
        hooks.after_row(key, row)


def _maybe_stall(stall: object, row: dict[str, object]) -> None:
    """Wait here for a kill when the fake inventory asks for it at this point (once)."""
    if not isinstance(stall, dict) or str(row.get("seq")) != str(stall.get("seq")):
        return
    try:
        fd = os.open(str(stall["marker"]), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return  # an earlier agent stalled here already
    os.write(fd, f"{os.getpid()}\n".encode())
    os.close(fd)
    while True:  # until the test kills this process
        time.sleep(3600)
