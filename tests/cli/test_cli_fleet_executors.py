"""``linbench run --executor slurm`` and ``--executor ray`` as a user runs them: a real
one-node Slurm with 4 fake GPUs (scripts/slurm_local.sh), a local Ray with fake GPUs. CPU
only: a fake inventory (LINBENCH_FAKE_DEVICES, test-only) stands for the GPUs, and every
point is measured on the CPU by linbench's own runner in an agent process. Skipped where
Slurm, submitit or ray cannot be had."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import linbench_argv

FAKE = "LINBENCH_FAKE_DEVICES"
# Two scenarios (heads 1, 2) of one impl at two lengths: four points.
SWEEP = [
    *("--variant", "cosine:chunked", "--no-against", "--seq", "32..64", "--heads", "1,2", "--dim", "8"),
    *("--device", "cpu", "--budget-s", "0.02", "--warmup-s", "0", "--min-reps", "2"),
]
UUIDS = {f"GPU-fake-{i}" for i in range(4)}
WAIT_S = 600  # a bound on waiting for the command, never a measured duration


def fake_env(tmp_path: Path, **more: str) -> dict[str, str]:
    """This process's environment with 4 fake GPUs switched on, and linbench importable as here."""
    devices = [
        {"uuid": f"GPU-fake-{i}", "pci_bus_id": f"0000:{i + 1:02x}:00.0", "name": "Fake H100", "numa_node": 0}
        for i in range(4)
    ]
    path = tmp_path / "fake-gpus.json"
    path.write_text(json.dumps({"host": "node-a", "devices": devices}))
    return os.environ | {FAKE: str(path), "PYTHONPATH": os.pathsep.join(sys.path)} | more


def run_rows(out: Path) -> list[dict[str, str]]:
    (run,) = [p for p in out.iterdir() if (p / "fleet.json").is_file()]
    with (run / "results.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def check_rows(out: Path) -> None:
    """Four measured rows, each scenario on one fake GPU."""
    table = run_rows(out)
    assert len(table) == 4 and {r["status"] for r in table} == {"ok"}
    assert all(float(r["time_ms"]) > 0 and r["host"] == "node-a" and r["attempt"] == "1" for r in table)
    for heads in ("1", "2"):
        assert len({r["gpu_uuid"] for r in table if r["heads"] == heads}) == 1
    assert {r["gpu_uuid"] for r in table} <= UUIDS


@pytest.mark.slurm
@pytest.mark.extended
def test_executor_slurm_runs_the_sweep_as_a_job_array(slurm_conf: str, tmp_path: Path) -> None:
    pytest.importorskip("submitit")
    argv = linbench_argv("run", *SWEEP, "--executor", "slurm", "--cpus-per-gpu", "1", "--out", tmp_path / "out")
    env = fake_env(tmp_path, SLURM_CONF=slurm_conf)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "running 4 points in 2 shards on a Slurm job array" in done.stdout and "4 ok" in done.stdout
    check_rows(tmp_path / "out")


@pytest.mark.ray
@pytest.mark.extended
def test_executor_ray_runs_the_sweep_on_an_actor_per_gpu(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    argv = linbench_argv("run", *SWEEP, "--executor", "ray", "--oversubscribe", "--out", tmp_path / "out")
    done = subprocess.run(argv, env=fake_env(tmp_path), capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "4 ok" in done.stdout
    check_rows(tmp_path / "out")
