"""The device inventory: NVML's answers (through a stand-in NVML module), sysfs's NUMA facts,
and the test-only fake inventory. CPU only: no GPU or NVML library is touched."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fleet_helpers import fake_inventory_json, write_json

from linbench.fleet import inventory as inv
from linbench.fleet.cpulist import format_cpulist, parse_cpulist


def test_cpulist_round_trip() -> None:
    assert parse_cpulist("0-3,8,10-11\n") == (0, 1, 2, 3, 8, 10, 11)
    assert format_cpulist([11, 0, 1, 2, 3, 8, 10]) == "0-3,8,10-11"
    assert parse_cpulist("") == ()
    assert format_cpulist([]) == ""


@pytest.mark.parametrize("text", ["a-b", "3-1", "-1", "1-x"])
def test_cpulist_refuses_what_is_not_one(text: str) -> None:
    with pytest.raises(ValueError, match="not a CPU list"):
        parse_cpulist(text)


def test_pci_ids_are_written_as_sysfs_writes_them() -> None:
    assert inv.normal_pci_id("00000000:41:00.0") == "0000:41:00.0"
    assert inv.normal_pci_id("0000:C1:00.0") == "0000:c1:00.0"


def _sysfs(tmp_path: Path, pci: str, node: str, cpus: str) -> Path:
    folder = tmp_path / "bus" / "pci" / "devices" / pci
    folder.mkdir(parents=True)
    (folder / "numa_node").write_text(node + "\n")
    (folder / "local_cpulist").write_text(cpus + "\n")
    return tmp_path


def test_numa_node_and_local_cores_come_from_sysfs(tmp_path: Path) -> None:
    sysfs = _sysfs(tmp_path, "0000:41:00.0", "1", "16-31")
    assert inv.numa_of("00000000:41:00.0", sysfs) == (1, tuple(range(16, 32)))


def test_a_host_without_numa_has_no_node(tmp_path: Path) -> None:
    sysfs = _sysfs(tmp_path, "0000:41:00.0", "-1", "0-7")
    assert inv.numa_of("0000:41:00.0", sysfs) == (None, tuple(range(8)))
    assert inv.numa_of("0000:99:00.0", sysfs) == (None, ())


class FakeNvml:
    """Answers as pynvml does, for two GPUs: the second with MIG on and one slice."""

    NVML_DEVICE_MIG_ENABLE = 1

    def __init__(self) -> None:
        self.shut = False

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return 2

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:  # noqa: N802
        return ("gpu", index)

    def nvmlDeviceGetUUID(self, handle: Any) -> bytes:  # noqa: N802
        return f"GPU-{handle[1]}".encode() if handle[0] == "gpu" else b"MIG-slice"

    def nvmlDeviceGetPciInfo(self, handle: Any) -> Any:  # noqa: N802
        return SimpleNamespace(busId=f"00000000:{0x41 + handle[1]:02X}:00.0".encode())

    def nvmlDeviceGetName(self, handle: Any) -> str:  # noqa: N802
        return "NVIDIA H100 80GB HBM3" if handle[0] == "gpu" else "1g.10gb"

    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any:  # noqa: N802
        return SimpleNamespace(total=80 << 30 if handle[0] == "gpu" else 10 << 30)

    def nvmlDeviceGetMigMode(self, handle: Any) -> tuple[int, int]:  # noqa: N802
        if handle[1] == 0:
            raise RuntimeError("NotSupported")
        return (1, 1)

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: Any) -> int:  # noqa: N802
        return 2

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: Any, slot: int) -> Any:  # noqa: N802
        if slot == 1:
            raise RuntimeError("NotFound")
        return ("mig", handle[1])

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.shut = True


def test_nvml_inventory_lists_gpus_with_mig_slices_and_numa(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    nvml = FakeNvml()
    monkeypatch.setattr("linbench.measure.nvml.load_nvml", lambda: nvml)
    sysfs = _sysfs(tmp_path, "0000:41:00.0", "0", "0-7")
    found = inv.nvml_inventory(sysfs)
    assert found.source == "nvml" and nvml.shut
    first, second = found.devices
    assert (first.index, first.uuid, first.pci_bus_id, first.mig) == (0, "GPU-0", "0000:41:00.0", False)
    assert (first.numa_node, first.local_cpus) == (0, tuple(range(8)))
    assert second.mig and [s.uuid for s in second.mig_slices] == ["MIG-slice"]
    assert (second.numa_node, second.local_cpus) == (None, ())


def test_without_nvml_the_inventory_is_empty_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> None:
        raise OSError("libnvidia-ml.so.1: cannot open shared object file")

    monkeypatch.delenv(inv.FAKE_DEVICES_ENV, raising=False)
    monkeypatch.setattr("linbench.measure.nvml.load_nvml", missing)
    found = inv.read_inventory()
    assert found.devices == () and found.source == "none"
    assert "libnvidia-ml" in (found.error or "")


def test_the_fake_inventory_is_read_only_when_the_test_variable_names_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = write_json(tmp_path / "inv.json", fake_inventory_json(2, host="node-b", processes={"GPU-node-b-0001": [7]}))
    monkeypatch.setenv(inv.FAKE_DEVICES_ENV, str(path))
    found = inv.read_inventory()
    assert found.fake and found.host == "node-b"
    assert [d.uuid for d in found.devices] == ["GPU-node-b-0000", "GPU-node-b-0001"]
    assert found.devices[1].pci_bus_id == "0000:02:00.0"
    assert found.fake_processes == {"GPU-node-b-0001": (7,)}


def test_a_broken_fake_inventory_is_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "inv.json").write_text("{not json")
    monkeypatch.setenv(inv.FAKE_DEVICES_ENV, str(tmp_path / "inv.json"))
    with pytest.raises(ValueError, match="fake inventory"):
        inv.read_inventory()


@pytest.mark.parametrize("given", ["abc", "0", "-1"])
def test_cpu_agents_that_are_no_count_are_one_line(monkeypatch: pytest.MonkeyPatch, given: str) -> None:
    """LINBENCH_CPU_AGENTS=abc once said only "invalid literal for int() with base 10"."""
    monkeypatch.setenv(inv.CPU_AGENTS_ENV, given)
    with pytest.raises(ValueError, match=rf"LINBENCH_CPU_AGENTS='{given}': the CPU agents of --devices cpu:N"):
        inv.read_inventory()
