"""linbench's own runner behind the agents, on a fake inventory: a sweep split into 4 shards on
4 fake GPUs merges to the same rows as on one, and an agent killed mid-shard leaves a crashed
row and the rest of its shard measured. CPU only: the fake GPUs (a test-only inventory) stand
for GPUs, and every point is measured on the CPU by real worker processes."""

from __future__ import annotations

import csv
import os
import signal
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from fake_runner import STALLING
from fleet_helpers import FakeInventory

from linbench import SweepRequest
from linbench.fleet.device_spec import select_devices
from linbench.fleet.inventory import Inventory
from linbench.fleet.local import run_local
from linbench.fleet.merge import merge_run
from linbench.fleet.placement import Placement, plan_placement
from linbench.fleet.plan import FleetPlan, plan_fleet
from linbench.results.schema import KEY_COLUMNS
from linbench.runner.pipeline import prepare

# 4 scenarios (batch 1, 2 x heads 1, 2) of one impl at two lengths: 8 points, on the CPU.
SWEEP = SweepRequest(
    variants=("cosine:chunked",),
    no_against=True,
    seq="32..64",
    batch="1,2",
    heads="1,2",
    dim=8,
    device="cpu",
    budget_s=0.02,
    warmup_s=0.0,
    min_reps=2,
)
WAIT_S = 300.0  # a bound on waiting for a process, never a measured duration


def fleet_plan(tmp_path: Path) -> FleetPlan:
    return plan_fleet(prepare(SWEEP, tmp_path / "unused"), "linbench run (test)")


def placements(inventory: Inventory, spec: str) -> tuple[Placement, ...]:
    choices = select_devices(spec, inventory, {})
    return plan_placement(choices, os.sched_getaffinity(0), min_cores=1, oversubscribe=True)


def table(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def key(row: dict[str, str]) -> tuple[str, ...]:
    return tuple(row[c] for c in KEY_COLUMNS)


@pytest.mark.slow
@pytest.mark.extended
def test_two_fake_gpus_give_the_rows_of_one_with_the_real_runner(fake_gpus: FakeInventory, tmp_path: Path) -> None:
    """Four shards on one card and on two (each card takes shards one after the other): the
    same rows. Two cards rather than four: each agent is a process with torch and a fork server
    of its own, and two already spread the shards over more than one card."""
    inventory = fake_gpus(2)
    plan = fleet_plan(tmp_path)
    assert len(plan.shards) == 4 and plan.points == 8
    for name, spec in (("one", "cuda:0"), ("two", "cuda:0-1")):
        plan.write(tmp_path / name)
        outcome = run_local(tmp_path / name, placements(inventory, spec))
        assert outcome.deaths == [] and outcome.errors == [] and outcome.crashed == []
        merge_run(tmp_path / name)
    one, two = table(tmp_path / "one" / "results.csv"), table(tmp_path / "two" / "results.csv")
    planned = [key for shard in sorted(plan.shards, key=lambda s: s.points[0][0]) for key in shard.keys]
    assert [key(r) for r in one] == [key(r) for r in two] and sorted(map(key, two)) == sorted(planned)
    same = ("status", "device_name", "shard", "attempt", "processes", "check_seq", "flops", "numa_node")
    assert [[r[c] for c in same] for r in two] == [[r[c] for c in same] for r in one]
    assert {r["status"] for r in two} == {"ok"} and all(float(r["time_ms"]) > 0 for r in two)
    assert {r["gpu_uuid"] for r in one} == {"GPU-node-a-0000"}
    for shard in plan.shards:  # each scenario measured on one card, and every card used
        cards = {r["gpu_uuid"] for r in two if r["shard"] == shard.id}
        assert len(cards) == 1
    assert {r["gpu_uuid"] for r in two} == {f"GPU-node-a-{i:04d}" for i in range(2)}
    assert all(r["host"] == "node-a" and r["started_at"] <= r["finished_at"] for r in two)
    processes = table(tmp_path / "two" / "processes.csv")
    assert sorted(map(key, processes)) == sorted(map(key, two))  # each row's own process, once


@pytest.mark.slow
@pytest.mark.extended
def test_an_agent_killed_mid_shard_with_the_real_runner(fake_gpus: FakeInventory, tmp_path: Path) -> None:
    marker = tmp_path / "stalled"
    inventory = fake_gpus(2, stall={"seq": "32", "marker": str(marker)})
    plan = fleet_plan(tmp_path)
    run = tmp_path / "run"
    plan.write(run)
    killer = threading.Thread(target=_kill_when_stalled, args=(marker,), daemon=True)
    killer.start()
    outcome = run_local(run, placements(inventory, "cuda:0-1"), runner=STALLING, max_restarts=1)
    killer.join()
    victim = int(marker.read_text())
    assert [(pid, status) for _, pid, status in outcome.deaths] == [(victim, -signal.SIGKILL)]
    summary = merge_run(run)
    rows = table(run / "results.csv")
    assert sorted(map(key, rows)) == sorted(k for s in plan.shards for k in s.keys)  # none lost, none twice
    assert Counter(r["status"] for r in rows) == {"ok": 7, "crashed": 1}
    (crashed,) = [r for r in rows if r["status"] == "crashed"]
    assert crashed["seq"] == "32" and f"(pid {victim}) died (signal 9)" in crashed["error"]
    assert crashed["device_name"] == next(r["device_name"] for r in rows if r["status"] == "ok")
    assert summary.shards[crashed["shard"]] == [1, 2]  # the rest of its shard: a second attempt, same card


def _kill_when_stalled(marker: Path) -> None:
    """``kill -9`` the agent that writes its pid into ``marker``, once it does."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        text = marker.read_text() if marker.exists() else ""
        if text.endswith("\n"):
            os.kill(int(text), signal.SIGKILL)
            return
        time.sleep(0.05)
