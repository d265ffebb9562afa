"""What this machine is, read once for the run's facts and the kernel cache's key (CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from linbench.kernels import build
from linbench.machine.facts import cpu_model, cpuinfo_field


@pytest.mark.skipif(not Path("/proc/cpuinfo").is_file(), reason="no /proc/cpuinfo (not Linux)")
def test_a_cpuinfo_field_is_its_value_and_an_absent_one_none() -> None:
    flags = cpuinfo_field("flags")
    assert flags and ":" not in flags and flags == flags.strip()
    assert cpuinfo_field("no such field") is None
    assert cpu_model() == (cpuinfo_field("model name") or cpu_model())
    # The kernel cache is keyed on the same flags the model name is read beside.
    assert build._cpu_signature() == f"flags: {flags}"
