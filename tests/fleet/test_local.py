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

from fleet_helpers import FakeInventory, sweep_keys

from linbench.fleet.agent_checks import own_tree
from linbench.fleet.device_spec import select_devices
from linbench.fleet.inventory import Inventory
from linbench.fleet.local import run_local
from linbench.fleet.merge import merge_run
from linbench.fleet.placement import Placement, plan_placement
from linbench.fleet.shards import make_shards
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

    def watch() -> None:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            text = marker.read_text() if marker.exists() else ""
            if text.endswith("\n"):
                os.kill(int(text), signal.SIGKILL)
                return
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_four_fake_gpus_give_the_rows_of_one(fake_gpus: FakeInventory, tmp_path: Path) -> None:
    inventory = fake_gpus(4)
    shards = make_shards(KEYS)
    one = run_local(tmp_path / "one", shards, placements(inventory, "cuda:0"))
    four = run_local(tmp_path / "four", shards, placements(inventory, "cuda:0-3"))
    assert one.deaths == four.deaths == [] and one.errors == four.errors == []
    merge_run(tmp_path / "one")
    merge_run(tmp_path / "four")
    rows_one, rows_four = table(tmp_path / "one" / "results.csv"), table(tmp_path / "four" / "results.csv")
    assert [key(r) for r in rows_four] == KEYS  # every point once, in plan order
    assert rows_four == rows_one  # keys, statuses, every column
    prov_one, prov_four = table(tmp_path / "one" / "provenance.csv"), table(tmp_path / "four" / "provenance.csv")
    assert [key(r) for r in prov_four] == [key(r) for r in prov_one] == KEYS
    assert {p["gpu_uuid"] for p in prov_one} == {"GPU-node-a-0000"}
    assert {p["gpu_uuid"] for p in prov_four} == {f"GPU-node-a-{i:04d}" for i in range(4)}
    for shard in shards:  # each scenario on one card, with its provenance complete
        mine = [p for p in prov_four if p["shard"] == shard.id]
        assert len(mine) == len(shard.keys) and len({p["gpu_uuid"] for p in mine}) == 1
        assert all(p["host"] == "node-a" and p["started_at"] and p["cpu_affinity"] for p in mine)


def test_an_agent_killed_mid_shard_leaves_a_crashed_row_and_its_shard_goes_on(
    fake_gpus: FakeInventory, tmp_path: Path
) -> None:
    marker = tmp_path / "stalled"
    inventory = fake_gpus(2, stall={"seq": "256", "marker": str(marker)})
    killer = kill_when_stalled(marker)
    outcome = run_local(tmp_path / "run", make_shards(KEYS), placements(inventory, "cuda:0-1"), max_restarts=1)
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
    shard = next(p["shard"] for p in table(tmp_path / "run" / "provenance.csv") if key(p) == key(crashed[0]))
    assert summary.shards[shard] == [1, 2]  # the rest ran as a second attempt, on the same card


def test_a_card_given_up_sends_its_shard_to_another_of_its_model(fake_gpus: FakeInventory, tmp_path: Path) -> None:
    marker = tmp_path / "stalled"
    inventory = fake_gpus(2, stall={"seq": "256", "marker": str(marker)})
    killer = kill_when_stalled(marker)
    outcome = run_local(tmp_path / "run", make_shards(KEYS), placements(inventory, "cuda:0-1"), max_restarts=0)
    killer.join()
    assert len(outcome.retired) == 1 and not outcome.crashed[1:]
    summary = merge_run(tmp_path / "run")  # the scenario started over on one card: nothing mixed
    rows = table(tmp_path / "run" / "results.csv")
    assert [key(r) for r in rows] == KEYS and {r["status"] for r in rows} == {"ok"}
    assert summary.superseded >= 1  # the dead card's rows of that shard, the crashed one among them
    survivor = ({"GPU-node-a-0000", "GPU-node-a-0001"} - set(outcome.retired)).pop()
    restarted = [s for s, attempts in summary.shards.items() if attempts != [1]]
    assert len(restarted) == 1
    assert {p["gpu_uuid"] for p in table(tmp_path / "run" / "provenance.csv") if p["shard"] == restarted[0]} == {
        survivor
    }


COORDINATOR = """
import os, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from fleet_helpers import sweep_keys
from linbench.fleet.agent_checks import own_tree
from linbench.fleet.device_spec import select_devices
from linbench.fleet.inventory import read_inventory
from linbench.fleet.local import run_local
from linbench.fleet.placement import plan_placement
from linbench.fleet.shards import make_shards
choices = select_devices("cuda:0-1", read_inventory(), {{}})
placed = plan_placement(choices, os.sched_getaffinity(0), min_cores=1, oversubscribe=True)
run_local(Path({run!r}), make_shards(sweep_keys()), placed)
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
    script = COORDINATOR.format(tests=str(Path(__file__).parent), run=str(run))
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
    outcome = run_local(run, make_shards(KEYS), placements(inventory, "cuda:0-1"))  # --resume
    assert outcome.deaths == [] and outcome.crashed == []
    merge_run(run)
    rows = table(run / "results.csv")
    assert [key(r) for r in rows] == KEYS and {r["status"] for r in rows} == {"ok"}
    per_attempt = [key(r) for folder in (run / "shards").glob("*/attempt-*") for r in table(folder / "results.csv")]
    assert sorted(per_attempt) == sorted(KEYS)  # across every attempt folder: each point once


def test_agents_that_refuse_to_start_leave_the_run_resumable(fake_gpus: FakeInventory, tmp_path: Path) -> None:
    (placed,) = placements(fake_gpus(1), "cuda:0")
    fake_gpus(1, host="node-b")  # the GPU placed is gone by the time its agent starts
    outcome = run_local(tmp_path / "run", make_shards(KEYS), [placed])
    assert outcome.errors == [
        "GPU-node-a-0000: the agent for GPU-node-a-0000 sees 0 GPUs (none); it must see exactly that one"
    ]
    assert sorted(outcome.unrun) == ["s000", "s001", "s002", "s003"]
    assert not (tmp_path / "run" / "shards").exists()
