"""``--executor slurm``: the shards of a fleet run as a Slurm job array, through submitit.

Two modes (docs/scale-out.md):

* **one GPU a task** (the default): an array task per shard with missing points, each asking
  Slurm for one GPU and ``cpus_per_gpu`` cores; the task runs an agent on its shard
  (``python -m linbench.fleet.agent part --shards ID``) on the GPU and cores Slurm gave it.
  Other users' jobs may share the node: its CPUs, memory bandwidth and power.
* **node-exclusive** (``--node-exclusive``): an array task per node, each holding its whole
  node (``--exclusive``), which runs the local executor (one agent per GPU, pinned to cores
  of its own; ``python -m linbench.fleet.node``) on its part of the shards. Slower to queue,
  but nothing else runs beside the agents: the mode for gate and publication runs.

Each task watches its agent (linbench/fleet/watch.py): an agent dead mid-point leaves a
crashed row and a new agent goes on, on the same GPU. The coordinator (this process) submits,
waits, and reports each failed task with its shards, a task lost whole (cancelled, past its
time limit, its node gone) among them; their points stay missing (the merge says so) and
``--resume`` submits them again.
The run folder must be on a filesystem every node shares. submitit is an optional extra:
without it, ``--executor slurm`` is a one-line error naming the install command.
"""

from __future__ import annotations

import getpass
import logging
import math
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linbench.fleet.crashed import died
from linbench.fleet.errors import FleetError
from linbench.fleet.plan import FleetPlan
from linbench.fleet.progress import pending
from linbench.fleet.shards import Shard, longest_first, partition
from linbench.fleet.watch import agent_part_command, run_watched

INSTALL = "pip install 'linbench[slurm]'"
SUBMITIT_DIR = "slurm"  # under the run folder: submitit's scripts, logs and pickles
# A task's time limit: the estimate of its shards times this, plus the set-up, unless given.
TIME_MARGIN = 3.0
SETUP_MIN = 10
# How often the coordinator asks Slurm about its tasks: first after FIRST_POLL_S, then twice as
# long each time up to POLL_S, so a short sweep ends within a second of its last task and a
# long one asks squeue every few seconds, not many times a second.
FIRST_POLL_S = 0.5
POLL_S = 5.0
# How long a task gone from squeue may take to show its result file (written on its node, read
# here through a shared filesystem) before it counts as lost.
RESULT_GRACE_S = 10.0
LOST = "left Slurm's queue without a result: cancelled, past its time limit, or its node lost"


@dataclass(frozen=True)
class SlurmOptions:
    partition: str | None = None
    time_min: int | None = None  # None: from the plan's estimate
    cpus_per_gpu: int = 2
    max_gpus: int | None = None  # how many tasks at once (the array's parallelism)
    node_exclusive: bool = False
    nodes: int = 1  # node-exclusive: how many nodes (tasks) share the shards
    extra: Mapping[str, str] = field(default_factory=dict)  # more sbatch options (submitit's names)
    oversubscribe: bool = False  # node-exclusive: let the node's agents share cores
    runner: str = "linbench"

    def agent_args(self) -> list[str]:
        """What each task passes on to its agent (or its node's local executor)."""
        return ["--runner", self.runner] + (["--oversubscribe"] if self.node_exclusive and self.oversubscribe else [])


@dataclass
class SlurmOutcome:
    """The tasks that failed: (their shards, one line on why), and the job ids submitted."""

    failed: list[tuple[list[str], str]] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)


def load_submitit() -> Any:
    """The submitit module; FleetError naming the install command when it is missing."""
    try:
        import submitit
    except ImportError:
        raise FleetError(f"--executor slurm needs submitit: {INSTALL}") from None
    return submitit


def run_slurm(run_dir: Path, plan: FleetPlan, options: SlurmOptions) -> SlurmOutcome:
    """Submit the shards of ``plan`` with missing points in ``run_dir`` and wait for them."""
    submitit = load_submitit()
    # submitit warns at every poll where sacct cannot answer (accounting off): wait_for asks
    # squeue instead, and those warnings would bury the run's own output.
    logging.getLogger("submitit").setLevel(logging.ERROR)
    todo = [shard for shard in longest_first(plan.shards) if _has_pending(run_dir, shard)]
    outcome = SlurmOutcome()
    if not todo:
        return outcome
    groups = [[s] for s in todo] if not options.node_exclusive else _node_groups(todo, options.nodes)
    executor = submitit.AutoExecutor(folder=run_dir / SUBMITIT_DIR, cluster="slurm")
    executor.update_parameters(**_parameters(options, groups))
    task = run_node_task if options.node_exclusive else run_shards_task
    ids = [",".join(s.id for s in group) for group in groups]
    jobs = executor.map_array(task, [str(run_dir)] * len(ids), ids, [options.agent_args()] * len(ids))
    outcome.jobs = [str(job.job_id) for job in jobs]
    wait_for(jobs, ids, outcome)
    return outcome


