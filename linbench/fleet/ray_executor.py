"""``--executor ray``: one long-lived Ray actor per GPU, each running agents as subprocesses.

Each actor asks Ray for one GPU (``num_gpus=1``) and no CPU, so Ray never places two on a
card. It reports which card that is (by UUID: Ray numbers GPUs per node, so an index names
nothing across nodes) and the cores its node allows; the driver (this process) gives every
actor of a node cores of its own, as the local executor does, and hands out shards, longest
first, to whichever actor is idle. An actor runs each shard as a fresh agent process
(``python -m linbench.fleet.agent part --shards ID``) with the agent's environment (its GPU by
UUID, its thread counts) and pinned to its cores: Ray's worker process has already imported
things and set OMP_NUM_THREADS=1, so the agent is never run inside it.

An actor watches its agent (linbench/fleet/watch.py): an agent dead mid-point leaves a
crashed row and a new agent goes on, on the same GPU. An actor lost with its node
(``RayActorError``) gives its shard back to the queue; the next actor continues it where
its card's attempts stopped, or starts it over on another card (the point in flight is run
again: its agent did not fail, its node went away). The run folder must be on a filesystem
every node shares. ray is an optional extra: without it, ``--executor ray`` is a one-line
error naming the install command.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from linbench.fleet.device_spec import DeviceChoice
from linbench.fleet.errors import FleetError
from linbench.fleet.inventory import Device, read_inventory
from linbench.fleet.launch import AgentSpec, agent_env
from linbench.fleet.placement import plan_placement, read_siblings
from linbench.fleet.plan import FleetPlan
from linbench.fleet.progress import pending
from linbench.fleet.shards import Shard, longest_first
from linbench.fleet.watch import agent_part_command, run_watched

INSTALL = "pip install 'linbench[ray]'"
# Ray starts its workers, actors among them, at niceness 15 (its ``worker_niceness``), and a
# process inherits its parent's: every agent and every worker measuring under it would run at
# that priority and, beside any other busy process on the node, get a few percent of a core
# (a four-point CPU sweep beside two busy processes: 136 s under Ray, 13 s under the local
# executor). A Ray this executor starts runs its workers at 0, and an agent is set back to 0
# wherever the node lets a process raise its priority (root, or CAP_SYS_NICE).
AGENT_NICENESS = 0
LOCAL_RAY_CONFIG = {"worker_niceness": AGENT_NICENESS}
MAX_TRIES = 3  # a shard whose agents fail this often is given up (its points stay missing)


@dataclass(frozen=True)
class RayOptions:
    address: str | None = None  # None: a local Ray on this host
    max_gpus: int | None = None  # how many actors (GPUs) at most
    cpus_per_gpu: int | None = None
    oversubscribe: bool = False
    runner: str = "linbench"


@dataclass
class RayOutcome:
    """The shards given up ((shard, one line on why)), the actors lost, the GPUs used."""

    failed: list[tuple[str, str]] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    gpus: list[str] = field(default_factory=list)  # "host GPU-uuid" of each actor


def load_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise FleetError(f"--executor ray needs ray: {INSTALL}") from None
    return ray


@dataclass(frozen=True)
class Place:
    """Where an actor landed: its node, host, GPU and the cores its node allows."""

    node: str
    host: str
    device: Device
    cpus: tuple[int, ...]


def describe_place(node: str) -> Place:
    """This actor's GPU, from the index (or UUID) Ray put in CUDA_VISIBLE_DEVICES: an index
    counts in nvidia-smi's (PCI) order, as the inventory does, the order Ray numbered them."""
    inventory = read_inventory()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    device = inventory.devices[int(visible)] if visible.isdigit() and int(visible) < len(inventory.devices) else None
    device = device or inventory.by_uuid(visible)
    if device is None:
        raise FleetError(f"the GPU Ray gave this actor ({visible or 'none'}) is not in {inventory.host}'s inventory")
    return Place(node, inventory.host, device, tuple(sorted(os.sched_getaffinity(0))))


def run_shard(spec_json: str, run_dir: str, shard: str) -> int:
    """One shard by a fresh agent with ``spec``'s environment, pinned to its cores, watched
    (linbench/fleet/watch.py: a death mid-point is a crashed row and a new agent)."""
    spec = AgentSpec.from_json(spec_json)
    command = agent_part_command(sys.executable, run_dir, shard, ["--runner", spec.runner])
    prepare: Callable[[], None] = lambda: _prepare_agent(spec.cores)  # noqa: E731 - run in the child
    return run_watched(command, agent_env(spec, os.environ), preexec_fn=prepare).status


