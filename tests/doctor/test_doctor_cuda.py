"""The doctor on a GPU (device: cuda:0); skipped without CUDA.

As on CPU, timings are not asserted tightly: what must hold is the structure, the units,
the allocator's exactness and NVML's view of a known allocation.
"""

from __future__ import annotations

import math

import pytest
import torch

from linbench.doctor.checks import PASS, VERDICTS
from linbench.doctor.diagnose import diagnose

pytestmark = pytest.mark.cuda
GPU_CHECKS = {
    "gpu processes": "processes",
    "host load": "cores",
    "clocks idle": "MHz",
    "allocator peak": "bytes",
    "nvml vs allocator": "MiB",
    "copy bandwidth": "GB/s",
    "matmul fp32": "TFLOP/s",
    "matmul bf16": "TFLOP/s",
    "clocks under load": "MHz",
    "event timer": "µs",
    "launch overhead": "µs",
}


@pytest.fixture(scope="module")
def report():
    return diagnose(torch.device("cuda", 0))


def test_the_gpu_doctor_runs_every_check_with_its_unit(report) -> None:
    assert report.device == "cuda:0"
    assert {c.name: c.unit for c in report.checks} == GPU_CHECKS
    for check in report.checks:
        assert check.verdict in VERDICTS, check
        assert "could not measure" not in check.note, check
        if check.value is not None:
            assert math.isfinite(check.value), check
    assert report.seconds > 0  # how long is reported, not asserted: a busy machine must not fail this


def test_the_allocator_is_exact_and_nvml_tracks_it(report) -> None:
    checks = {c.name: c for c in report.checks}
    assert checks["allocator peak"].verdict == PASS
    assert checks["allocator peak"].details["measured_bytes"] == 64 << 20
    nvml = checks["nvml vs allocator"]
    assert nvml.value is not None and nvml.value > 0  # a CUDA context always costs something
    assert nvml.details["reserved_delta_bytes"] == 256 << 20
    assert nvml.verdict == PASS, nvml  # NVML grew by what the allocator reserved


def test_rates_clocks_and_ceilings(report) -> None:
    checks = {c.name: c for c in report.checks}
    assert checks["copy bandwidth"].value > 50 and checks["matmul bf16"].value > 1
    assert checks["clocks under load"].details["sm_clock_mhz"] > 0
    assert checks["launch overhead"].value > 0 and checks["event timer"].value >= 0
    assert set(report.ceilings["matmul_tflops"]) == {"fp32", "bf16"}
    assert report.ceilings["tf32"] is False
