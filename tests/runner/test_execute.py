"""What a worker reports for a gate whose impl cannot take the point, and from the NVML sampler
(device: cpu; the sampler's readings stood in)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import torch

from linbench.check.correctness import CaseResult, Shape
from linbench.measure.nvml import GPU_IDLE
from linbench.results.processes import ProcessResult
from linbench.runner.execute import gate_result, with_nvml


def test_an_impl_that_cannot_take_a_point_is_skipped_with_its_reason() -> None:
    """An SDPA backend refusing a shape is where the impl stops, not a failure of the run."""
    case = CaseResult("softmax", "sdpa-flash", Shape(1, 2, 16, 8, 16), True, torch.float32)
    case.unavailable = "SDPA's flash backend cannot run: Flash attention requires the same last dimension"
    result = gate_result(case)
    assert result.status == "skipped"
    assert "same last dimension" in str(result.error)


def test_the_nvml_columns_leave_out_the_idle_reason() -> None:
    """The GPU idles between the kernels of a small op: that reason says nothing about the point."""
    readings = SimpleNamespace(
        peak_used_bytes=300, min_sm_clock_mhz=1200, max_temp_c=60, throttle_mask=0x4 | GPU_IDLE, error=None
    )
    result = with_nvml(ProcessResult("ok", time_ms=1.0), cast(Any, readings))
    assert result == ProcessResult(
        "ok", time_ms=1.0, nvml_peak_bytes=300, sm_clock_mhz=1200, temp_c=60, throttle_reasons="sw_power_cap"
    )


def test_a_cpu_point_has_no_kernel_time_or_energy_and_says_why() -> None:
    from linbench.measure.timing_policy import TimingPolicy
    from linbench.runner.execute import CPU_SPLIT_NOTE, run_measure
    from linbench.runner.kind_protocol import Task
    from linbench.runner.kinds import RUN
    from linbench.sweep.points import Point

    point = Point("cosine", "recurrent", "fwd", True, "fp32", "cpu", Shape(1, 2, 16, 8, 8))
    timing = TimingPolicy.for_device("cpu", budget_s=0.01)
    result = run_measure(Task(job="measure", point=point, timing=timing, kind=RUN, threads=1))
    assert result.status == "ok", result.error
    assert (result.kernel_ms, result.energy_j, result.power_w) == (None, None, None)
    assert result.device_split_note == CPU_SPLIT_NOTE
