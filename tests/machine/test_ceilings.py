"""The machine's ceilings on the CPU (device: cpu): what the probes count, and the record a run makes.

Timings are never asserted tightly: a busy CI machine must not fail these tests. What is
asserted is the structure, the units, and that every figure is positive.
"""

from __future__ import annotations

import pytest
import torch

from linbench.machine import probes
from linbench.machine.ceilings import measure_ceilings, run_ceilings
from linbench.machine.probes import Rate, copy_rate, matmul_rate

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


@pytest.mark.parametrize(
    ("tflops", "tried", "kept"),
    [
        ({256: 0.16, 512: 0.20, 1024: 0.19, 2048: 0.18}, [256, 512, 1024], 512),  # past the peak: stop
        ({256: 0.02, 512: 0.05, 1024: 0.09, 2048: 0.12, 4096: 0.13}, [256, 512, 1024, 2048], 2048),  # 50 ms
        ({256: 0.10, 512: 0.10}, [256, 512], 256),  # a doubling that gains nothing is the plateau
        # one that gains under 5% too, the better rate kept (the noise of three calls on a shared CPU)
        ({256: 0.192, 512: 0.196, 1024: 0.200, 2048: 0.199}, [256, 512], 512),
        ({256: 0.10, 512: 0.20, 1024: 0.206}, [256, 512, 1024], 1024),
    ],
)
def test_the_cpu_matmul_doubles_while_its_rate_rises_and_a_call_is_short(
    monkeypatch: pytest.MonkeyPatch, tflops: dict[int, float], tried: list[int], kept: int
) -> None:
    def scripted(device: torch.device, dtype: str, size: int, reps: int, min_s: float) -> Rate:
        rate = tflops[size]
        return Rate(rate, 2 * size**3 / (rate * 1e12) * 1e3, reps, size)

    monkeypatch.setattr(probes, "_matmul_at", scripted)
    measured = matmul_rate(CPU, "fp32")
    assert (list(measured.tried), measured.size, measured.value) == (tried, kept, tflops[kept])


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
