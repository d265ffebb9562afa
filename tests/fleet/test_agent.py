"""The agent as a real process on a fake inventory: its environment and core pinning, its
self-check, the foreign-process check, the where columns of its rows, and the --shard K/N
mode. CPU only: the GPUs are fake and the rows come from the test-only fake runner."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from fake_runner import FAKE
from fleet_helpers import FakeInventory, sweep_keys

from linbench.fleet.device_spec import select_devices
from linbench.fleet.folders import write_plan
from linbench.fleet.launch import AgentSpec, agent_command, agent_env
from linbench.fleet.merge import merge_run
from linbench.fleet.placement import plan_placement
from linbench.fleet.shards import make_shards, plan_hash

KEYS = sweep_keys(dtypes=("fp32",), heads=(4,), seqs=(128, 256))  # one shard of 4 points
CORE = min(os.sched_getaffinity(0))


def spec_for(inventory: Any, index: int = 0, **kw: Any) -> AgentSpec:
    choices = select_devices(f"cuda:{index}", inventory)
    (placement,) = plan_placement(choices, [CORE], cores_per_gpu=1, reserve=0, min_cores=1)
    return AgentSpec.of(placement, **{"runner": FAKE, **kw})


def serve(spec: AgentSpec, messages: list[dict[str, Any]], env: dict[str, str] | None = None) -> tuple[int, list]:
    """Run an agent on ``messages`` (then stop); its exit status and events."""
    proc = subprocess.run(
        agent_command(spec),
        input="".join(json.dumps(m) + "\n" for m in [*messages, {"stop": True}]),
        capture_output=True,
        text=True,
        env=env or agent_env(spec, os.environ),
        timeout=120,
    )
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()]


def work(run_dir: Path) -> dict[str, Any]:
    (shard,) = make_shards(KEYS)
    write_plan(run_dir, [shard], plan_hash([shard]), {})
    keys = [list(k) for k in shard.keys]
    return {"shard": shard.as_json(), "keys": keys, "run_dir": str(run_dir), "plan_hash": plan_hash([shard])}


def test_the_environment_names_the_gpu_before_the_interpreter_starts(fake_gpus: FakeInventory) -> None:
    spec = spec_for(fake_gpus(2), 1)
    env = agent_env(spec, {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "0,1"})
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-node-a-0001"  # by UUID, replacing the user's list
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "1"  # one per core it owns
    assert env["PATH"] == "/bin"
    wide = replace(spec, cores=(0, 1, 2, 3))
    assert agent_env(wide, {})["OMP_NUM_THREADS"] == "4"
    assert agent_env(replace(wide, shared_cores=True), {})["OMP_NUM_THREADS"] == "1"  # agents sharing cores
    assert agent_command(spec)[:4] == [sys.executable, "-m", "linbench.fleet.agent", "serve"]


def test_an_agent_pins_itself_checks_its_gpu_and_runs_a_shard(fake_gpus: FakeInventory, tmp_path: Path) -> None:
    spec = spec_for(fake_gpus(2), 1)
    status, events = serve(spec, [work(tmp_path)])
    assert status == 0
    ready = events[0]
    assert ready["event"] == "ready" and ready["cores"] == [CORE] and ready["uuid"] == "GPU-node-a-0001"
    kinds = [e["event"] for e in events[1:]]
    assert kinds == ["attempt", *["start", "row"] * len(KEYS), "done"]
    folder = tmp_path / "shards" / "s000" / "attempt-1"
    with (folder / "results.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(KEYS)
    for row in rows:
        assert (row["gpu_uuid"], row["gpu_pci"], row["gpu_index"]) == ("GPU-node-a-0001", "0000:02:00.0", "1")
        assert (row["host"], row["cpu_affinity"], row["shard"], row["attempt"]) == ("node-a", str(CORE), "s000", "1")
        assert row["agent_pid"] == str(ready["pid"]) and row["foreign_gpu_procs"] == "0"
        assert row["started_at"] <= row["finished_at"] and row["numa_node"] == "0"
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["fleet"]["gpu_uuid"] == "GPU-node-a-0001"
    assert meta["fleet"]["keys"] == [list(k) for k in KEYS] and meta["fleet"]["runner"] == FAKE


def test_an_agent_that_sees_another_gpu_refuses_to_run(fake_gpus: FakeInventory, tmp_path: Path) -> None:
    spec = spec_for(fake_gpus(2), 0)
    env = agent_env(spec, os.environ) | {"CUDA_VISIBLE_DEVICES": "GPU-node-a-0001"}
    status, events = serve(spec, [work(tmp_path)], env)
    assert status == 2
    assert events == [
        {
            "event": "error",
            "message": "the agent was given GPU-node-a-0000 but sees GPU-node-a-0001; "
            "refusing to measure on another GPU",
        }
    ]
    assert not (tmp_path / "shards").exists()  # nothing ran
    env["CUDA_VISIBLE_DEVICES"] = "GPU-node-a-0000,GPU-node-a-0001"
    status, events = serve(spec, [], env)
    assert status == 2 and "sees 2 GPUs" in events[0]["message"]


def test_a_foreign_process_on_the_card_skips_the_point(fake_gpus: FakeInventory, tmp_path: Path) -> None:
    # The test process itself stands for another user's job on the card: not the agent's child.
    spec = spec_for(fake_gpus(1, processes={"GPU-node-a-0000": [os.getpid()]}))
    status, _ = serve(spec, [work(tmp_path)])
    assert status == 0
    folder = tmp_path / "shards" / "s000" / "attempt-1"
    with (folder / "results.csv").open() as handle:
        results = list(csv.DictReader(handle))
    assert {r["status"] for r in results} == {"skipped"}
    assert results[0]["error"] == f"GPU busy: 1 other process on GPU-node-a-0000 (pid {os.getpid()})"
    assert {r["foreign_gpu_procs"] for r in results} == {"1"}


def test_an_agent_refuses_cores_it_may_not_use(fake_gpus: FakeInventory) -> None:
    spec = AgentSpec(**{**spec_for(fake_gpus(1)).__dict__, "cores": (4096,)})
    status, events = serve(spec, [])
    assert status == 2 and events[0]["message"].startswith("cannot pin the agent to cores 4096")


def test_shard_k_of_n_runs_its_part_on_the_gpu_its_launcher_gave_it(fake_gpus: FakeInventory, tmp_path: Path) -> None:
    parts = 2
    fake_gpus(parts)
    command = [sys.executable, "-m", "linbench.fleet.agent", "part", "--runner", FAKE, "--run-dir", str(tmp_path)]
    command.append("--part")
    keys = sweep_keys()
    shards = make_shards(keys)
    write_plan(tmp_path, shards, plan_hash(shards), {})
    for k in range(parts):
        # As a Slurm task sees it: the GPU as an index, the cores already bound.
        env = os.environ | {"CUDA_VISIBLE_DEVICES": str(k)}
        proc = subprocess.run([*command, f"{k}/{parts}"], env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
    summary = merge_run(tmp_path)
    assert summary.rows == len(keys)
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert sorted(meta["fleet"]["devices"]) == ["GPU-node-a-0000", "GPU-node-a-0001"]
    again = subprocess.run(  # a relaunched task finds its part done and runs nothing
        [*command, f"0/{parts}"],
        env=os.environ | {"CUDA_VISIBLE_DEVICES": "0"},
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0 and again.stdout == ""
