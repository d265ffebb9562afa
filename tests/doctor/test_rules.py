"""The doctor's verdict rules and nominal table, on synthetic numbers (no device involved)."""

from __future__ import annotations

import math

import pytest

from linbench.doctor import checks as rules
from linbench.doctor.checks import FAIL, MIB, PASS, WARN, Check, overall


def test_copy_bandwidth_against_nominal() -> None:
    assert rules.copy_verdict(2900, 3350, gpu=True)[0] == PASS  # 87%
    verdict, note = rules.copy_verdict(1500, 3350, gpu=True)  # 45%
    assert verdict == WARN and "45% of nominal" in note
    assert rules.copy_verdict(500, 3350, gpu=True)[0] == FAIL  # 15%
    assert rules.copy_verdict(4000, 3350, gpu=True)[0] == WARN  # above the datasheet: something is wrong


def test_matmul_rate_against_nominal() -> None:
    assert rules.matmul_verdict(700, 989.4, gpu=True)[0] == PASS
    assert rules.matmul_verdict(300, 989.4, gpu=True)[0] == WARN
    assert rules.matmul_verdict(100, 989.4, gpu=True)[0] == FAIL


@pytest.mark.parametrize("broken", [None, 0.0, -1.0, math.nan, math.inf])
def test_a_broken_measurement_fails(broken: float | None) -> None:
    assert rules.copy_verdict(broken, 3350, gpu=True)[0] == FAIL
    assert rules.matmul_verdict(broken, None, gpu=False)[0] == FAIL


def test_without_a_nominal_figure_only_clearly_broken_values_warn() -> None:
    verdict, note = rules.copy_verdict(12.0, None, gpu=False)  # a CPU: reported only
    assert verdict == PASS and note == "reported only"
    assert rules.matmul_verdict(0.1, None, gpu=False)[0] == PASS  # 100 GFLOP/s
    assert rules.matmul_verdict(0.0005, None, gpu=False)[0] == WARN  # 0.5 GFLOP/s
    assert rules.copy_verdict(0.2, None, gpu=False)[0] == WARN
    assert rules.copy_verdict(10.0, None, gpu=True)[0] == WARN  # no GPU copies at 10 GB/s


def test_the_gpu_allocator_peak_must_be_exact() -> None:
    assert rules.exact_peak_verdict(64 * MIB, 64 * MIB)[0] == PASS
    verdict, note = rules.exact_peak_verdict(64 * MIB, 64 * MIB + 512)
    assert verdict == FAIL and "+512 bytes" in note
    assert rules.exact_peak_verdict(64 * MIB, None)[0] == FAIL


def test_the_cpu_peak_rss_is_read_within_a_tolerance() -> None:
    expected = 64 * MIB
    assert rules.rss_peak_verdict(expected, expected + 3 * MIB)[0] == PASS  # pages, a little heap
    assert rules.rss_peak_verdict(expected, expected - 6 * MIB)[0] == PASS  # within 10%
    assert rules.rss_peak_verdict(expected, expected + 20 * MIB)[0] == WARN
    assert rules.rss_peak_verdict(expected, 0)[0] == FAIL  # the allocation was not seen
    assert rules.rss_peak_verdict(expected, None)[0] == FAIL  # clear_refs unavailable


def test_throttle_reasons_other_than_idle_warn() -> None:
    assert rules.throttle_verdict(0) == (PASS, "no throttling")
    assert rules.throttle_verdict(0x1)[0] == PASS  # gpu_idle
    verdict, note = rules.throttle_verdict(0x1 | 0x4 | 0x40)
    assert verdict == WARN and "sw_power_cap" in note and "hw_thermal_slowdown" in note and "gpu_idle" not in note
    assert rules.throttle_verdict(None)[0] == WARN
    verdict, note = rules.throttle_verdict(0x4)
    assert verdict == WARN and "power limit" in note
    assert rules.throttle_labels(0x8 | 0x10000) == ["hw_slowdown", "0x10000"]


def test_timers_and_launches() -> None:
    assert rules.timer_verdict(80e-9)[0] == PASS
    assert rules.timer_verdict(1e-5)[0] == WARN
    assert rules.timer_verdict(1e-2)[0] == FAIL
    assert rules.timer_verdict(0.0)[0] == FAIL
    assert rules.event_verdict(2e-6)[0] == PASS and rules.event_verdict(5e-5)[0] == WARN
    assert rules.event_verdict(0.0)[0] == PASS  # two events that share a timestamp
    assert rules.event_verdict(None)[0] == FAIL and rules.event_verdict(math.nan)[0] == FAIL
    assert rules.launch_verdict(5e-6)[0] == PASS and rules.launch_verdict(1e-4)[0] == WARN


def test_other_work_on_the_machine() -> None:
    assert rules.cpu_load_verdict(0.05, 2)[0] == PASS
    verdict, note = rules.cpu_load_verdict(1.0, 2)
    assert verdict == WARN and "50%" in note
    assert rules.gpu_others_verdict(0, 0)[0] == PASS
    assert rules.gpu_others_verdict(2, 0)[0] == WARN
    assert rules.gpu_others_verdict(0, 20)[0] == WARN
    assert rules.gpu_others_verdict(1, 90)[0] == FAIL
    assert rules.gpu_others_verdict(0, None)[0] == PASS  # no utilisation reading: processes decide


def test_nvml_must_track_the_allocator() -> None:
    assert rules.nvml_tracking_verdict(256 * MIB, 256 * MIB, 500 * MIB)[0] == PASS
    assert rules.nvml_tracking_verdict(300 * MIB, 256 * MIB, 500 * MIB)[0] == WARN
    assert rules.nvml_tracking_verdict(256 * MIB, 256 * MIB, -MIB)[0] == WARN
    assert rules.nvml_tracking_verdict(None, 256 * MIB, None)[0] == WARN


def test_the_worst_verdict_decides() -> None:
    def check(verdict: str) -> Check:
        return Check("x", 1.0, "u", "1 u", "-", verdict, "")

    assert overall([check(PASS), check(PASS)]) == PASS
    assert overall([check(PASS), check(WARN)]) == WARN
    assert overall([check(WARN), check(FAIL), check(PASS)]) == FAIL
    assert set(check(PASS).to_json()) == {
        "name",
        "value",
        "unit",
        "measured",
        "reference",
        "verdict",
        "note",
        "details",
    }