def wait_for(jobs: Sequence[Any], ids: Sequence[str], outcome: SlurmOutcome, poll_s: float = FIRST_POLL_S) -> None:
    """Wait for every task; each that fails goes into ``outcome`` with its shards.

    A task is over once it has written its result file, or once ``squeue`` lists it no more.
    submitit alone would ask ``sacct`` about a task without a result, and wait forever for
    one that ended without writing it (cancelled, past its time limit, its node lost) on a
    cluster whose ``sacct`` says nothing (accounting off). squeue is asked first: a task
    gone from it has written whatever result it will write. Where squeue cannot answer,
    submitit's own check (sacct) decides."""
    left = dict(zip(ids, jobs, strict=True))
    while left:
        queued = _queued()
        for group, job in list(left.items()):
            gone = queued is not None and str(job.job_id) not in queued
            if gone or job.paths.result_pickle.exists() or (queued is None and job.done()):
                del left[group]
                why = _failure(job)
                if why is not None:
                    outcome.failed.append((group.split(","), why))
        if left:
            time.sleep(poll_s)
            poll_s = min(2 * poll_s, POLL_S)


def _failure(job: Any) -> str | None:
    """None for a task that succeeded; else one line on why not (the task's own words, or
    that it left no result). submitit's own wait would ask sacct, so it is left to the end."""
    deadline = time.monotonic() + RESULT_GRACE_S
    while not job.paths.result_pickle.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    if not job.paths.result_pickle.exists():
        return f"task {job.job_id} {LOST}"
    try:
        job.result()
    except Exception as exc:  # FailedJobError, UncompletedJobError
        return _one_line(exc)
    return None


def _queued() -> set[str] | None:
    """This user's jobs and array tasks Slurm lists now (``JOB`` or ``JOB_TASK``); None when
    squeue cannot say (then only the tasks' results and sacct are waited for)."""
    try:
        done = subprocess.run(
            ["squeue", "-h", "-r", "-o", "%i", "-u", getpass.getuser()], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return set(done.stdout.split()) if done.returncode == 0 else None


def _has_pending(run_dir: Path, shard: Shard) -> bool:
    """Whether the shard lacks a row on any card (a card that finished it needs nothing)."""
    keys, _restart = pending(run_dir, shard, gpu_uuid="")
    return bool(keys)


def _node_groups(shards: Sequence[Shard], nodes: int) -> list[list[Shard]]:
    return [part for part in partition(shards, max(1, nodes)) if part]


def _parameters(options: SlurmOptions, groups: Sequence[Sequence[Shard]]) -> dict[str, Any]:
    """submitit's parameters for the array: one GPU and its cores a task, or a whole node."""
    longest = max(sum(s.cost for s in group) for group in groups)
    minutes = options.time_min or SETUP_MIN + math.ceil(longest * TIME_MARGIN / 60)
    params: dict[str, Any] = {"timeout_min": minutes, "slurm_array_parallelism": options.max_gpus or len(groups)}
    if options.node_exclusive:
        params |= {"nodes": 1, "tasks_per_node": 1, "slurm_exclusive": True}
    else:
        params |= {"slurm_gres": "gpu:1", "cpus_per_task": options.cpus_per_gpu, "tasks_per_node": 1}
    if options.partition:
        params["slurm_partition"] = options.partition
    return params | {f"slurm_{k}" if not k.startswith("slurm_") else k: v for k, v in options.extra.items()}


def run_shards_task(run_dir: str, ids: str, args: list[str]) -> int:
    """An array task: an agent on the one GPU (and cores) Slurm gave this task, on its shards,
    watched (linbench/fleet/watch.py: a death mid-point is a crashed row and a new agent).
    A fresh interpreter, so the agent starts with nothing imported; RuntimeError (the task
    fails) when it does not finish."""
    watched = run_watched(agent_part_command(sys.executable, run_dir, ids, args), _task_env())
    return _check(watched.status, ids)


def run_node_task(run_dir: str, ids: str, args: list[str]) -> int:
    """A node-exclusive array task: the local executor on every GPU Slurm gave the node."""
    command = [sys.executable, "-m", "linbench.fleet.node", "--run-dir", run_dir, "--shards", ids]
    return _check(subprocess.run([*command, *args], env=_task_env()).returncode, ids)


def _task_env() -> dict[str, str]:
    """The agent's environment: the task's, with GPU indices in PCI order."""
    # Slurm numbers a task's GPUs in gres.conf's order, nvidia-smi's (PCI) order on a GPU node.
    return dict(os.environ) | {"CUDA_DEVICE_ORDER": os.environ.get("CUDA_DEVICE_ORDER", "PCI_BUS_ID")}


def _check(status: int, ids: str) -> int:
    if status != 0:
        raise RuntimeError(f"the agent for shards {ids} ended with {died(status)}")
    return status


def _one_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    useful = [line for line in lines if "ended with" in line or "Error" in line]
    return (useful or lines or [type(exc).__name__])[-1][:300]
