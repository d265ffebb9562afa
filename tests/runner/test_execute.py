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


def test_a_gpu_point_s_nvml_sampler_waits_while_its_repetitions_are_queued(monkeypatch: Any) -> None:
    """The timer is handed the sampler's quiet lock (device: none; CUDA's timer, peak memory,
    synchronize and NVML stood in)."""
    from linbench.measure import cuda_memory
    from linbench.measure.nvml import NvmlSampler
    from linbench.measure.timer import Timing
    from linbench.measure.timing_policy import TimingPolicy
    from linbench.runner import execute
    from linbench.runner.kind_protocol import Task
    from linbench.runner.kinds import RUN
    from linbench.sweep.points import Point

    samplers: list[NvmlSampler] = []
    holds: list[object] = []

    def sampler(index: int) -> NvmlSampler:
        samplers.append(NvmlSampler(index))
        return samplers[-1]

    def timed(fn: object, device: object, policy: object, before: object = None, hold: object = None) -> Timing:
        holds.append(hold)
        return Timing((1.0,))

    class Peak:
        peak_bytes, reserved_bytes = 10, 20

        def __enter__(self) -> Any:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(execute, "NvmlSampler", sampler)
    monkeypatch.setattr(execute, "time_with_policy", timed)
    monkeypatch.setattr(cuda_memory, "CudaPeak", lambda device: Peak())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr("linbench.measure.nvml.load_nvml", lambda: (_ for _ in ()).throw(ImportError("no NVML")))
    point = Point("cosine", "recurrent", "fwd", True, "fp32", "cuda:0", Shape(1, 2, 16, 8, 8))
    task = Task(job="measure", point=point, timing=TimingPolicy.for_device("cuda"), kind=RUN)
    work = SimpleNamespace(before=lambda: None, run=lambda: None)
    result = execute._measure_cuda(task, cast(Any, work), torch.device("cuda", 0), 0.0)
    assert result.time_ms == 1.0 and holds == [samplers[0].quiet]
