"""What an agent checks about its GPU: that it sees exactly the one it was given, and, before
each point, that no other process holds a context on it.

The GPU is chosen by the agent's environment before its interpreter starts
(CUDA_VISIBLE_DEVICES=<UUID>): once CUDA has counted the devices, later changes to that
variable are ignored, and a library that initialises CUDA on import would otherwise pin
every agent to the first GPU. The self-check catches any such slip before a point runs.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from linbench.fleet.errors import AgentError
from linbench.fleet.inventory import Inventory

PROC = Path("/proc")


def bare_uuid(uuid: str) -> str:
    """``GPU-8f3a…`` and ``8f3a…`` (torch's form) compare equal."""
    text = uuid.strip().lower()
    for prefix in ("gpu-", "mig-"):
        text = text.removeprefix(prefix)
    return text


def visible_ids(env: dict[str, str] | os._Environ[str]) -> list[str]:
    """CUDA_VISIBLE_DEVICES as a list (empty when unset or empty)."""
    return [item.strip() for item in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if item.strip()]


def seen_by_fake(inventory: Inventory, env: dict[str, str] | os._Environ[str]) -> list[str]:
    """The UUIDs a CUDA program would see under this environment on the fake inventory: the
    fake devices (or MIG slices) CUDA_VISIBLE_DEVICES names, in its order; an index (as Slurm
    writes it) counts in the inventory's order."""
    seen = []
    for item in visible_ids(env):
        if item.isdigit():
            index = int(item)
            seen += [inventory.devices[index].uuid] if index < len(inventory.devices) else []
            continue
        for device in inventory.devices:
            ids = [device.uuid, *(s.uuid for s in device.mig_slices)]
            seen += [uuid for uuid in ids if bare_uuid(uuid) == bare_uuid(item)]
    return seen


def seen_by_torch() -> list[str]:
    """The UUIDs of the CUDA devices torch sees in this process."""
    import torch

    if not torch.cuda.is_available():
        return []
    return [str(torch.cuda.get_device_properties(i).uuid) for i in range(torch.cuda.device_count())]


def check_sees_only(given: str, seen: list[str], also: Iterable[str] = ()) -> None:
    """AgentError unless ``seen`` is exactly one device, ``given`` (or one of ``also``: a MIG
    slice's parent)."""
    if len(seen) != 1:
        shown = ", ".join(seen) or "none"
        raise AgentError(f"the agent for {given} sees {len(seen)} GPUs ({shown}); it must see exactly that one")
    wanted = {bare_uuid(given), *(bare_uuid(u) for u in also)}
    if bare_uuid(seen[0]) not in wanted:
        raise AgentError(f"the agent was given {given} but sees {seen[0]}; refusing to measure on another GPU")


def own_tree(root: int | None = None, proc: Path = PROC) -> set[int]:
    """``root`` (this process by default) and every process descended from it."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    tree, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in tree:
            tree.add(pid)
            todo += children.get(pid, [])
    return tree


def nvml_processes(uuid: str) -> list[int]:
    """Pids of the compute processes NVML sees on the GPU with this UUID."""
    from linbench.measure.nvml import load_nvml

    nvml = load_nvml()
    try:
        handle = nvml.nvmlDeviceGetHandleByUUID(uuid)
        return [int(p.pid) for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)]
    finally:
        nvml.nvmlShutdown()


def foreign_processes(on_gpu: Callable[[], list[int]], mine: Callable[[], set[int]]) -> list[int]:
    """Processes on the GPU that are not this agent or its workers, sorted."""
    pids = on_gpu()
    ours = mine() if pids else set()  # walking /proc costs; skip it for an empty card
    return sorted(pid for pid in pids if pid not in ours)


def wait_until_free(
    on_gpu: Callable[[], list[int]],
    mine: Callable[[], set[int]],
    wait_s: float,
    poll_s: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
) -> list[int]:
    """The foreign processes still on the GPU after waiting up to ``wait_s`` for them to
    leave (empty: the GPU is the agent's alone)."""
    waited = 0.0
    while True:
        foreign = foreign_processes(on_gpu, mine)
        if not foreign or waited >= wait_s:
            return foreign
        sleep(poll_s)
        waited += poll_s


def busy_reason(uuid: str, foreign: list[int]) -> str:
    shown = ", ".join(str(p) for p in foreign[:5]) + (", ..." if len(foreign) > 5 else "")
    return f"GPU busy: {len(foreign)} other process{'es' if len(foreign) > 1 else ''} on {uuid} (pid {shown})"
