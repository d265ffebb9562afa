"""GPU → CPU cores → NUMA node: the cores each agent is pinned to.

Launch-bound points are timed on the host CPU as much as on the GPU, so agents never share
a core: each gets its own physical cores (SMT siblings kept together), taken from its GPU's
NUMA node, the lowest-numbered first. One core is held back for the coordinator (or a
scheduler's daemons). An agent needs at least ``min_cores`` (the launching thread and the
NVML sampler); where the host has too few, the plan is refused unless ``oversubscribe``,
which lets agents share cores and says so. Pure: the inventory, the host's CPU list and its
SMT siblings go in, the plan comes out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from linbench.fleet.cpulist import format_cpulist, parse_cpulist
from linbench.fleet.device_spec import DeviceChoice
from linbench.fleet.errors import PlacementError

MIN_CORES = 2

Group = tuple[int, ...]  # the logical CPUs of one physical core


@dataclass(frozen=True)
class Placement:
    """Where one agent runs: its GPU, its cores, and whether they sit on the GPU's node."""

    choice: DeviceChoice
    cores: tuple[int, ...]
    numa_node: int | None
    numa_local: bool  # every core is on the GPU's NUMA node (True when the node is unknown)
    shared_cores: bool = False  # oversubscribed: another agent runs on some of these cores

    @property
    def line(self) -> str:
        """``cuda:3 → GPU-8f…  NVIDIA H100  PCI 0000:41:00.0  NUMA 0  cores 8-15``."""
        device = self.choice.device
        node = "?" if self.numa_node is None else str(self.numa_node)
        notes = ("" if self.numa_local else "  (not NUMA-local)") + ("  (shared cores)" if self.shared_cores else "")
        return (
            f"{device.label} → {self.choice.visible_id}  {device.name}  PCI {device.pci_bus_id}  NUMA {node}  "
            f"cores {format_cpulist(self.cores)}{notes}"
        )


def core_groups(cpus: Iterable[int], siblings: Mapping[int, Sequence[int]] | None = None) -> list[Group]:
    """The allowed CPUs grouped into physical cores (by their SMT siblings), in CPU order."""
    allowed = sorted(set(cpus))
    seen: set[int] = set()
    groups: list[Group] = []
    for cpu in allowed:
        if cpu in seen:
            continue
        group = tuple(sorted(set((siblings or {}).get(cpu, (cpu,))) & set(allowed) | {cpu}))
        seen.update(group)
        groups.append(group)
    return groups


def read_siblings(cpus: Iterable[int], sysfs: Path = Path("/sys")) -> dict[int, tuple[int, ...]]:
    """Each CPU's SMT siblings from sysfs (itself alone where sysfs does not say)."""
    found: dict[int, tuple[int, ...]] = {}
    for cpu in cpus:
        path = sysfs / "devices" / "system" / "cpu" / f"cpu{cpu}" / "topology" / "thread_siblings_list"
        try:
            found[cpu] = parse_cpulist(path.read_text()) or (cpu,)
        except (OSError, ValueError):
            found[cpu] = (cpu,)
    return found


