"""The agent: one process bound to one physical GPU, on its own cores, running shards serially.

Started with its GPU already chosen in its environment (linbench/fleet/launch.py), it first
pins itself to its cores (before torch is imported, so its memory lands on the right NUMA
node), checks that it sees exactly the GPU it was given, and then runs each shard attempt it
is handed: a run folder of its own, the runner's rows in it (linbench/fleet/seam.py), each
stamped with where and when it was measured. Before each point it checks the card for other
processes.

Two ways to run it (``python -m linbench.fleet.agent``):

* ``serve SPEC_JSON``: under the local coordinator; work arrives as JSON lines on standard
  input, events leave as JSON lines on standard output (anything else the process prints
  goes to standard error, so it can never corrupt them);
* ``part --run-dir DIR --part K/N`` (or ``--shards s000,s004``): under any launcher (a Slurm
  array task, a Kubernetes Indexed Job, a Ray actor, GNU parallel) that has already given it
  one GPU: it runs the shards of part K of N of the plan in DIR/fleet.json (or the shards
  named), continuing what earlier attempts left.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

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
from linbench.fleet.folders import claim_attempt, read_plan
from linbench.fleet.inventory import Inventory, read_fake_inventory, read_inventory
from linbench.fleet.launch import AgentSpec
from linbench.fleet.progress import continued_rows, pending
from linbench.fleet.seam import LINBENCH_RUNNER, ShardWork, runner
from linbench.fleet.shards import Shard, longest_first, select_part
from linbench.results.record import Key

if TYPE_CHECKING:
    from linbench.sweep.points import Point

PR_SET_PDEATHSIG = 1


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class Events:
    """JSON lines to the coordinator, on a stream nothing else writes to (or, for an agent
    run inside the command that shows its progress, to a function)."""

    def __init__(self, stream: IO[str] | None = None, heard: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.stream, self.heard = stream, heard

    def send(self, event: str, **fields: Any) -> None:
        if self.heard is not None:
            self.heard({"event": event, **fields})
        if self.stream is not None:
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
    seen = seen_by_fake(inventory, os.environ) if inventory.simulated else seen_by_torch()
    check_sees_only(spec.visible_id, seen, also=[spec.gpu_uuid])


class AgentHooks:
    """The runner's hooks around each point (linbench/runner/hooks.py): the foreign-process
    check before each process, and the ``where`` columns of its row."""

    def __init__(self, spec: AgentSpec, inventory: Inventory, shard: str, attempt: int, events: Events):
        self.spec, self.inventory, self.events = spec, inventory, events
        self.shard, self.attempt = shard, attempt
        self._started: dict[Key, tuple[str, int]] = {}  # when its first process began, the most foreign

    def _on_gpu(self) -> list[int]:
        if self.inventory.cpu:  # no card to share: its cores are its own (placement.py)
            return []
        if self.inventory.fake:  # read again: a test may have put a process on the card meanwhile
            fresh = read_fake_inventory(Path(os.environ["LINBENCH_FAKE_DEVICES"]))
            return list(fresh.fake_processes.get(self.spec.gpu_uuid, ()))
        return nvml_processes(self.spec.gpu_uuid)

    def _mine(self) -> set[int]:
        """This agent and its workers; and the coordinator that started it, which plans on the
        GPUs' host but measures nothing (a CUDA context it holds would be an idle one)."""
        ours = own_tree()
        return ours | {self.spec.parent_pid} if self.spec.parent_pid is not None else ours

    def before_point(self, point: Point) -> str | None:
        self.events.send("start", shard=self.shard, attempt=self.attempt, key=list(point.key))
        foreign = wait_until_free(self._on_gpu, self._mine, self.spec.busy_wait_s)
        first, most = self._started.get(point.key, (now(), 0))
        self._started[point.key] = (first, max(most, len(foreign)))
        return busy_reason(self.spec.gpu_uuid, foreign) if foreign else None

    def row_columns(self, point: Point) -> Mapping[str, Any]:
        started, foreign = self._started.pop(point.key, (None, None))
        columns = where(self.spec, self.shard, self.attempt)
        return columns | {"started_at": started, "finished_at": now(), "foreign_gpu_procs": foreign}

    def after_row(self, point: Point, row: Mapping[str, Any]) -> None:
        key = list(point.key)
        self.events.send("row", shard=self.shard, attempt=self.attempt, key=key, status=row.get("status"))


def where(spec: AgentSpec, shard: str, attempt: int) -> dict[str, Any]:
    """The ``where`` columns every row of this agent's attempt shares: its cores as it runs."""
    return spec.where(shard, attempt, os.sched_getaffinity(0), os.getpid())


@dataclass(frozen=True)
class AttemptContext:
    """What every attempt of one agent shares: who it is, the run, and the plan's sweep."""

    spec: AgentSpec
    inventory: Inventory
    run_dir: Path
    plan_hash: str
    settings: Mapping[str, Any]  # fleet.json's: the recorded sweep, the command that made the run
    events: Events


def fleet_section(ctx: AttemptContext, shard: str, attempt: int, keys: tuple[Key, ...]) -> dict[str, Any]:
    """The attempt's meta.json ``fleet`` section: where it ran, and what it was asked for."""
    return where(ctx.spec, shard, attempt) | {
        "gpu_name": ctx.spec.gpu_name,
        "plan_hash": ctx.plan_hash,
        "keys": [list(k) for k in keys],
        "inventory": ctx.inventory.source,
        "runner": ctx.spec.runner,
    }


