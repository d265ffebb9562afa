"""The GPUs of this host, as NVML lists them, and the NUMA node and CPU cores near each.

Devices are numbered as nvidia-smi numbers them (PCI bus order) and identified by UUID:
CUDA's own order is fastest-first unless CUDA_DEVICE_ORDER=PCI_BUS_ID, and NVML warns that
its index need not match any other API's, so nothing here trusts an index across APIs.

A *CPU* inventory lets a CPU-only machine try the fleet: ``--devices cpu:N`` asks for N CPU
agents, each pinned to cores of its own and measuring a CPU sweep (``cpu_inventory``). It is
used only when asked for by name; the local coordinator passes it on to the agents it starts
in ``LINBENCH_CPU_AGENTS``.

A *fake* inventory exists for the test suite only: when ``LINBENCH_FAKE_DEVICES`` names a
JSON file, that file is the inventory (see ``read_fake_inventory``). Nothing in linbench sets
that variable; the fleet's tests do, to run real agent processes on a machine without GPUs.
"""

from __future__ import annotations

import json
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linbench.fleet.cpulist import parse_cpulist

# Test-only: names a JSON file that replaces NVML's inventory (tests/fleet sets it).
FAKE_DEVICES_ENV = "LINBENCH_FAKE_DEVICES"
# Set by the local coordinator for the agents of ``--devices cpu:N``: how many CPU agents the run has.
CPU_AGENTS_ENV = "LINBENCH_CPU_AGENTS"
CPU_MODEL = "CPU"
SYSFS = Path("/sys")


@dataclass(frozen=True)
class MigSlice:
    """A MIG instance of a GPU: its own UUID, but the parent's memory bandwidth, power and clocks."""

    uuid: str
    name: str
    memory_bytes: int


@dataclass(frozen=True)
class Device:
    """One physical GPU of this host."""

    index: int  # nvidia-smi's index (PCI bus order) on this host
    uuid: str  # GPU-...
    pci_bus_id: str  # 0000:41:00.0, as sysfs names it
    name: str
    memory_bytes: int
    mig: bool = False  # MIG mode is on: CUDA sees its slices, never the whole GPU
    mig_slices: tuple[MigSlice, ...] = ()
    numa_node: int | None = None  # None where the platform has no NUMA or does not say
    local_cpus: tuple[int, ...] = ()  # the cores on the GPU's NUMA node; () when unknown

    @property
    def label(self) -> str:
        kind = "cpu" if self.name == CPU_MODEL and self.uuid.startswith("CPU-") else "cuda"
        return f"{kind}:{self.index}"


@dataclass(frozen=True)
class Inventory:
    """The GPUs of one host, in index order; ``source`` says where the list came from."""

    host: str
    devices: tuple[Device, ...] = ()
    source: str = "nvml"  # nvml | fake | cpu | none
    error: str | None = None  # why there are no devices, when NVML could not be read
    # Fake inventories only: NVML compute processes per UUID (for the foreign-process check).
    fake_processes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    fake_extra: dict[str, Any] = field(default_factory=dict)

    @property
    def fake(self) -> bool:
        return self.source == "fake"

    @property
    def cpu(self) -> bool:
        """CPU agents (``--devices cpu:N``): no GPU, each agent measures on its own cores."""
        return self.source == "cpu"

    @property
    def simulated(self) -> bool:
        """The devices are not NVML's: an agent finds its own in CUDA_VISIBLE_DEVICES, not in torch."""
        return self.source in ("fake", "cpu")

    def by_uuid(self, uuid: str) -> Device | None:
        wanted = uuid.lower()
        return next((d for d in self.devices if d.uuid.lower() == wanted), None)


def normal_pci_id(bus_id: str) -> str:
    """NVML's ``00000000:41:00.0`` as sysfs writes it, ``0000:41:00.0`` (lower case)."""
    text = bus_id.strip().lower()
    domain, sep, rest = text.partition(":")
    if not sep or not rest:
        return text
    try:
        return f"{int(domain, 16):04x}:{rest}"
    except ValueError:
        return text


def numa_of(pci_bus_id: str, sysfs: Path = SYSFS) -> tuple[int | None, tuple[int, ...]]:
    """The NUMA node of a PCI device and the CPUs local to it, from sysfs; (None, ()) where
    sysfs does not say (no NUMA: the kernel writes node -1)."""
    folder = sysfs / "bus" / "pci" / "devices" / normal_pci_id(pci_bus_id)
    try:
        node = int((folder / "numa_node").read_text().strip())
    except (OSError, ValueError):
        node = -1
    try:
        cpus = parse_cpulist((folder / "local_cpulist").read_text())
    except (OSError, ValueError):
        cpus = ()
    return (node if node >= 0 else None), cpus


def read_inventory(sysfs: Path = SYSFS) -> Inventory:
    """This host's GPUs: the CPU agents of an agent of ``--devices cpu:N``, the fake inventory
    when the test suite set one up, else NVML's."""
    agents = os.environ.get(CPU_AGENTS_ENV)
    if agents:
        if not agents.isdigit() or int(agents) < 1:
            raise ValueError(f"{CPU_AGENTS_ENV}={agents!r}: the CPU agents of --devices cpu:N, a whole number N ≥ 1")
        return cpu_inventory(int(agents))
    fake = os.environ.get(FAKE_DEVICES_ENV)
    if fake:
        return read_fake_inventory(Path(fake))
    return nvml_inventory(sysfs)