def plan_placement(
    choices: Sequence[DeviceChoice],
    host_cpus: Iterable[int],
    *,
    cores_per_gpu: int | None = None,
    reserve: int = 1,
    min_cores: int = MIN_CORES,
    oversubscribe: bool = False,
    siblings: Mapping[int, Sequence[int]] | None = None,
) -> tuple[Placement, ...]:
    """Cores for each agent, in ``choices`` order: ``cores_per_gpu`` physical cores each (by
    default as many as the tightest NUMA node can give each of its agents), disjoint, after holding
    ``reserve`` cores back. PlacementError when an agent would get fewer than
    ``cores_per_gpu`` (by default ``min_cores``), unless ``oversubscribe``."""
    groups = core_groups(host_cpus, siblings)
    if not choices:
        return ()
    if not groups:
        raise PlacementError("no CPU core is available to this process (sched_getaffinity is empty)")
    pools = [_pool(choice, groups) for choice in choices]
    held = _reserved(groups, pools, reserve, len(choices), cores_per_gpu or min_cores)
    free = [g for g in groups if g not in held]
    # The same count for every agent: its torch threads, and so its host-side speed, match.
    share = cores_per_gpu or min(_fair_share(pool, pools, free) for pool in pools)
    need = [share] * len(pools)
    taken: dict[int, list[Group]] = {}
    order = sorted(range(len(choices)), key=lambda i: (len(pools[i]), i))  # the tightest node first
    for i in order:
        local = [g for g in free if g in pools[i]]
        remote = [g for g in free if g not in pools[i]]
        taken[i] = (local + remote)[: need[i]]
        free = [g for g in free if g not in taken[i]]
    required = cores_per_gpu or min_cores
    short = [i for i in order if len(taken[i]) < required]
    if short and not oversubscribe:
        i = short[0]
        raise PlacementError(
            f"{len(choices)} agents need {required} cores each but {choices[i].device.label} would get "
            f"{len(taken[i])} of this host's {len(groups)} ({len(held)} held back); use fewer GPUs, fewer cores "
            "per GPU, or --oversubscribe (agents then share cores, and their times may suffer)"
        )
    shared = _fill_shared(short, taken, groups, pools, required) if short else set()
    return tuple(_placement(choices[i], taken[i], pools[i], i in shared) for i in range(len(choices)))


def _pool(choice: DeviceChoice, groups: list[Group]) -> list[Group]:
    """The physical cores on the GPU's NUMA node; every core when the node is unknown."""
    local = set(choice.device.local_cpus)
    pool = [g for g in groups if set(g) <= local]
    return pool or list(groups)


def _reserved(groups: list[Group], pools: list[list[Group]], reserve: int, agents: int, least: int) -> list[Group]:
    """The cores held back: off every GPU's node where possible, else where agents are fewest
    per core; none where holding one back would leave the agents too few."""
    if reserve <= 0 or len(groups) - reserve < agents * least:
        return []

    def crowding(group: Group) -> tuple[float, int]:
        ratios = [sum(1 for p in pools if p == pool) / len(pool) for pool in pools if group in pool]
        return (max(ratios, default=0.0), -group[0])

    return sorted(groups, key=crowding)[:reserve]


def _fair_share(pool: list[Group], pools: list[list[Group]], free: list[Group]) -> int:
    """Cores each agent on this node gets when all share its free cores equally."""
    sharing = sum(1 for p in pools if p == pool)
    return max(1, sum(1 for g in free if g in pool) // sharing)


def _fill_shared(
    short: list[int], taken: dict[int, list[Group]], groups: list[Group], pools: list[list[Group]], want: int
) -> set[int]:
    """Oversubscribed: top up the agents that got too few with cores of their node, reused
    round-robin; the indices of the agents that now share a core."""
    shared = set(short)
    for turn, i in enumerate(short):
        pool = pools[i] or groups
        while len(taken[i]) < want and len(taken[i]) < len(groups):
            extra = [g for g in pool + groups if g not in taken[i]]
            taken[i].append(extra[turn % len(extra)])
    used: dict[Group, int] = {}
    for cores in taken.values():
        for g in cores:
            used[g] = used.get(g, 0) + 1
    return shared | {i for i, cores in taken.items() if any(used[g] > 1 for g in cores)}


def _placement(choice: DeviceChoice, cores: list[Group], pool: list[Group], shared: bool) -> Placement:
    cpus = tuple(sorted(c for g in cores for c in g))
    local = set(choice.device.local_cpus)
    return Placement(
        choice=choice,
        cores=cpus,
        numa_node=choice.device.numa_node,
        numa_local=not local or set(cpus) <= local,
        shared_cores=shared,
    )
