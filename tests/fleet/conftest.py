"""The fleet's tests switch the fake inventory on for themselves (and the agent processes
they start) through LINBENCH_FAKE_DEVICES; nothing else ever sets it. The Slurm tests share
one throwaway single-node Slurm with 4 fake GPUs (scripts/slurm_local.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fleet_helpers import FakeInventory, fake_inventory_json, write_json

from linbench.fleet.inventory import FAKE_DEVICES_ENV, Inventory, read_inventory


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


SLURM_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "slurm_local.sh"


@pytest.fixture(scope="session")
def slurm_conf(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A running single-node Slurm with 4 fake GPUs; its slurm.conf, for SLURM_CONF. Skips
    where it cannot run (not root, or Slurm's Debian packages missing)."""
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("slurmctld", "slurmd", "munged", "sbatch")):
        pytest.skip("needs root and Slurm's Debian packages (scripts/slurm_local.sh install)")
    folder = tmp_path_factory.mktemp("slurm")
    started = subprocess.run(["bash", str(SLURM_SCRIPT), "start", str(folder), "4"], capture_output=True, text=True)
    try:
        if started.returncode != 0:
            pytest.skip(f"Slurm would not start here: {started.stderr.strip()[-300:]}")
        yield str(folder / "slurm.conf")
    finally:
        subprocess.run(["bash", str(SLURM_SCRIPT), "stop", str(folder)], check=False)
