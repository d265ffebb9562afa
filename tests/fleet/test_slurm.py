"""A real single-node Slurm with fake GPUs (scripts/slurm_local.sh): job arrays put agents on
distinct GPUs and cores, their shard folders merge, and a failed task is reported, not lost.
CPU only (the GPUs are character devices that compute nothing); skipped where Slurm cannot
run here (not root, or the Debian packages missing: `scripts/slurm_local.sh install`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_runner import FAKE
from fleet_helpers import FakeInventory, sweep_keys

from linbench.fleet.errors import MergeError
from linbench.fleet.folders import write_plan
from linbench.fleet.merge import merge_run
from linbench.fleet.shards import make_shards, plan_hash

pytestmark = pytest.mark.slurm
WAIT_S = 300


def sbatch(conf: str, script: Path, tasks: int, cwd: Path) -> int:
    """Submit a job array of ``tasks`` one-GPU, one-core tasks and wait for it: its exit status
    (the highest of its tasks'). The tasks get this process's environment as it is now (the
    fake inventory included), as sbatch passes it on."""
    env = os.environ | {"SLURM_CONF": conf, "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = ["sbatch", "--wait", f"--array=0-{tasks - 1}", "--gres=gpu:1", "--cpus-per-task=1", "-o", "%a.out"]
    done = subprocess.run([*argv, str(script)], env=env, cwd=cwd, capture_output=True, text=True, timeout=WAIT_S)
    return done.returncode


@pytest.mark.extended
def test_concurrent_tasks_get_distinct_gpus_and_cores(slurm_conf: str, tmp_path: Path) -> None:
    # Each task waits for the other, so both are running at once when they report.
    script = tmp_path / "where.sh"
    script.write_text(
        "#!/bin/bash\n"
        'echo "$CUDA_VISIBLE_DEVICES $SLURM_JOB_GPUS $(taskset -cp $$ | cut -d: -f2)" > "gpu-$SLURM_ARRAY_TASK_ID"\n'
        f"for _ in $(seq 1 {WAIT_S * 10}); do [ -e gpu-0 ] && [ -e gpu-1 ] && exit 0; sleep 0.1; done; exit 1\n"
    )
    assert sbatch(slurm_conf, script, 2, tmp_path) == 0
    seen = [(tmp_path / f"gpu-{i}").read_text().split() for i in range(2)]
    assert seen[0][0] != seen[1][0]  # CUDA_VISIBLE_DEVICES: one GPU each
    assert all(s[0] == s[1] for s in seen)  # the same as SLURM_JOB_GPUS
    assert seen[0][2] != seen[1][2]  # task/affinity: one core each


def test_a_job_array_of_agents_runs_every_shard_and_a_failed_task_is_reported(
    slurm_conf: str, fake_gpus: FakeInventory, tmp_path: Path
) -> None:
    fake_gpus(4)
    run = tmp_path / "run"
    shards = make_shards(sweep_keys())
    write_plan(run, shards, plan_hash(shards), {})
    script = tmp_path / "agent.sh"
    script.write_text(
        "#!/bin/bash\n"
        f'if [ "$SLURM_ARRAY_TASK_ID" = 3 ] && [ ! -e {tmp_path}/again ]; then exit 3; fi\n'
        f"exec {sys.executable} -m linbench.fleet.agent part --runner {FAKE} --run-dir {run} "
        "--part $SLURM_ARRAY_TASK_ID/4\n"
    )
    assert sbatch(slurm_conf, script, 4, tmp_path) == 3  # the failed task's status comes back
    with pytest.raises(MergeError, match=r"6 of 24 points have no row yet \(shards s003\)"):
        merge_run(run)  # and its points are missing, not silently dropped
    (tmp_path / "again").touch()
    assert sbatch(slurm_conf, script, 4, tmp_path) == 0  # resubmitted: the done parts run nothing
    summary = merge_run(run)
    assert summary.rows == 24 and summary.superseded == 0
    assert all(attempts == [1] for attempts in summary.shards.values())


def where_and_maybe_fail(task: int) -> tuple[str, str]:
    """A submitit job: the GPU and cores Slurm gave it (task 3 fails on purpose)."""
    if task == 3:
        raise RuntimeError("task 3 fails on purpose")
    return os.environ.get("CUDA_VISIBLE_DEVICES", ""), os.environ.get("SLURM_JOB_GPUS", "")


def test_submitit_arrays_run_on_slurm_and_report_a_failed_task(
    slurm_conf: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    submitit = pytest.importorskip("submitit")
    monkeypatch.setenv("SLURM_CONF", slurm_conf)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(sys.path))  # the job imports this module
    executor = submitit.AutoExecutor(folder=tmp_path / "submitit", cluster="slurm")
    executor.update_parameters(slurm_gres="gpu:1", cpus_per_task=1, timeout_min=5, slurm_array_parallelism=4)
    jobs = executor.map_array(where_and_maybe_fail, range(4))
    for job in jobs[:3]:
        cvd, gpus = job.result()
        assert cvd in {"0", "1", "2", "3"} and cvd == gpus
    with pytest.raises(submitit.core.utils.FailedJobError, match="fails on purpose"):
        jobs[3].result()
