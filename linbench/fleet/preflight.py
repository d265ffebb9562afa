"""``linbench doctor --devices SPEC``: before a run over several GPUs, the checks that say whether
its numbers can be trusted, in the doctor's own table (linbench/doctor/checks.py).

* **inventory**: the GPUs SPEC names, by UUID, model, PCI bus id and NUMA node;
* **placement**: each agent's cores (GPU → cores → NUMA node): its own, on its GPU's node;
* **other processes**: compute processes other than linbench's on each card now (a point
  with any is skipped, not timed);
* **side by side**: a launch-bound control point on the first GPU alone and beside the other
  agents, judged by the regression gate's rule (linbench/fleet/side_by_side.py); on the test
  suite's fake inventory, measured but not judged.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linbench.doctor.checks import FAIL, PASS, WARN, Check
from linbench.fleet.agent_checks import nvml_processes
from linbench.fleet.cpulist import format_cpulist
from linbench.fleet.device_spec import DeviceChoice, select_devices
from linbench.fleet.inventory import Inventory, read_inventory
from linbench.fleet.placement import Placement, plan_placement, read_siblings
from linbench.fleet.side_by_side import SideBySide, side_by_side


@dataclass(frozen=True)
class FleetCheckup:
    """The checks, and the inventory and placement they were made on."""

    spec: str
    inventory: Inventory
    placements: tuple[Placement, ...]
    checks: list[Check]

    def to_json(self) -> dict[str, Any]:
        devices = [
            {"index": p.choice.device.index, "uuid": p.choice.visible_id, "name": p.choice.device.name}
            | {"pci": p.choice.device.pci_bus_id, "numa_node": p.numa_node, "cores": format_cpulist(p.cores)}
            for p in self.placements
        ]
        return {"devices": self.spec, "inventory": self.inventory.source, "placement": devices}


def plan_devices(
    spec: str, *, cpus_per_gpu: int | None = None, oversubscribe: bool = False, allow_shared: bool = False
) -> tuple[Inventory, tuple[Placement, ...]]:
    """The inventory and the placement of one agent per GPU ``spec`` names (DeviceSpecError,
    PlacementError: one line each)."""
    inventory = read_inventory()
    choices = select_devices(spec, inventory, os.environ, allow_shared=allow_shared)
    cpus = os.sched_getaffinity(0)
    placed = plan_placement(
        choices, cpus, cores_per_gpu=cpus_per_gpu, oversubscribe=oversubscribe, siblings=read_siblings(cpus)
    )
    return inventory, placed


def checkup(
    spec: str, inventory: Inventory, placements: tuple[Placement, ...], runner: str = "linbench"
) -> FleetCheckup:
    """Every check (the side-by-side one measures: about a minute)."""
    with tempfile.TemporaryDirectory(prefix="linbench-doctor-") as work:
        measured = side_by_side(placements, Path(work), inventory.fake, runner)
    checks = [
        inventory_check(inventory, [p.choice for p in placements]),
        placement_check(placements),
        processes_check(inventory, [p.choice for p in placements]),
        side_by_side_check(measured),
    ]
    return FleetCheckup(spec, inventory, placements, checks)


def inventory_check(inventory: Inventory, choices: Sequence[DeviceChoice]) -> Check:
    models = sorted({c.device.name for c in choices})
    measured = f"{len(choices)} GPU{'s' if len(choices) != 1 else ''}: {', '.join(models)}"
    if inventory.fake:
        note = "a fake inventory (LINBENCH_FAKE_DEVICES, test-only): these GPUs measure on the CPU"
        return Check("inventory", len(choices), "GPUs", measured, "NVML", WARN, note)
    mixed = len(models) > 1
    note = "several models: a scenario stays on one card, but comparisons across them mix models" if mixed else ""
    return Check("inventory", len(choices), "GPUs", measured, "NVML, one model", WARN if mixed else PASS, note)


def placement_check(placements: Sequence[Placement]) -> Check:
    cores = min(len(p.cores) for p in placements)
    shared = [p.choice.device.label for p in placements if p.shared_cores]
    remote = [p.choice.device.label for p in placements if not p.numa_local]
    notes = []
    if shared:
        notes.append(f"agents share cores ({', '.join(shared)}): their launch-bound times will suffer")
    if remote:
        notes.append(f"cores off the GPU's NUMA node ({', '.join(remote)})")
    verdict = WARN if notes else PASS
    measured = f"{len(placements)} agents, {cores}+ cores each"
    return Check("placement", cores, "cores", measured, "own cores on the GPU's node", verdict, "; ".join(notes))


def processes_check(inventory: Inventory, choices: Sequence[DeviceChoice]) -> Check:
    """Compute processes on the cards now (NVML; the fake inventory's list)."""
    found: dict[str, list[int]] = {}
    for choice in choices:
        uuid = choice.device.uuid
        try:
            pids = list(inventory.fake_processes.get(uuid, ())) if inventory.fake else nvml_processes(uuid)
        except Exception as exc:  # NVML may refuse a query: say so, do not fail the doctor
            return Check("other processes", None, "", "?", "none", WARN, f"NVML: {type(exc).__name__}: {exc}")
        if pids:
            found[choice.device.label] = pids
    if not found:
        return Check("other processes", 0, "processes", "none", "none on any card", PASS, "")
    shown = "; ".join(f"{label}: pid {', '.join(map(str, pids))}" for label, pids in found.items())
    note = "their points would be skipped (GPU busy) until they leave"
    return Check("other processes", sum(map(len, found.values())), "processes", shown, "none", WARN, note)


def side_by_side_check(measured: SideBySide) -> Check:
    j = measured.judgement
    details = measured.to_json()
    if j is None:
        return Check("side by side", None, "", "not measured", "", WARN, measured.note, details)
    shown = f"{j.ratio:.3f}x of alone" if j.ratio is not None else "?"
    reference = f"within {j.threshold:.1%} (the gate's rule)" if j.threshold is not None else "the gate's rule"
    if not measured.judged:
        return Check("side by side", j.ratio, "x", shown, reference, WARN, f"not judged: {measured.note}", details)
    verdict = FAIL if j.verdict == "regression" else WARN if j.verdict == "slower" else PASS
    note = {
        FAIL: f"beside {measured.neighbours} agents the control is slower than the gate allows: "
        "use fewer GPUs at once or more cores each (--cpus-per-gpu)",
        WARN: "measurably slower beside the others, under the gate's floor",
        PASS: "",
    }[verdict]
    return Check("side by side", j.ratio, "x", shown, reference, verdict, note, details)
