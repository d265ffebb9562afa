"""The doctor on the CPU (device: cpu): every check runs and yields sane figures.

Timings are never asserted tightly: a busy CI machine must not fail these tests. What is
asserted is the structure, the units, and that every figure is positive and finite.
"""

from __future__ import annotations

import math

import pytest
import torch

from linbench.doctor.checks import PASS, VERDICTS, WARN
from linbench.doctor.diagnose import diagnose
from linbench.doctor.host import other_load, perf_counter_resolution

CPU = torch.device("cpu")
CPU_CHECKS = {
    "cpu load": "cores",
    "timer": "ns",
    "allocator peak": "MiB",
    "copy bandwidth": "GB/s",
    "matmul fp32": "GFLOP/s",
}


@pytest.fixture(scope="module")
def report():  # one doctor run serves every test here
    return diagnose(CPU)


def test_the_cpu_doctor_runs_every_check_with_its_unit(report) -> None:
    assert report.device == "cpu" and report.device_name
    assert {c.name: c.unit for c in report.checks} == CPU_CHECKS
    for check in report.checks:
        assert check.verdict in VERDICTS, check
        assert check.value is not None and math.isfinite(check.value) and check.value >= 0, check
        assert check.measured and check.reference and check.note
    assert report.exit_code == (1 if report.verdict == "fail" else 0)
    assert report.seconds > 0


def test_the_peak_rss_method_sees_a_known_allocation(report) -> None:
    peak = next(c for c in report.checks if c.name == "allocator peak")
    # The method linbench reads CPU points' memory with must hold here: within its tolerance
    # (pass) on a quiet machine, or approximate (warn) where the system reclaims pages of the
    # process meanwhile, which no test can stop; never off by half the allocation (fail).
    assert peak.verdict in (PASS, WARN), peak
    assert peak.details["measured_bytes"] > 0
    assert peak.details["expected_bytes"] == 64 << 20


def test_rates_are_positive_and_become_the_ceilings(report) -> None:
    rates = {c.name: c.value for c in report.checks}
    assert rates["copy bandwidth"] > 0 and rates["matmul fp32"] > 0
    ceilings = report.ceilings
    assert ceilings["device"] == "cpu" and ceilings["source"] == "doctor"
    assert ceilings["copy_gb_per_s"] == pytest.approx(rates["copy bandwidth"])
    assert ceilings["matmul_tflops"]["fp32"] * 1e3 == pytest.approx(rates["matmul fp32"])
    assert set(report.to_json()) == {"device", "device_name", "verdict", "seconds", "checks", "ceilings"}


def test_host_probes() -> None:
    clock = perf_counter_resolution(samples=100)
    assert 0 < clock.resolution_s < 1e-3 and clock.read_s > 0
    load = other_load(window_s=0.1)
    assert load.busy_cores >= 0 and load.cpu_count >= 1 and len(load.top) <= 3
    assert all(cores > 0 for _, _, cores in load.top)


def test_other_load_never_counts_more_cores_than_the_machine_has(monkeypatch: pytest.MonkeyPatch) -> None:
    """Clock ticks counted over a short window can exceed it: no process, nor all together,
    is said to use more cores than there are."""
    from linbench.doctor import host

    readings = iter([{10: ("hog", 0), 11: ("make", 0)}, {10: ("hog", 1000), 11: ("make", 1000)}])
    monkeypatch.setattr(host, "_cpu_ticks", lambda: next(readings))
    monkeypatch.setattr(host.os, "cpu_count", lambda: 2)
    load = other_load(window_s=0.01)
    assert load.busy_cores == 2.0
    assert [cores for _, _, cores in load.top] == [2.0, 2.0]
