"""Fake devices, inventories and sweeps for the fleet's tests (all on the CPU: no GPU is used)."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from linbench.fleet.inventory import Device, Inventory, MigSlice
from linbench.results.schema import KEY_COLUMNS

# This folder: where the agents a test starts find its point runners (fake_runner.py).
RUNNERS_DIR = Path(__file__).resolve().parent
# The type of the fake_gpus fixture (tests/fleet/conftest.py).
FakeInventory = Callable[..., Inventory]


def gpu(index: int, name: str = "Fake H100", numa: int | None = 0, cpus: tuple[int, ...] = (), **kw: Any) -> Device:
    """A fake GPU; its UUID and PCI id follow its index."""
    return Device(
        index=index,
        uuid=f"GPU-{index:08x}-0000-0000-0000-fake{index:08x}",
        pci_bus_id=f"0000:{index + 1:02x}:00.0",
        name=name,
        memory_bytes=80 << 30,
        numa_node=numa,
        local_cpus=cpus,
        **kw,
    )


def mig_gpu(index: int, slices: int = 2) -> Device:
    return gpu(
        index,
        mig=True,
        mig_slices=tuple(MigSlice(f"MIG-{index:04x}-{s:04x}-fake", "1g.10gb", 10 << 30) for s in range(slices)),
    )


def inventory(*devices: Device, host: str = "node-a") -> Inventory:
    return Inventory(host, tuple(devices), source="fake")


def fake_inventory_json(
    count: int, *, name: str = "Fake H100", cpus: str = "0-1", host: str = "node-a", start: int = 0, **extra: Any
) -> dict[str, Any]:
    """The JSON a fake inventory file holds: ``count`` GPUs of one model."""
    return {
        "host": host,
        "devices": [
            {
                "uuid": f"GPU-{host}-{start + i:04d}",
                "pci_bus_id": f"00000000:{start + i + 1:02X}:00.0",
                "name": name,
                "memory_bytes": 80 << 30,
                "numa_node": 0,
                "local_cpus": cpus,
            }
            for i in range(count)
        ],
        **extra,
    }


def write_json(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data))
    return path


def sweep_keys(
    dtypes: tuple[str, ...] = ("fp32", "bf16"),
    heads: tuple[int, ...] = (4, 8),
    seqs: tuple[int, ...] = (128, 256, 512),
    impls: tuple[str, ...] = ("chunked", "kernel"),
    device: str = "cuda",
) -> list[tuple[str, ...]]:
    """Point keys (KEY_COLUMNS order) in the order linbench plans them: lengths grow, and at
    each length every impl runs; 2 dtypes x 2 head counts make 4 scenarios."""
    keys = []
    for dtype in dtypes:
        for seq in seqs:
            for h in heads:
                for impl in impls:
                    # kv_heads = v_heads = heads, no chunk, not served (no tokens per step,
                    # state dtype or state layout)
                    sizes = ("1", str(h), str(seq), "64", "64", str(h), "", str(h), "", "", "")
                    keys.append(("cosine", impl, "fwd", "True", dtype, device, *sizes))
    assert all(len(key) == len(KEY_COLUMNS) for key in keys)  # a key column added: add it above
    return keys


def on_stall(marker: Path, act: Callable[[int], None], wait_s: float = 300.0) -> threading.Thread:
    """Call ``act(pid)`` once the agent stalled by the fake inventory (its ``stall`` entry)
    has written its pid into ``marker``; a bound of ``wait_s`` on waiting, never a measure."""

    def watch() -> None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            text = marker.read_text() if marker.exists() else ""
            if text.endswith("\n"):
                act(int(text))
                return
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def on_agent_path(pythonpath: str) -> str:
    """``pythonpath`` (a PYTHONPATH value) with this folder first, so that an agent process
    can import the runners named ``fake_runner:<function>``."""
    return os.pathsep.join([str(RUNNERS_DIR), *(p for p in pythonpath.split(os.pathsep) if p)])
