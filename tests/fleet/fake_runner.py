"""The test suite's point runners (linbench/fleet/seam.py), named ``fake_runner:<function>``
(this folder on the agents' PYTHONPATH: conftest.py puts it there).

``run_fake_points`` measures nothing: it writes what the real runner writes for each point (a
processes.csv row, its samples, a results row with the agent's ``where`` columns), through
the results record and RunStore, with a time derived from the point's key, so that sharded and
unsharded runs can be compared row for row without the cost of measuring. It refuses to run
unless the fake inventory is switched on, so it can never produce rows that look measured on a
real machine.

Both runners here stall: the fake inventory's ``stall`` entry (``{"seq": "256", "marker":
"/tmp/x"}``) makes the first agent that reaches a point of that length write its pid into
``marker`` and wait there until it is killed: the tests kill it to see what a dead agent
leaves behind. The marker is created exclusively, so every later agent runs the point.
``run_stalling_linbench_points`` is linbench's own runner with that stall.
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
from linbench.fleet.real_runner import run_linbench_points
from linbench.fleet.seam import ShardWork
from linbench.results.record import Checked, Key, PointFacts, ProcessResult, failure_row, point_row, process_row
from linbench.results.schema import KEY_COLUMNS
from linbench.results.store import RunStore
from linbench.runner.hooks import PointHooks
from linbench.shape import Shape
from linbench.sweep.points import Point

FAKE = "fake_runner:run_fake_points"  # the runner names the tests pass (--runner, run_local(runner=))
STALLING = "fake_runner:run_stalling_linbench_points"
FAKE_SAMPLES = 3


def fake_time_ms(key: Key) -> float:
    """A stable time for a point (the same in every process and on every fake card)."""
    digest = hashlib.sha256("|".join(key).encode()).digest()
    return 1.0 + int.from_bytes(digest[:4], "big") / 2**32


def point_of(key: Key) -> Point:
    """The point a key names (the hooks are called with points, as the runner calls them)."""
    row = dict(zip(KEY_COLUMNS, key, strict=True))
    sizes = (int(row[c]) for c in ("batch", "heads", "seq", "dim_k", "dim_v"))
    shape = Shape(*sizes, kv_heads=int(row["kv_heads"] or 0))
    chunk = int(row["chunk"]) if row["chunk"] else None
    fixed = (row["variant"], row["impl"], row["mode"], row["causal"] == "True", row["dtype"], row["device"])
    point = Point(*fixed, shape, chunk=chunk)
    assert point.key == key, f"{key} does not name one point"
    return point


def run_fake_points(work: ShardWork, folder: Path, hooks: PointHooks) -> None:
    """Write a fake row per point of ``work`` into a new run at ``folder``."""
    if not os.environ.get(FAKE_DEVICES_ENV):
        raise AgentError(f"the fake runner runs only on a fake inventory ({FAKE_DEVICES_ENV} is for tests)")
    store = RunStore.create_at(folder)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    store.write_meta({"status": "running", "started_at": started, "fleet": dict(work.fleet)})
    processes = int(dict(work.sweep.get("settings") or {}).get("processes") or 1)
    stalling = StallingHooks(hooks)
    for key in work.keys:
        point = point_of(key)
        tokens = point.shape.batch * point.shape.seq
        facts = PointFacts(dict(zip(KEY_COLUMNS, key, strict=True)), work.device_name, tokens=tokens)
        reason = stalling.before_point(point)
        if reason is not None:
            row = failure_row(facts, ProcessResult(status="skipped", error=reason))
        else:
            ms = fake_time_ms(key)
            done = [_fake_process(number, ms) for number in range(processes)]  # each with the same time
            for process in done:
                store.append_process(process_row(facts, process), [ms] * FAKE_SAMPLES)
            row = point_row(facts, Checked(), done) | {"error": "fake"}
        row |= dict(hooks.row_columns(point))
        store.append(row)
        hooks.after_row(point, row)
    finished = datetime.now(timezone.utc).isoformat(timespec="seconds")
    store.update_meta({"status": "complete", "finished_at": finished})


def _fake_process(number: int, ms: float) -> ProcessResult:
    timed_s = ms * FAKE_SAMPLES / 1e3
    return ProcessResult(
        process=number, pid=os.getpid(), status="ok", time_ms=ms, samples=FAKE_SAMPLES, wall_s=0.0, timed_s=timed_s
    )


def run_stalling_linbench_points(work: ShardWork, folder: Path, hooks: PointHooks) -> None:
    """linbench's own runner, with the fake inventory's stall before the point it names."""
    run_linbench_points(work, folder, StallingHooks(hooks))


class StallingHooks:
    """``hooks``, stalling (``maybe_stall``) once the agent has said which point it starts."""

    def __init__(self, hooks: PointHooks) -> None:
        self.hooks = hooks

    def before_point(self, point: Point) -> str | None:
        reason = self.hooks.before_point(point)
        maybe_stall(point.key, fake_extra())
        return reason

    def row_columns(self, point: Point) -> Mapping[str, Any]:
        return self.hooks.row_columns(point)

    def after_row(self, point: Point, row: Mapping[str, Any]) -> None:
        self.hooks.after_row(point, row)


def maybe_stall(key: Key, extra: Mapping[str, Any]) -> None:
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
    path = os.environ.get(FAKE_DEVICES_ENV)
    return dict(read_fake_inventory(Path(path)).fake_extra) if path else {}
