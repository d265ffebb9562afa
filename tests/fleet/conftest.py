"""The fleet's tests switch the fake inventory on for themselves (and the agent processes
they start) through LINBENCH_FAKE_DEVICES; nothing else ever sets it. The agents they start
import the test suite's point runners (fake_runner.py, named ``fake_runner:<function>``) from
this folder, which every test here puts on their PYTHONPATH."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from fleet_helpers import FakeInventory, fake_inventory_json, on_agent_path, write_json

from linbench.fleet.inventory import FAKE_DEVICES_ENV, Inventory, read_inventory


@pytest.fixture(autouse=True)
def _runners_on_the_agents_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", on_agent_path(os.environ.get("PYTHONPATH", "")))


@pytest.fixture
def fake_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeInventory:
    """``fake_gpus(4, **json)``: writes a fake inventory of 4 GPUs (extra top-level keys as
    given), switches it on for this test and its subprocesses, and returns it as read."""

    def make(count: int, **extra: Any) -> Inventory:
        data = fake_inventory_json(count, **{k: extra.pop(k) for k in ("name", "cpus", "host") if k in extra})
        data |= extra
        path = write_json(tmp_path / "fake-gpus.json", data)
        monkeypatch.setenv(FAKE_DEVICES_ENV, str(path))
        return read_inventory()

    return make
