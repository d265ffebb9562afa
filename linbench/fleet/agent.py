"""The agent: one process bound to one physical GPU, on its own cores, running shards serially.

Started with its GPU already chosen in its environment (linbench/fleet/launch.py), it first
pins itself to its cores (before torch is imported, so its memory lands on the right NUMA
node), checks that it sees exactly the GPU it was given, and then runs each shard attempt it
is handed: a run folder of its own, the runner's rows in it (linbench/fleet/seam.py), and a
provenance row per point. Before each point it checks the card for other processes.

Two ways to run it (``python -m linbench.fleet.agent``):

* ``serve SPEC_JSON``: under the local coordinator; work arrives as JSON lines on standard
  input, events leave as JSON lines on standard output (anything else the process prints
  goes to standard error, so it can never corrupt them);
* ``part --run-dir DIR --part K/N``: under any launcher (a Slurm array task, a Kubernetes
  Indexed Job, GNU parallel) that has already given it one GPU: it runs the shards of part
  K of N of the plan in DIR/fleet.json, continuing what earlier attempts left.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import sys
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from linbench.fleet.agent_checks import (
    busy_reason,
    check_sees_only,
    nvml_processes,
    own_tree,
    seen_by_fake,
    seen_by_torch,
    wait_until_free,
)
from linbench.fleet.cpulist import format_cpulist
from linbench.fleet.errors import FleetError
from linbench.fleet.folders import append_provenance, claim_attempt, read_plan, start_provenance
from linbench.fleet.inventory import Inventory, read_fake_inventory, read_inventory
from linbench.fleet.launch import AgentSpec
from linbench.fleet.progress import pending
from linbench.fleet.seam import ShardWork, runner
from linbench.fleet.shards import PointKey, Shard, longest_first, select_part
from linbench.results.schema import KEY_COLUMNS
from linbench.results.store import RunStore

PR_SET_PDEATHSIG = 1


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class Events:
    """JSON lines to the coordinator, on a stream nothing else writes to."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def send(self, event: str, **fields: Any) -> None:
        self.stream.write(json.dumps({"event": event, **fields}) + "\n")
        self.stream.flush()


def pin(cores: tuple[int, ...]) -> None:
    """Run on ``cores`` only (this process and everything it starts)."""
    if cores:
        try:
            os.sched_setaffinity(0, cores)
        except OSError as exc:
            raise FleetError(f"cannot pin the agent to cores {format_cpulist(cores)}: {exc.strerror}") from None


def die_with(parent_pid: int | None) -> None:
    """Be killed when the coordinator dies (Linux), rather than measure on unattended."""
    if parent_pid is None:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the closed standard input still stops the agent between shards
    if os.getppid() != parent_pid:
        sys.exit(0)  # the coordinator is gone already


def check_device(spec: AgentSpec, inventory: Inventory) -> None:
    """FleetError unless this process sees exactly the GPU of ``spec``."""
    seen = seen_by_fake(inventory, os.environ) if inventory.fake else seen_by_torch()
    check_sees_only(spec.visible_id, seen, also=[spec.gpu_uuid])


class AgentHooks:
    """The hooks the runner calls around each point: the foreign-process check, provenance."""

    def __init__(self, spec: AgentSpec, inventory: Inventory, shard: str, attempt: int, folder: Path, events: Events):
        self.spec, self.inventory, self.events = spec, inventory, events
        self.shard, self.attempt, self.folder = shard, attempt, folder
        self._started: dict[PointKey, tuple[str, int]] = {}

    def _on_gpu(self) -> list[int]:
        if self.inventory.fake:  # read again: a test may have put a process on the card meanwhile
            fresh = read_fake_inventory(Path(os.environ["LINBENCH_FAKE_DEVICES"]))
            return list(fresh.fake_processes.get(self.spec.gpu_uuid, ()))
        return nvml_processes(self.spec.gpu_uuid)

    def before_point(self, key: PointKey) -> str | None:
        self.events.send("start", shard=self.shard, attempt=self.attempt, key=list(key))
        foreign = wait_until_free(self._on_gpu, own_tree, self.spec.busy_wait_s)
        self._started[key] = (now(), len(foreign))
        return busy_reason(self.spec.gpu_uuid, foreign) if foreign else None

    def after_row(self, key: PointKey, row: Any) -> None:
        started, foreign = self._started.pop(key, ("", 0))
        record = dict(zip(KEY_COLUMNS, key, strict=True)) | provenance(self.spec, self.shard, self.attempt)
        record |= {"started_at": started, "finished_at": now(), "foreign_gpu_procs": foreign}
        append_provenance(self.folder, record)
        self.events.send("row", shard=self.shard, attempt=self.attempt, key=list(key), status=row.get("status"))


def provenance(spec: AgentSpec, shard: str, attempt: int) -> dict[str, Any]:
    """The provenance columns every row of this agent's attempt shares."""
    return {
        "host": spec.host,
        "gpu_uuid": spec.gpu_uuid,
        "mig_uuid": spec.mig_uuid,
        "gpu_pci": spec.gpu_pci,
        "gpu_index": spec.gpu_index,
        "gpu_name": spec.gpu_name,
        "numa_node": spec.numa_node,
        "cpu_affinity": format_cpulist(os.sched_getaffinity(0)),
        "numa_local": spec.numa_local,
        "shared_cores": spec.shared_cores,
        "shard": shard,
        "attempt": attempt,
        "agent_pid": os.getpid(),
    }


