"""The machine's ceilings on the CPU (device: cpu): what the probes count, and the record a run makes.

Timings are never asserted tightly: a busy CI machine must not fail these tests. What is
asserted is the structure, the units, and that every figure is positive.
"""

from __future__ import annotations

import pytest
import torch

from linbench.machine.ceilings import measure_ceilings, run_ceilings
from linbench.machine.probes import copy_rate, matmul_rate

CPU = torch.device("cpu")


def test_probes_count_read_and_write_bytes_and_two_n_cubed_flops() -> None:
    copy = copy_rate(CPU, nbytes=16 << 20, reps=3)
    assert copy.size == 16 << 20 and copy.reps == 3
    assert copy.value == pytest.approx(2 * copy.size / (copy.median_ms * 1e-3) / 1e9)
    mm = matmul_rate(CPU, "fp32", n=128, reps=3)
    assert mm.size == 128 and mm.value == pytest.approx(2 * 128**3 / (mm.median_ms * 1e-3) / 1e12)
    sized = matmul_rate(CPU, "fp32")  # sized by itself: n a power of two from 256
    assert sized.size >= 256 and sized.size & (sized.size - 1) == 0 and sized.value > 0
    assert sized.tried[0] == 256 and sized.size in sized.tried


def test_run_ceilings_on_cpu_in_process_and_in_a_child() -> None:
    here = measure_ceilings(CPU, ["fp32", "bf16"])
    assert set(here["matmul_tflops"]) == {"fp32", "bf16"} and here["source"] == "run"
    assert here["copy_gb_per_s"] > 0 and all(v > 0 for v in here["matmul_tflops"].values())
    assert "tf32" not in here and here["torch_threads"] >= 1
    child = run_ceilings(CPU, ["fp32"], isolate=True)  # the path GPU runs take
    assert "error" not in child, child
    assert child["device"] == "cpu" and child["matmul_tflops"]["fp32"] > 0


def test_run_ceilings_never_raise() -> None:
    broken = run_ceilings(CPU, ["int3"])  # no such dtype
    assert set(broken) == {"error"} and "int3" in broken["error"]
