"""--devices SPEC over a fake inventory: the grammar, and every refusal a one-line error.
CPU only."""

from __future__ import annotations

import pytest
from fleet_helpers import gpu, inventory, mig_gpu

from linbench.fleet.device_spec import select_devices
from linbench.fleet.errors import DeviceSpecError
from linbench.fleet.inventory import Inventory

EIGHT = inventory(*(gpu(i) for i in range(8)))


def labels(spec: str, inv: Inventory = EIGHT, **kw: object) -> list[str]:
    return [c.device.label for c in select_devices(spec, inv, **kw)]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("cuda:0-7", [f"cuda:{i}" for i in range(8)]),
        ("cuda:0,2,5", ["cuda:0", "cuda:2", "cuda:5"]),
        ("cuda:0-2,6", ["cuda:0", "cuda:1", "cuda:2", "cuda:6"]),
        ("cuda:3", ["cuda:3"]),
        ("all", [f"cuda:{i}" for i in range(8)]),
        ("cuda", [f"cuda:{i}" for i in range(8)]),
        (f"{gpu(4).uuid},{gpu(1).uuid}", ["cuda:4", "cuda:1"]),
        (f"cuda:0,{gpu(2).uuid.lower()}", ["cuda:0", "cuda:2"]),
    ],
)
def test_the_grammar(spec: str, expected: list[str]) -> None:
    assert labels(spec) == expected


def one_line_error(spec: str, inv: Inventory = EIGHT, **kw: object) -> str:
    with pytest.raises(DeviceSpecError) as caught:
        select_devices(spec, inv, **kw)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "\n" not in message
    assert isinstance(caught.value, ValueError)  # the CLI's usage errors: exit 2
    return message


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("cuda:0,0", "cuda:0 and cuda:0 name the same GPU"),
        (f"cuda:1,{gpu(1).uuid}", f"cuda:1 and {gpu(1).uuid} name the same GPU"),
        ("cuda:0-3,cuda:2", "name the same GPU"),
        ("cuda:9", "this host has 8 GPUs (cuda:0-7)"),
        ("cuda:5-2", "empty range"),
        ("cuda:x", "not an index"),
        ("gpu0", "not a device"),
        ("GPU-nope", "no GPU here has the UUID GPU-nope"),
        ("", "empty"),
    ],
)
def test_refusals(spec: str, words: str) -> None:
    assert words in one_line_error(spec)


def test_a_host_without_gpus() -> None:
    assert "has no GPU" in one_line_error("cuda:0", inventory())
    broken = Inventory("h", (), source="none", error="NVML unavailable: no driver")
    assert "no driver" in one_line_error("all", broken)


def test_mig_slices_need_allow_shared_and_count_as_their_parent() -> None:
    inv = inventory(gpu(0), mig_gpu(1))
    slice_uuid = inv.devices[1].mig_slices[0].uuid
    assert "pass --allow-shared-gpu" in one_line_error(slice_uuid, inv)
    assert "MIG mode on" in one_line_error("cuda:1", inv)
    assert "MIG mode on" in one_line_error("all", inv, allow_shared=True)
    (choice,) = select_devices(slice_uuid, inv, allow_shared=True)
    assert choice.shared and choice.visible_id == slice_uuid and choice.device.uuid == inv.devices[1].uuid


def test_cuda_visible_devices_bounds_what_a_run_may_use() -> None:
    hidden = {"CUDA_VISIBLE_DEVICES": f"{gpu(2).uuid},{gpu(3).uuid}"}
    assert labels("cuda:2-3", env=hidden) == ["cuda:2", "cuda:3"]
    assert "hidden by CUDA_VISIBLE_DEVICES" in one_line_error("cuda:0", env=hidden)
    by_index = {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert labels("cuda:1", env=by_index) == ["cuda:1"]
    assert "CUDA's order" in one_line_error("cuda:1", env={"CUDA_VISIBLE_DEVICES": "1"})
    assert "hidden" in one_line_error("cuda:0", env={"CUDA_VISIBLE_DEVICES": ""})
