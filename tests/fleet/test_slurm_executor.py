"""The Slurm executor (linbench/fleet/slurm.py) started for real: submitit job arrays on a
real single-node Slurm with 4 fake GPUs (scripts/slurm_local.sh), one agent a task or the
whole node per task; an agent killed mid-point is a crashed row and its task goes on; a
task killed whole (as a lost node ends it) is reported and resumed. CPU only: the GPUs are character devices that
compute nothing and the rows come from the test-only fake runner. Skipped where Slurm or
the slurm extra cannot be had (`pip install 'linbench[slurm]'`, `scripts/slurm_local.sh
install`)."""

from __future__ import annotations

import csv
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest
from fake_runner import FAKE
from fleet_attempts import new_plan
from fleet_helpers import FakeInventory, on_stall, sweep_keys

from linbench.fleet import slurm as slurm_executor
from linbench.fleet.errors import MergeError
from linbench.fleet.merge import merge_run
from linbench.fleet.plan import read_fleet_plan
from linbench.fleet.slurm import LOST, SlurmOptions, run_slurm
from linbench.results.schema import KEY_COLUMNS

pytest.importorskip("submitit")
pytestmark = [pytest.mark.slurm, pytest.mark.extended]
KEYS = sweep_keys()  # 4 scenarios (shards) of 6 points
FAKE_UUIDS = {f"GPU-node-a-{i:04d}" for i in range(4)}
ONE_GPU_A_TASK = SlurmOptions(cpus_per_gpu=1, runner=FAKE)


@pytest.fixture
def slurm(slurm_conf: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test Slurm for this test and the tasks it submits (which import linbench as it does)."""
    monkeypatch.setenv("SLURM_CONF", slurm_conf)
    # The tasks write their results on this machine, not through a shared filesystem that could
    # hold one back: a lost task's result is waited for 2 s rather than the default 10 s.
    monkeypatch.setattr(slurm_executor, "RESULT_GRACE_S", 2.0)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(sys.path))
    return slurm_conf


def rows(run: Path) -> list[dict[str, str]]:
    with (run / "results.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def keys(table: list[dict[str, str]]) -> list[tuple[str, ...]]:
    return [tuple(r[c] for c in KEY_COLUMNS) for r in table]


def test_a_job_array_runs_each_shard_on_the_one_gpu_and_core_its_task_was_given(
    slurm: str, fake_gpus: FakeInventory, tmp_path: Path
) -> None:
    fake_gpus(4)
    run = tmp_path / "run"
    new_plan(run, KEYS)
    outcome = run_slurm(run, read_fleet_plan(run), ONE_GPU_A_TASK)
    assert outcome.failed == [] and len(outcome.jobs) == 4  # a task per shard
    merge_run(run)
    table = rows(run)
    assert keys(table) == KEYS and {r["status"] for r in table} == {"ok"}
    for shard in {r["shard"] for r in table}:  # each scenario on one card, one core
        mine = [r for r in table if r["shard"] == shard]
        assert len({r["gpu_uuid"] for r in mine}) == 1 and mine[0]["gpu_uuid"] in FAKE_UUIDS
        assert {r["cpu_affinity"] for r in mine} <= {str(c) for c in os.sched_getaffinity(0)}
    assert (run / "slurm").is_dir()  # submitit's scripts and logs stay with the run


def test_node_exclusive_tasks_run_the_local_executor_on_every_gpu_of_the_node(
    slurm: str, fake_gpus: FakeInventory, tmp_path: Path
) -> None:
    fake_gpus(4)
    run = tmp_path / "run"
    new_plan(run, KEYS)
    options = SlurmOptions(node_exclusive=True, oversubscribe=True, runner=FAKE)
    outcome = run_slurm(run, read_fleet_plan(run), options)
    assert outcome.failed == [] and len(outcome.jobs) == 1  # one node, one task
    merge_run(run)
    table = rows(run)
    assert keys(table) == KEYS and {r["status"] for r in table} == {"ok"}
    assert {r["gpu_uuid"] for r in table} == FAKE_UUIDS  # four agents, a shard each


def test_an_agent_killed_mid_point_is_a_crashed_row_and_its_task_goes_on(
    slurm: str, fake_gpus: FakeInventory, tmp_path: Path
) -> None:
    marker = tmp_path / "stalled"
    fake_gpus(4, stall={"seq": "256", "marker": str(marker)})
    run = tmp_path / "run"
    new_plan(run, KEYS)
    killer = on_stall(marker, lambda pid: os.kill(pid, signal.SIGKILL))
    outcome = run_slurm(run, read_fleet_plan(run), ONE_GPU_A_TASK)
    killer.join()
    assert outcome.failed == []
    summary = merge_run(run)
    table = rows(run)
    assert keys(table) == KEYS and Counter(r["status"] for r in table) == {"ok": 23, "crashed": 1}
    (crashed,) = [r for r in table if r["status"] == "crashed"]
    assert f"(pid {marker.read_text().strip()}) died (signal 9) while this point ran" in crashed["error"]
    assert summary.shards[crashed["shard"]] == [1, 2]  # the rest by a new agent, in the same task
    assert {r["gpu_uuid"] for r in table if r["shard"] == crashed["shard"]} == {crashed["gpu_uuid"]}


def _kill_task_of(pid: int) -> None:
    """``kill -9`` the Slurm task's process that watches the agent ``pid`` (its parent); the
    agent dies with it. Nothing is left to write the task's result, as when its node is lost."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    os.kill(int(stat[stat.rindex(")") + 2 :].split()[1]), signal.SIGKILL)


def test_a_task_killed_whole_is_reported_and_resume_runs_what_it_left(
    slurm: str, fake_gpus: FakeInventory, tmp_path: Path
) -> None:
    marker = tmp_path / "stalled"
    fake_gpus(4, stall={"seq": "256", "marker": str(marker)})
    run = tmp_path / "run"
    new_plan(run, KEYS)
    killer = on_stall(marker, _kill_task_of)
    outcome = run_slurm(run, read_fleet_plan(run), ONE_GPU_A_TASK)
    killer.join()
    assert len(outcome.failed) == 1 and LOST in outcome.failed[0][1]  # reported, with its shard
    (shard,) = outcome.failed[0][0]
    with pytest.raises(MergeError, match=rf"have no row yet \(shards {shard}\)"):
        merge_run(run)  # its points are missing, not dropped
    again = run_slurm(run, read_fleet_plan(run), ONE_GPU_A_TASK)  # what --resume does
    assert again.failed == [] and len(again.jobs) == 1  # only the shard with points missing
    merge_run(run)
    table = rows(run)
    assert keys(table) == KEYS and {r["status"] for r in table} == {"ok"}  # the point cut off ran again