def _prepare_agent(cores: Sequence[int]) -> None:
    """In the agent's process before it starts: its cores, and the priority of a process the
    node runs at (LOCAL_RAY_CONFIG's comment), where the node allows raising it."""
    if cores:
        os.sched_setaffinity(0, cores)
    with contextlib.suppress(PermissionError):  # the node's own limit: the actor's niceness stays
        os.setpriority(os.PRIO_PROCESS, 0, AGENT_NICENESS)


def run_ray(run_dir: Path, plan: FleetPlan, options: RayOptions) -> RayOutcome:
    """Run the shards of ``plan`` with missing points in ``run_dir`` on one actor per GPU."""
    ray = load_ray()
    inventory = read_inventory()
    local: dict[str, Any] = {}
    if options.address is None and not os.environ.get("RAY_ADDRESS"):  # ray.init starts a Ray of its own
        local["_system_config"] = LOCAL_RAY_CONFIG
        if inventory.fake:
            local["num_gpus"] = len(inventory.devices)
    ray.init(address=options.address, include_dashboard=False, log_to_driver=False, **local)
    try:
        return _drive(ray, run_dir, plan, options)
    finally:
        ray.shutdown()


def _drive(ray: Any, run_dir: Path, plan: FleetPlan, options: RayOptions) -> RayOutcome:
    queue = [shard for shard in longest_first(plan.shards) if pending(run_dir, shard, gpu_uuid="")[0]]
    outcome = RayOutcome()
    gpus = int(ray.cluster_resources().get("GPU", 0))
    count = min(gpus, options.max_gpus or gpus, len(queue))
    if not queue:
        return outcome
    if count < 1:
        raise FleetError(f"the Ray cluster at {options.address or 'this host'} has no GPU")
    actor_class = ray.remote(num_gpus=1, num_cpus=0, max_restarts=0)(GpuActor)
    actors = [actor_class.remote() for _ in range(count)]
    places = ray.get([a.place.remote() for a in actors])
    specs = _specs(places, options)
    outcome.gpus = [f"{p.host} {p.device.uuid}" for p in places]
    _dispatch(ray, actors, specs, queue, run_dir, outcome)
    return outcome


def _specs(places: Sequence[Place], options: RayOptions) -> list[AgentSpec]:
    """Each actor's agent: its GPU, and cores of its own among its node's."""
    specs: list[AgentSpec | None] = [None] * len(places)
    for node in sorted({p.node for p in places}):
        mine = [i for i, p in enumerate(places) if p.node == node]
        cpus = places[mine[0]].cpus
        choices = [DeviceChoice(places[i].device) for i in mine]
        placed = plan_placement(
            choices,
            cpus,
            cores_per_gpu=options.cpus_per_gpu,
            oversubscribe=options.oversubscribe,
            siblings=read_siblings(cpus),
        )
        for i, placement in zip(mine, placed, strict=True):
            specs[i] = replace(AgentSpec.of(placement, runner=options.runner), host=places[i].host)
    return [spec for spec in specs if spec is not None]


def _dispatch(
    ray: Any, actors: list[Any], specs: list[AgentSpec], queue: list[Shard], run_dir: Path, outcome: RayOutcome
) -> None:
    """Hand shards to idle actors until every shard is done or given up; with every actor
    lost, what is left stays missing (the run resumes later)."""
    tries: dict[str, int] = {}
    running: dict[Any, tuple[int, Shard]] = {}  # a call in flight → (its actor, its shard)
    idle = list(range(len(actors)))
    while queue or running:
        while queue and idle:
            i, shard = idle.pop(0), queue.pop(0)
            running[actors[i].run.remote(specs[i].to_json(), str(run_dir), shard.id)] = (i, shard)
        if not running:
            break  # shards left, and no actor to run them
        done, _ = ray.wait(list(running), num_returns=1)
        i, shard = running.pop(done[0])
        try:
            status = ray.get(done[0])
        except ray.exceptions.RayActorError as exc:  # the actor, or its node, is gone: never idle again
            outcome.lost.append(f"{specs[i].host} {specs[i].gpu_uuid}: {str(exc).splitlines()[0][:200]}")
            queue.insert(0, shard)
            continue
        idle.append(i)
        if status != 0:
            tries[shard.id] = tries.get(shard.id, 0) + 1
            if tries[shard.id] < MAX_TRIES:
                queue.insert(0, shard)
            else:
                outcome.failed.append((shard.id, f"its agents exited with status {status} {MAX_TRIES} times"))
    outcome.failed += [(shard.id, "no Ray actor was left to run it") for shard in queue]


class GpuActor:
    """A Ray actor holding one GPU (made remote with ``num_gpus=1`` by the driver)."""

    def place(self) -> Place:
        import ray

        return describe_place(ray.get_runtime_context().get_node_id())

    def run(self, spec_json: str, run_dir: str, shard: str) -> int:
        return run_shard(spec_json, run_dir, shard)


__all__ = ["INSTALL", "GpuActor", "RayOptions", "RayOutcome", "load_ray", "run_ray"]
