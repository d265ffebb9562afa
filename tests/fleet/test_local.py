"""The local executor with real agent processes on a fake inventory: a sweep on 4 fake GPUs
merges to the rows of the same sweep on one; an agent killed mid-shard leaves a crashed row
and its shard goes on; a killed coordinator resumes; nothing is lost or written twice. CPU
only: the GPUs are fake and the rows come from the test-only fake runner."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from fake_runner import FAKE
from fleet_attempts import new_plan
from fleet_helpers import FakeInventory, on_stall, sweep_keys

from linbench.fleet.agent_checks import own_tree
from linbench.fleet.device_spec import select_devices
from linbench.fleet.inventory import Inventory
from linbench.fleet.local import run_local
from linbench.fleet.merge import merge_run
from linbench.fleet.placement import Placement, plan_placement
from linbench.results.schema import KEY_COLUMNS

KEYS = sweep_keys()  # 4 scenarios (shards) of 6 points
WAIT_S = 120.0  # a bound on waiting for a process, never a measured duration


def placements(inventory: Inventory, spec: str) -> tuple[Placement, ...]:
    choices = select_devices(spec, inventory, {})
    return plan_placement(choices, os.sched_getaffinity(0), min_cores=1, oversubscribe=True)


def table(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def key(row: dict[str, str]) -> tuple[str, ...]:
    return tuple(row[c] for c in KEY_COLUMNS)


def kill_when_stalled(marker: Path) -> threading.Thread:
    """``kill -9`` the process that writes its pid into ``marker``, once it does."""
    return on_stall(marker, lambda pid: os.kill(pid, signal.SIGKILL), WAIT_S)


def measured(row: dict[str, str]) -> dict[str, str]:
    """A row without the columns that say where and when it was measured (or by which pid)."""
    where = ("host", "gpu_uuid", "gpu_pci", "gpu_index", "cpu_affinity", "shared_cores", "agent_pid")
    where += ("started_at", "finished_at")
    return {k: v for k, v in row.items() if k not in where}


def test_four_fake_gpus_give_the_rows_of_one(fake_gpus: FakeInventory, tmp_path: Path) -> None:
    inventory = fake_gpus(4)
    shards = new_plan(tmp_path / "one", KEYS)
    new_plan(tmp_path / "four", KEYS)
    one = run_local(tmp_path / "one", placements(inventory, "cuda:0"), runner=FAKE)
    four = run_local(tmp_path / "four", placements(inventory, "cuda:0-3"), runner=FAKE)
    assert one.deaths == four.deaths == [] and one.errors == four.errors == []
    merge_run(tmp_path / "one")
    merge_run(tmp_path / "four")
    rows_one, rows_four = table(tmp_path / "one" / "results.csv"), table(tmp_path / "four" / "results.csv")
    assert [key(r) for r in rows_four] == [key(r) for r in rows_one] == KEYS  # every point once, in plan order
    assert [measured(r) for r in rows_four] == [measured(r) for r in rows_one]  # statuses, times, shards
    assert {r["gpu_uuid"] for r in rows_one} == {"GPU-node-a-0000"}
    assert {r["gpu_uuid"] for r in rows_four} == {f"GPU-node-a-{i:04d}" for i in range(4)}
    for shard in shards:  # each scenario on one card, with where it ran complete
        mine = [r for r in rows_four if r["shard"] == shard.id]
        assert len(mine) == len(shard.keys) and len({r["gpu_uuid"] for r in mine}) == 1
        assert all(r["host"] == "node-a" and r["started_at"] and r["cpu_affinity"] for r in mine)


def test_an_agent_killed_mid_shard_leaves_a_crashed_row_and_its_shard_goes_on(
    fake_gpus: FakeInventory, tmp_path: Path
) -> None:
    marker = tmp_path / "stalled"
    inventory = fake_gpus(2, stall={"seq": "256", "marker": str(marker)})
    killer = kill_when_stalled(marker)
    new_plan(tmp_path / "run", KEYS)
    outcome = run_local(tmp_path / "run", placements(inventory, "cuda:0-1"), runner=FAKE, max_restarts=1)
    killer.join()
    victim = int(marker.read_text())
    assert [(pid, status) for _, pid, status in outcome.deaths] == [(victim, -signal.SIGKILL)]
    summary = merge_run(tmp_path / "run")
    rows = table(tmp_path / "run" / "results.csv")
    assert [key(r) for r in rows] == KEYS  # no row lost, none twice
    crashed = [r for r in rows if r["status"] == "crashed"]
    assert len(crashed) == 1 and crashed[0]["seq"] == "256"
    assert f"(pid {victim}) died (signal 9) while this point ran" in crashed[0]["error"]
    assert Counter(r["status"] for r in rows) == {"ok": len(KEYS) - 1, "crashed": 1}
    assert crashed[0]["agent_pid"] == str(victim) and crashed[0]["finished_at"] and not crashed[0]["started_at"]
    assert summary.shards[crashed[0]["shard"]] == [1, 2]  # the rest ran as a second attempt, on the same card


def test_a_card_given_up_sends_its_shard_to_another_of_its_model(fake_gpus: FakeInventory, tmp_path: Path) -> None:
    marker = tmp_path / "stalled"
    inventory = fake_gpus(2, stall={"seq": "256", "marker": str(marker)})
    killer = kill_when_stalled(marker)
    new_plan(tmp_path / "run", KEYS)
    outcome = run_local(tmp_path / "run", placements(inventory, "cuda:0-1"), runner=FAKE, max_restarts=0)
    killer.join()
    assert len(outcome.retired) == 1 and not outcome.crashed[1:]
    summary = merge_run(tmp_path / "run")  # the scenario started over on one card: nothing mixed
    rows = table(tmp_path / "run" / "results.csv")
    assert [key(r) for r in rows] == KEYS and {r["status"] for r in rows} == {"ok"}
    assert summary.superseded >= 1  # the dead card's rows of that shard, the crashed one among them
    survivor = ({"GPU-node-a-0000", "GPU-node-a-0001"} - set(outcome.retired)).pop()
    restarted = [s for s, attempts in summary.shards.items() if attempts != [1]]
    assert len(restarted) == 1
    assert {r["gpu_uuid"] for r in table(tmp_path / "run" / "results.csv") if r["shard"] == restarted[0]} == {survivor}


COORDINATOR = """
import os, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from linbench.fleet.device_spec import select_devices
from linbench.fleet.inventory import read_inventory
from linbench.fleet.local import run_local
from linbench.fleet.placement import plan_placement
choices = select_devices("cuda:0-1", read_inventory(), {{}})
placed = plan_placement(choices, os.sched_getaffinity(0), min_cores=1, oversubscribe=True)
run_local(Path({run!r}), placed, runner={runner!r})
"""


def _started(pid: int) -> str | None:
    """When process ``pid`` started (/proc/PID/stat's starttime), or None once it has ended: a
    zombie, which its new parent has not reaped yet, runs no more."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, *fields = stat[stat.rindex(")") + 2 :].split()
    return None if state in ("Z", "X") else fields[18]


