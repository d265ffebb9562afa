"""``--devices SPEC``: which GPUs of the inventory a run uses, one agent each.

The grammar, items separated by commas:

* ``all`` or ``cuda``: every GPU of the host;
* ``cuda:0-7``, ``cuda:0,2,5``, ``cuda:0-3,6``: nvidia-smi indices (PCI bus order), ranges
  inclusive; a bare index continues a ``cuda:`` item;
* ``GPU-<uuid>``: one GPU by UUID (prefixes of a UUID are not accepted);
* ``MIG-<uuid>``: one MIG slice, only with ``allow_shared`` (its bandwidth, power and clocks
  are its parent's, shared with every other slice);
* ``cpu:N`` (alone): N CPU agents, to try the fleet on a machine without GPUs: each measures a
  CPU sweep on cores of its own (``cpu_agents``; the inventory is then ``cpu_inventory(N)``).

A GPU named twice (twice by index, or by an index and its UUID) is an error, and so is one
hidden by the user's own CUDA_VISIBLE_DEVICES: that variable bounds what a run may use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from linbench.fleet.errors import DeviceSpecError
from linbench.fleet.inventory import Device, Inventory, MigSlice, cpu_inventory


@dataclass(frozen=True)
class DeviceChoice:
    """One GPU (or, shared, one MIG slice of it) that an agent will own."""

    device: Device
    slice: MigSlice | None = None

    @property
    def visible_id(self) -> str:
        """What the agent's CUDA_VISIBLE_DEVICES holds: the GPU's UUID, or the slice's."""
        return self.slice.uuid if self.slice is not None else self.device.uuid

    @property
    def shared(self) -> bool:
        """True for a MIG slice: the physical GPU is shared with other slices."""
        return self.slice is not None


def cpu_agents(spec: str | None) -> int | None:
    """N for ``cpu:N`` (1 for ``cpu``), None for a spec naming GPUs; DeviceSpecError for a CPU
    spec that is not one whole number of agents."""
    text = (spec or "").strip().lower()
    if not text.startswith("cpu"):
        return None
    count = text.removeprefix("cpu").removeprefix(":") or "1"
    if not count.isdigit() or int(count) < 1:
        raise DeviceSpecError(f"--devices {spec}: name CPU agents as cpu:N (N at least 1), alone")
    return int(count)


def inventory_for(spec: str | None, gpus: Inventory | Callable[[], Inventory]) -> Inventory:
    """The inventory ``spec`` chooses from: its CPU agents for ``cpu:N``, else the GPUs."""
    count = cpu_agents(spec)
    if count is not None:
        return cpu_inventory(count)
    return gpus() if callable(gpus) else gpus


def select_devices(
    spec: str, inventory: Inventory, env: Mapping[str, str] | None = None, allow_shared: bool = False
) -> tuple[DeviceChoice, ...]:
    """The devices ``spec`` names, in the order named; DeviceSpecError (one line) otherwise."""
    text = spec.strip()
    if not text:
        raise DeviceSpecError("--devices is empty: name GPUs as cuda:0-7, cuda:0,2, GPU-<uuid> or all")
    if inventory.error is not None and not inventory.devices:
        raise DeviceSpecError(f"--devices {text}: no GPUs can be listed here ({inventory.error})")
    eligible = _eligible(inventory, env or {})
    choices: list[DeviceChoice] = []
    named: dict[str, str] = {}  # visible id → the item that named it
    for item, choice in _resolve_items(text, inventory, allow_shared):
        if choice.device.uuid not in eligible:
            raise DeviceSpecError(f"--devices: {item} ({choice.device.uuid}) is hidden by CUDA_VISIBLE_DEVICES")
        if choice.visible_id in named:
            raise DeviceSpecError(f"--devices: {named[choice.visible_id]} and {item} name the same GPU")
        named[choice.visible_id] = item
        choices.append(choice)
    if not choices:
        raise DeviceSpecError(f"--devices {text}: this host has no GPU")
    return tuple(choices)


