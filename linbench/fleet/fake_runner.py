"""The test suite's stand-ins: a runner that measures nothing, and a stall, on fake GPUs only.

``run_fake_points`` writes what the real runner writes for each point (a processes.csv row,
its samples, a results row with the agent's ``where`` columns), with a time derived from the
point's key, so that sharded and unsharded runs can be compared row for row without the cost
of measuring. It refuses to run unless the fake inventory is switched on, so it can never
produce rows that look measured on a real machine.

The fake inventory's ``stall`` entry (``{"seq": "256", "marker": "/tmp/x"}``) makes the
first agent that reaches a point of that length (with either runner) write its pid into
``marker`` and wait there until it is killed: the tests kill it to see what a dead agent
leaves behind. The marker is created exclusively, so every later agent runs the point.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

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


def run_fake_points(work: ShardWork, folder: Path, hooks: PointHooks) -> None:
    """Write a fake row per point of ``work`` into a new run at ``folder``."""
    fake = os.environ.get(FAKE_DEVICES_ENV)
    if not fake:
        raise AgentError(f"the fake runner runs only on a fake inventory ({FAKE_DEVICES_ENV} is for tests)")
    store = RunStore.create_at(folder)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    store.write_meta({"status": "running", "started_at": started, "fleet": dict(work.fleet)})
    processes = int(dict(work.sweep.get("settings") or {}).get("processes") or 1)
    for key in work.keys:
        row: dict[str, Any] = dict(zip(KEY_COLUMNS, key, strict=True)) | {"device_name": work.device_name}
        reason = hooks.before_point(key)
        if reason is not None:
            row |= {"status": "skipped", "error": reason}
        else:
            ms = fake_time_ms(key)
            for number in range(processes):  # as many as the sweep asks for, each with the same time
                process: dict[str, Any] = {**dict(zip(KEY_COLUMNS, key, strict=True)), "process": number}
                process |= {"pid": os.getpid()}
                process |= {"status": "ok", "time_ms": ms, "samples": FAKE_SAMPLES, "wall_s": 0.0}
                store.append_process(process | {"timed_s": ms * FAKE_SAMPLES / 1e3}, [ms] * FAKE_SAMPLES)
            row |= {"status": "ok", "time_ms": ms, "samples": FAKE_SAMPLES * processes, "processes": processes}
            row["error"] = "fake"
        row |= dict(hooks.row_columns(key))
        store.append(row)
        hooks.after_row(key, row)
    finished = datetime.now(timezone.utc).isoformat(timespec="seconds")
    store.update_meta({"status": "complete", "finished_at": finished})


def maybe_stall(key: PointKey, extra: Mapping[str, Any]) -> None:
    """Wait here for a kill when the fake inventory's ``stall`` names this point's length (once)."""
    stall = extra.get("stall")
    if not isinstance(stall, dict) or key[KEY_COLUMNS.index("seq")] != str(stall.get("seq")):
        return
    try:
        fd = os.open(str(stall["marker"]), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return  # an earlier agent stalled here already
    os.write(fd, f"{os.getpid()}\n".encode())
    os.close(fd)
    while True:  # until the test kills this process
        time.sleep(3600)


def fake_extra() -> dict[str, Any]:
    """The fake inventory's extra entries (``stall``), read again (a test may change them)."""
    return dict(read_fake_inventory(Path(os.environ[FAKE_DEVICES_ENV])).fake_extra)