def test_a_killed_coordinator_resumes_without_losing_or_repeating_a_row(
    fake_gpus: FakeInventory, tmp_path: Path
) -> None:
    marker = tmp_path / "stalled"
    inventory = fake_gpus(2, stall={"seq": "256", "marker": str(marker)})
    run = tmp_path / "run"
    new_plan(run, KEYS)
    script = COORDINATOR.format(tests=str(Path(__file__).parent), run=str(run), runner=FAKE)
    coordinator = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + WAIT_S
    while not marker.exists() or not marker.read_text().endswith("\n"):
        assert time.monotonic() < deadline and coordinator.poll() is None, coordinator.returncode
        time.sleep(0.05)
    # Every agent, the stalled one and the other (which may be anywhere in its shards), by pid
    # and start time: a pid can be reused once its process is gone.
    agents = {pid: _started(pid) for pid in own_tree(coordinator.pid) - {coordinator.pid}}
    assert len(agents) == 2 and int(marker.read_text()) in agents and None not in agents.values()
    coordinator.send_signal(signal.SIGKILL)
    coordinator.wait(timeout=WAIT_S)
    # The agents die with their coordinator. Until each has, one could still be finishing a
    # write into the run folder that the resume reads.
    while any(_started(pid) == started for pid, started in agents.items()):
        assert time.monotonic() < deadline, "an agent outlived its coordinator"
        time.sleep(0.05)
    outcome = run_local(run, placements(inventory, "cuda:0-1"), runner=FAKE)  # --resume
    assert outcome.deaths == [] and outcome.crashed == []
    merge_run(run)
    rows = table(run / "results.csv")
    assert [key(r) for r in rows] == KEYS and {r["status"] for r in rows} == {"ok"}
    # Across every attempt folder, each point once. An attempt the kill caught before its first
    # row holds no results.csv (claimed, never written: the merge ignores it).
    written = [folder / "results.csv" for folder in (run / "shards").glob("*/attempt-*")]
    per_attempt = [key(r) for path in written if path.exists() for r in table(path)]
    assert sorted(per_attempt) == sorted(KEYS)


def test_agents_that_refuse_to_start_leave_the_run_resumable(fake_gpus: FakeInventory, tmp_path: Path) -> None:
    (placed,) = placements(fake_gpus(1), "cuda:0")
    fake_gpus(1, host="node-b")  # the GPU placed is gone by the time its agent starts
    new_plan(tmp_path / "run", KEYS)
    outcome = run_local(tmp_path / "run", [placed], runner=FAKE)
    assert outcome.errors == [
        "GPU-node-a-0000: the agent for GPU-node-a-0000 sees 0 GPUs (none); it must see exactly that one"
    ]
    assert sorted(outcome.unrun) == ["s000", "s001", "s002", "s003"]
    assert not (tmp_path / "run" / "shards").exists()