def _resolve_items(text: str, inventory: Inventory, allow_shared: bool) -> list[tuple[str, DeviceChoice]]:
    """(the item as written, its device) for every item of ``text``."""
    found: list[tuple[str, DeviceChoice]] = []
    in_cuda_list = False
    if inventory.cpu:  # cpu:N names every agent of its inventory (inventory_for)
        return [(d.uuid, DeviceChoice(d)) for d in inventory.devices]
    for raw in text.split(","):
        item = raw.strip()
        if item.lower().startswith("cpu"):
            raise DeviceSpecError(f"--devices: {item} names CPU agents; give cpu:N alone, without GPUs")
        if item in ("all", "cuda"):
            found += [(d.label, _whole(d, d.label, allow_shared)) for d in inventory.devices]
            in_cuda_list = False
        elif item.startswith("cuda:") or (in_cuda_list and item[:1].isdigit()):
            indices = _index_range(item.removeprefix("cuda:"), item)
            found += [(f"cuda:{i}", _whole(_by_index(inventory, i, item), f"cuda:{i}", allow_shared)) for i in indices]
            in_cuda_list = True
        elif item.upper().startswith("GPU-"):
            device = inventory.by_uuid(item)
            if device is None:
                raise DeviceSpecError(f"--devices: no GPU here has the UUID {item}")
            found.append((item, _whole(device, item, allow_shared)))
            in_cuda_list = False
        elif item.upper().startswith("MIG-"):
            found.append((item, _slice(inventory, item, allow_shared)))
            in_cuda_list = False
        else:
            raise DeviceSpecError(
                f"--devices: {item!r} is not a device; name GPUs as cuda:0-7, cuda:0,2, GPU-<uuid>, MIG-<uuid> or all"
            )
    return found


def _index_range(text: str, item: str) -> range:
    low, sep, high = text.partition("-")
    try:
        first, last = int(low), int(high if sep else low)
    except ValueError:
        raise DeviceSpecError(f"--devices: {item!r} is not an index or a range of them (like cuda:0-7)") from None
    if first < 0 or last < first:
        raise DeviceSpecError(f"--devices: {item!r} is an empty range (write the lower index first, like cuda:0-7)")
    return range(first, last + 1)


def _by_index(inventory: Inventory, index: int, item: str) -> Device:
    if index < len(inventory.devices):
        return inventory.devices[index]
    count = len(inventory.devices)
    have = "no GPU" if count == 0 else f"{count} GPU{'s' if count > 1 else ''} (cuda:0-{count - 1})"
    raise DeviceSpecError(f"--devices: {item} names cuda:{index}, but this host has {have}")


def _whole(device: Device, item: str, allow_shared: bool) -> DeviceChoice:
    """A whole GPU; one with MIG on cannot be used whole (CUDA sees only its slices)."""
    if device.mig:
        hint = "name its slices (MIG-<uuid>) with --allow-shared-gpu" if not allow_shared else "name its slices"
        slices = ", ".join(s.uuid for s in device.mig_slices) or "none made"
        raise DeviceSpecError(f"--devices: {item} has MIG mode on; {hint} ({slices}), or turn MIG off")
    return DeviceChoice(device)


def _slice(inventory: Inventory, item: str, allow_shared: bool) -> DeviceChoice:
    for device in inventory.devices:
        for mig in device.mig_slices:
            if mig.uuid.lower() == item.lower():
                if not allow_shared:
                    raise DeviceSpecError(
                        f"--devices: {item} is a MIG slice of {device.label} ({device.uuid}), which shares its memory "
                        "bandwidth, power and clocks with the other slices; pass --allow-shared-gpu to time on it"
                    )
                return DeviceChoice(device, mig)
    raise DeviceSpecError(f"--devices: no MIG slice here has the UUID {item}")


def _eligible(inventory: Inventory, env: Mapping[str, str]) -> set[str]:
    """UUIDs of the GPUs the user's CUDA_VISIBLE_DEVICES lets a run use (all when unset)."""
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return {d.uuid for d in inventory.devices}
    eligible: set[str] = set()
    for raw in visible.split(","):
        item = raw.strip()
        if not item or item == "-1":
            break  # CUDA stops at the first invalid entry
        if item[:1].isdigit():
            if env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
                raise DeviceSpecError(
                    f"CUDA_VISIBLE_DEVICES={visible} numbers GPUs in CUDA's order, which is not nvidia-smi's; "
                    "name them by UUID there, or set CUDA_DEVICE_ORDER=PCI_BUS_ID"
                )
            index = int(item) if item.isdigit() else -1
            if 0 <= index < len(inventory.devices):
                eligible.add(inventory.devices[index].uuid)
            continue
        device = inventory.by_uuid(item) or _parent_of_slice(inventory, item)
        if device is not None:
            eligible.add(device.uuid)
    return eligible


def _parent_of_slice(inventory: Inventory, uuid: str) -> Device | None:
    return next((d for d in inventory.devices for s in d.mig_slices if s.uuid.lower() == uuid.lower()), None)
