"""An agent watched by the launcher's task that started it (linbench/fleet/watch.py): killed
mid-point, its point gets a crashed row and a new agent finishes the shard on the same GPU;
one that refuses to start is not restarted. CPU only: real agent processes on a fake
inventory, rows from the test-only fake runner."""

from __future__ import annotations

import csv
import json
import os
import signal
import sys
from collections import Counter
from pathlib import Path

from fake_runner import FAKE
from fleet_attempts import new_plan
from fleet_helpers import FakeInventory, on_stall, sweep_keys

from linbench.fleet.merge import merge_run
from linbench.fleet.watch import InFlight, agent_part_command, follow, run_watched
from linbench.results.schema import KEY_COLUMNS

KEYS = sweep_keys(dtypes=("fp32",), heads=(4,))  # one scenario (shard) of 6 points
WAIT_S = 120.0  # a bound on waiting for a process, never a measured duration


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_follow_gives_the_point_in_flight_when_the_events_stop() -> None:
    key = ["cosine", "chunked", "fwd", "True", "fp32", "cuda", "1", "4", "256", "64", "64"]
    events = [
        json.dumps({"event": "attempt", "shard": "s000", "attempt": 1, "path": "/run/shards/s000/attempt-1"}),
        json.dumps({"event": "start", "key": key}),
        json.dumps({"event": "row", "key": key, "status": "ok"}),
        "a line that is no event",
        json.dumps({"event": "start", "key": key}),
    ]
    assert follow(events) == InFlight(Path("/run/shards/s000/attempt-1"), tuple(key))
    assert follow(events[:3]) is None  # between points
    assert follow([*events, json.dumps({"event": "done"})]) is None


def test_an_agent_killed_mid_point_leaves_a_crashed_row_and_a_new_agent_finishes(
    fake_gpus: FakeInventory, tmp_path: Path
) -> None:
    marker = tmp_path / "stalled"
    fake_gpus(1, stall={"seq": "256", "marker": str(marker)})
    run = tmp_path / "run"
    (shard,) = new_plan(run, KEYS)
    killer = on_stall(marker, lambda pid: os.kill(pid, signal.SIGKILL), WAIT_S)
    env = os.environ | {"CUDA_VISIBLE_DEVICES": "0", "PYTHONPATH": os.pathsep.join(sys.path)}
    watched = run_watched(agent_part_command(sys.executable, str(run), shard.id, ["--runner", FAKE]), env)
    killer.join()
    victim = int(marker.read_text())
    assert watched.status == 0 and [k[KEY_COLUMNS.index("seq")] for k in watched.crashed] == ["256"]
    summary = merge_run(run)
    table = rows(run / "results.csv")
    assert [tuple(r[c] for c in KEY_COLUMNS) for r in table] == KEYS  # none lost, none twice
    assert Counter(r["status"] for r in table) == {"ok": 5, "crashed": 1}
    crashed = [r for r in table if r["status"] == "crashed"]
    assert f"the agent (pid {victim}) died (signal 9) while this point ran" in crashed[0]["error"]
    assert crashed[0]["gpu_uuid"] == "GPU-node-a-0000" and crashed[0]["attempt"] == "1"
    assert summary.shards[shard.id] == [1, 2]  # the rest ran as a second attempt, on the same card


def test_an_agent_that_refuses_to_start_is_not_restarted(fake_gpus: FakeInventory, tmp_path: Path) -> None:
    fake_gpus(1)
    run = tmp_path / "run"
    (shard,) = new_plan(run, KEYS)
    env = os.environ | {"CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": os.pathsep.join(sys.path)}
    watched = run_watched(agent_part_command(sys.executable, str(run), shard.id, ["--runner", FAKE]), env)
    assert watched.status == 2 and watched.crashed == []
    assert not (run / "shards").exists()


def test_an_agent_stopped_by_sigterm_is_not_restarted_and_its_point_stays_missing(
    fake_gpus: FakeInventory, tmp_path: Path
) -> None:
    marker = tmp_path / "stalled"
    fake_gpus(1, stall={"seq": "256", "marker": str(marker)})
    run = tmp_path / "run"
    (shard,) = new_plan(run, KEYS)
    stopper = on_stall(marker, lambda pid: os.kill(pid, signal.SIGTERM), WAIT_S)  # as Slurm cancels a task
    env = os.environ | {"CUDA_VISIBLE_DEVICES": "0", "PYTHONPATH": os.pathsep.join(sys.path)}
    watched = run_watched(agent_part_command(sys.executable, str(run), shard.id, ["--runner", FAKE]), env)
    stopper.join()
    assert watched.status == -signal.SIGTERM and watched.crashed == []
    (attempt,) = (run / "shards" / shard.id).iterdir()
    assert [r["seq"] for r in rows(attempt / "results.csv")] == ["128", "128"]  # cut off at 256, no row for it