@dataclass(frozen=True)
class AttemptContext:
    """What every attempt of one agent shares."""

    spec: AgentSpec
    inventory: Inventory
    run_dir: Path
    plan_hash: str
    request: dict[str, Any]
    events: Events


def run_attempt(ctx: AttemptContext, shard: Shard, keys: tuple[PointKey, ...]) -> None:
    """One attempt of ``shard``: a new folder, the runner's rows in it, marked complete."""
    number, folder = claim_attempt(ctx.run_dir, shard.id)
    store = RunStore.create_at(folder)
    start_provenance(folder)
    fleet = provenance(ctx.spec, shard.id, number) | {
        "plan_hash": ctx.plan_hash,
        "keys": [list(k) for k in keys],
        "inventory": ctx.inventory.source,
        "runner": ctx.spec.runner,
    }
    store.write_meta({"status": "running", "started_at": now(), "fleet": fleet})
    ctx.events.send("attempt", shard=shard.id, attempt=number, path=str(folder))
    hooks = AgentHooks(ctx.spec, ctx.inventory, shard.id, number, folder, ctx.events)
    work = ShardWork(shard.id, keys, ctx.request, ctx.spec.gpu_name)
    runner(ctx.spec.runner)(work, store, hooks)
    store.update_meta({"status": "complete", "finished_at": now()})
    ctx.events.send("done", shard=shard.id, attempt=number)


def serve(spec: AgentSpec, events: Events, commands: IO[str]) -> int:
    """Run the work the coordinator sends until it says stop or goes away."""
    inventory = read_inventory()
    check_device(spec, inventory)
    spec = replace(spec, host=spec.host or inventory.host)
    events.send("ready", pid=os.getpid(), cores=sorted(os.sched_getaffinity(0)), uuid=spec.visible_id)
    for line in commands:
        message = json.loads(line)
        if message.get("stop"):
            break
        shard = Shard.from_json(message["shard"])
        keys = tuple(tuple(str(v) for v in key) for key in message["keys"])
        ctx = AttemptContext(
            spec, inventory, Path(message["run_dir"]), message["plan_hash"], message.get("request", {}), events
        )
        run_attempt(ctx, shard, keys)
    return 0


def run_part(run_dir: Path, part: str, runner_name: str, busy_wait_s: float, events: Events) -> int:
    """Run part K/N of the plan in ``run_dir`` on the one GPU this process was given."""
    inventory = read_inventory()
    seen = seen_by_fake(inventory, os.environ) if inventory.fake else seen_by_torch()
    if len(seen) != 1:
        raise FleetError(f"a --shard agent needs exactly one visible GPU; it sees {len(seen)} ({', '.join(seen)})")
    device = inventory.by_uuid(seen[0]) or next(
        (d for d in inventory.devices for s in d.mig_slices if s.uuid == seen[0]), None
    )
    if device is None:
        raise FleetError(f"the visible GPU {seen[0]} is not in this host's inventory")
    cores = tuple(sorted(os.sched_getaffinity(0)))  # what the launcher (Slurm, Kubernetes) bound it to
    spec = AgentSpec(seen[0], device.uuid, device.index, device.pci_bus_id, device.name, device.numa_node, cores)
    spec = replace(spec, runner=runner_name, busy_wait_s=busy_wait_s, host=inventory.host)
    shards, plan_hash, settings = read_plan(run_dir)
    ctx = AttemptContext(spec, inventory, run_dir, plan_hash, settings.get("request", {}), events)
    for shard in longest_first(select_part(shards, part)):
        keys, _restart = pending(run_dir, shard, device.uuid)
        if keys:
            run_attempt(ctx, shard, keys)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m linbench.fleet.agent")
    sub = parser.add_subparsers(dest="mode", required=True)
    serve_cmd = sub.add_parser("serve")
    serve_cmd.add_argument("spec")
    part_cmd = sub.add_parser("part")
    part_cmd.add_argument("--run-dir", type=Path, required=True)
    part_cmd.add_argument("--part", required=True)
    part_cmd.add_argument("--runner", default="fake")
    part_cmd.add_argument("--busy-wait-s", type=float, default=0.0)
    args = parser.parse_args(argv)
    # The event stream keeps the real standard output; everything else printed goes to stderr.
    events = Events(os.fdopen(os.dup(1), "w"))
    os.dup2(2, 1)
    try:
        if args.mode == "serve":
            spec = AgentSpec.from_json(args.spec)
            pin(spec.cores)  # first: before torch is imported
            die_with(spec.parent_pid)
            return serve(spec, events, sys.stdin)
        die_with(os.getppid())  # the launcher's task (a Slurm step, a Ray actor): gone, so is the agent
        return run_part(args.run_dir, args.part, args.runner, args.busy_wait_s, events)
    except FleetError as exc:
        events.send("error", message=str(exc))
        print(f"linbench agent: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