def cpu_inventory(count: int, first: int = 0) -> Inventory:
    """``count`` CPU agents, ``CPU-<first>`` on: stand-ins for GPUs that measure a CPU sweep on
    the cores the placement gives each (the host's cores are every agent's NUMA-local ones)."""
    devices = tuple(
        Device(index=i, uuid=f"CPU-{i}", pci_bus_id="-", name=CPU_MODEL, memory_bytes=0)
        for i in range(first, first + count)
    )
    return Inventory(platform.node(), devices, source="cpu")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def nvml_inventory(sysfs: Path = SYSFS) -> Inventory:
    """Every GPU NVML lists; an empty inventory with the reason where NVML cannot be used."""
    host = platform.node()
    try:
        from linbench.measure.nvml import load_nvml

        nvml = load_nvml()
    except Exception as exc:
        return Inventory(host, source="none", error=f"NVML unavailable: {type(exc).__name__}: {exc}")
    try:
        devices = tuple(_nvml_device(nvml, index, sysfs) for index in range(int(nvml.nvmlDeviceGetCount())))
    except Exception as exc:
        return Inventory(host, source="none", error=f"NVML could not list the GPUs: {type(exc).__name__}: {exc}")
    finally:
        nvml.nvmlShutdown()
    return Inventory(host, devices, source="nvml")


def _nvml_device(nvml: Any, index: int, sysfs: Path) -> Device:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    pci = normal_pci_id(_text(nvml.nvmlDeviceGetPciInfo(handle).busId))
    node, cpus = numa_of(pci, sysfs)
    mig = _mig_enabled(nvml, handle)
    return Device(
        index=index,
        uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
        pci_bus_id=pci,
        name=_text(nvml.nvmlDeviceGetName(handle)),
        memory_bytes=int(nvml.nvmlDeviceGetMemoryInfo(handle).total),
        mig=mig,
        mig_slices=_mig_slices(nvml, handle) if mig else (),
        numa_node=node,
        local_cpus=cpus,
    )


def _mig_enabled(nvml: Any, handle: Any) -> bool:
    try:
        current, _pending = nvml.nvmlDeviceGetMigMode(handle)
    except Exception:  # a GPU without MIG support says NotSupported
        return False
    return int(current) == int(nvml.NVML_DEVICE_MIG_ENABLE)


def _mig_slices(nvml: Any, handle: Any) -> tuple[MigSlice, ...]:
    slices = []
    for slot in range(int(nvml.nvmlDeviceGetMaxMigDeviceCount(handle))):
        try:
            mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except Exception:  # an empty slot
            continue
        slices.append(
            MigSlice(
                uuid=_text(nvml.nvmlDeviceGetUUID(mig)),
                name=_text(nvml.nvmlDeviceGetName(mig)),
                memory_bytes=int(nvml.nvmlDeviceGetMemoryInfo(mig).total),
            )
        )
    return tuple(slices)


def read_fake_inventory(path: Path) -> Inventory:
    """The test suite's stand-in for NVML: a JSON file

    ``{"host": "node-a", "devices": [{"uuid": "GPU-…", "pci_bus_id": "0000:01:00.0",
    "name": "…", "memory_bytes": 1, "numa_node": 0, "local_cpus": "0-1", "mig_slices": […]}],
    "processes": {"GPU-…": [pid, …]}}``

    Devices are indexed in list order; other top-level keys are kept in ``fake_extra`` for the
    test runner. A file that cannot be read is an error: a test set it up wrong.
    """
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{FAKE_DEVICES_ENV}={path}: cannot read the fake inventory: {exc}") from None
    devices = tuple(_fake_device(index, entry) for index, entry in enumerate(data.get("devices", [])))
    processes = {str(uuid): tuple(int(p) for p in pids) for uuid, pids in data.get("processes", {}).items()}
    extra = {k: v for k, v in data.items() if k not in ("host", "devices", "processes")}
    return Inventory(str(data.get("host", platform.node())), devices, "fake", None, processes, extra)


def _fake_device(index: int, entry: dict[str, Any]) -> Device:
    slices = tuple(
        MigSlice(str(s["uuid"]), str(s.get("name", "")), int(s.get("memory_bytes", 0)))
        for s in entry.get("mig_slices", [])
    )
    node = entry.get("numa_node")
    return Device(
        index=index,
        uuid=str(entry["uuid"]),
        pci_bus_id=normal_pci_id(str(entry.get("pci_bus_id", f"0000:{index + 1:02x}:00.0"))),
        name=str(entry.get("name", "Fake GPU")),
        memory_bytes=int(entry.get("memory_bytes", 0)),
        mig=bool(slices),
        mig_slices=slices,
        numa_node=None if node is None else int(node),
        local_cpus=parse_cpulist(str(entry.get("local_cpus", ""))),
    )
