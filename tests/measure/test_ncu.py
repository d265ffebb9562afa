"""Nsight Compute's command and the summary read back from its CSV (CPU; no ncu needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from linbench.measure.ncu import METRICS, KernelProfile, parse_summary, profile_command, summary_command, summary_csv

RAW = "\n".join(
    [
        "==PROF== Disconnected from process 1234",
        '"ID","Process ID","Kernel Name","' + '","'.join(METRICS.values()) + '"',
        '"","","","nsecond","%","%","%"',
        '"0","1234","chunk_gated_delta_rule_fwd_kernel_h","12,500","81.2","40.5","37.9"',
        '"1","1234","chunk_fwd_kernel_o","3000","n/a","66.0","50.0"',
    ]
)


def test_the_summary_has_each_launch_its_duration_in_microseconds_and_its_shares() -> None:
    first, second = parse_summary(RAW)
    assert first == KernelProfile("chunk_gated_delta_rule_fwd_kernel_h", 12.5, 81.2, 40.5, 37.9)
    assert second.duration_us == 3.0 and second.dram_pct is None  # n/a: not reported
    text = summary_csv([first, second])
    assert text.splitlines()[0] == "kernel,duration_us,dram_pct,compute_pct,occupancy_pct"
    assert text.splitlines()[2] == "chunk_fwd_kernel_o,3.0,,66.0,50.0"


def test_output_without_a_header_has_no_launches() -> None:
    assert parse_summary("==ERROR== no kernels were profiled\n") == []


def test_the_commands_profile_from_the_call_s_start_and_read_base_units() -> None:
    command = profile_command("ncu", Path("r.ncu-rep"), "source", ["python", "-m", "x"])
    assert command[:3] == ["ncu", "--profile-from-start", "off"]
    assert command[command.index("--set") + 1] == "source"
    assert command[-3:] == ["python", "-m", "x"] and "r.ncu-rep" in command
    assert "--print-units" in summary_command("ncu", Path("r.ncu-rep"))
    with pytest.raises(ValueError, match="sets: basic"):
        profile_command("ncu", Path("r"), "everything", [])


def test_ncu_profiles_at_the_clocks_linbench_times_at() -> None:
    """ncu locks the clocks to base by default; linbench's timings run at whatever the GPU
    boosts to, so the profile must leave the clocks alone for its durations to compare."""
    command = profile_command("ncu", Path("r.ncu-rep"), "full", ["python"])
    at = command.index("--clock-control")
    assert command[at + 1] == "none" and at < command.index("python")