def run_attempt(ctx: AttemptContext, shard: Shard, keys: tuple[Key, ...]) -> None:
    """One attempt of ``shard``: a new folder, the runner's rows in it, marked complete."""
    history = continued_rows(ctx.run_dir, shard, ctx.spec.gpu_uuid)
    number, folder = claim_attempt(ctx.run_dir, shard.id)
    ctx.events.send("attempt", shard=shard.id, attempt=number, path=str(folder))
    hooks = AgentHooks(ctx.spec, ctx.inventory, shard.id, number, ctx.events)
    sweep, command = dict(ctx.settings.get("sweep") or {}), str(ctx.settings.get("command") or "")
    fleet = fleet_section(ctx, shard.id, number, keys)
    work = ShardWork(shard.id, keys, sweep, command, fleet, history, ctx.spec.gpu_name)
    runner(ctx.spec.runner)(work, folder, hooks)
    ctx.events.send("done", shard=shard.id, attempt=number)


def serve(spec: AgentSpec, events: Events, commands: IO[str]) -> int:
    """Run the work the coordinator sends until it says stop or goes away."""
    inventory = read_inventory()
    check_device(spec, inventory)
    spec = replace(spec, host=spec.host or inventory.host)
    events.send("ready", pid=os.getpid(), cores=sorted(os.sched_getaffinity(0)), uuid=spec.visible_id, host=spec.host)
    for line in commands:
        message = json.loads(line)
        if message.get("stop"):
            break
        shard = Shard.from_json(message["shard"])
        keys = tuple(tuple(str(v) for v in key) for key in message["keys"])
        run_dir = Path(message["run_dir"])
        settings = read_plan(run_dir)[2]
        run_attempt(AttemptContext(spec, inventory, run_dir, message["plan_hash"], settings, events), shard, keys)
    return 0


def visible_spec(inventory: Inventory, runner_name: str, busy_wait_s: float) -> AgentSpec:
    """The spec of an agent whose launcher chose its GPU (CUDA_VISIBLE_DEVICES) and cores
    (its affinity): FleetError unless it sees exactly one GPU of this host's inventory."""
    if inventory.cpu:  # --shard K/N --devices cpu: this process is the part's one CPU agent
        seen = [inventory.devices[0].uuid]
    else:
        seen = seen_by_fake(inventory, os.environ) if inventory.fake else seen_by_torch()
    if len(seen) != 1:
        shown = ", ".join(seen) or "CUDA_VISIBLE_DEVICES names none"
        raise FleetError(f"a --shard agent needs exactly one visible GPU; it sees {len(seen)} ({shown})")
    device = inventory.by_uuid(seen[0]) or next(
        (d for d in inventory.devices for s in d.mig_slices if s.uuid == seen[0]), None
    )
    if device is None:
        raise FleetError(f"the visible GPU {seen[0]} is not in this host's inventory")
    cores = tuple(sorted(os.sched_getaffinity(0)))  # what the launcher (Slurm, Kubernetes) bound it to
    local = not device.local_cpus or set(cores) <= set(device.local_cpus)
    spec = AgentSpec(seen[0], device.uuid, device.index, device.pci_bus_id, device.name, device.numa_node, cores, local)
    return replace(spec, runner=runner_name, busy_wait_s=busy_wait_s, host=inventory.host)


def run_part(
    run_dir: Path,
    part: str | None,
    runner_name: str,
    busy_wait_s: float,
    events: Events,
    ids: str | None = None,
    inventory: Inventory | None = None,
) -> int:
    """Run part K/N of the plan in ``run_dir`` (or the shards ``ids``, comma-separated) on the
    one GPU this process was given (or the one CPU agent of ``inventory``); each shard's missing
    points, longest shard first."""
    inventory = inventory or read_inventory()
    spec = visible_spec(inventory, runner_name, busy_wait_s)
    shards, plan_hash, settings = read_plan(run_dir)
    ctx = AttemptContext(spec, inventory, run_dir, plan_hash, settings, events)
    for shard in longest_first(_chosen(shards, part, ids)):
        keys, _restart = pending(run_dir, shard, spec.gpu_uuid)
        if keys:
            run_attempt(ctx, shard, keys)
    return 0


def _chosen(shards: tuple[Shard, ...], part: str | None, ids: str | None) -> list[Shard]:
    if ids is None:
        return select_part(shards, part or "0/1")
    wanted = [i.strip() for i in ids.split(",") if i.strip()]
    known = {shard.id: shard for shard in shards}
    unknown = [i for i in wanted if i not in known]
    if unknown:
        raise FleetError(f"the plan has no shard {unknown[0]} (it has {shards[0].id} to {shards[-1].id})")
    return [known[i] for i in wanted]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m linbench.fleet.agent")
    sub = parser.add_subparsers(dest="mode", required=True)
    serve_cmd = sub.add_parser("serve")
    serve_cmd.add_argument("spec")
    part_cmd = sub.add_parser("part")
    part_cmd.add_argument("--run-dir", type=Path, required=True)
    which = part_cmd.add_mutually_exclusive_group(required=True)
    which.add_argument("--part")
    which.add_argument("--shards")
    part_cmd.add_argument("--runner", default=LINBENCH_RUNNER)  # or module:function (seam.py)
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
        return run_part(args.run_dir, args.part, args.runner, args.busy_wait_s, events, args.shards)
    except FleetError as exc:
        events.send("error", message=str(exc))
        print(f"linbench agent: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
