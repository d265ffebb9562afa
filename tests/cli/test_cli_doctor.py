"""``linbench doctor`` end to end (device: cpu unless a test says otherwise), bad input, and the
ceilings ``run`` records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from cli_helpers import Invoke, assert_usage_error

TINY = ("--seq", "64", "--heads", "2", "--dim", "16", "--budget-s", "0.05")


def test_doctor_prints_a_table_of_checks(invoke: Invoke) -> None:
    result = invoke("doctor", "--device", "cpu")
    assert result.exit_code in (0, 1), result.output
    for name in ("cpu load", "timer", "allocator peak", "copy bandwidth", "matmul fp32"):
        assert name in result.stdout
    assert "linbench doctor: cpu" in result.stdout and "GB/s" in result.stdout
    assert ("fail:" in result.stdout) == (result.exit_code == 1)


def test_doctor_json_has_every_check_and_the_ceilings(invoke: Invoke) -> None:
    result = invoke("doctor", "--device", "cpu", "--json")
    report = json.loads(result.stdout)
    assert report["device"] == "cpu"
    assert result.exit_code == (1 if report["verdict"] == "fail" else 0)
    assert [c["name"] for c in report["checks"]] == [
        "cpu load",
        "timer",
        "allocator peak",
        "copy bandwidth",
        "matmul fp32",
    ]
    assert all(c["verdict"] in ("pass", "warn", "fail") for c in report["checks"])
    assert report["ceilings"]["copy_gb_per_s"] > 0 and report["ceilings"]["matmul_tflops"]["fp32"] > 0


@pytest.mark.parametrize(
    ("device", "fragments"),
    [("tpu", ("unknown device", "'tpu'")), ("mps", ("unsupported device", "'mps'"))],
)
def test_doctor_bad_devices_are_usage_errors(invoke: Invoke, device: str, fragments: tuple[str, ...]) -> None:
    assert_usage_error(invoke("doctor", "--device", device), *fragments)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_doctor_on_cuda_without_cuda_is_a_usage_error(invoke: Invoke) -> None:
    assert_usage_error(invoke("doctor", "--device", "cuda"), "--device cuda", "CUDA is not available")


@pytest.mark.cuda
def test_doctor_on_a_gpu_that_does_not_exist_is_a_usage_error(invoke: Invoke) -> None:
    assert_usage_error(invoke("doctor", "--device", "cuda:99"), "no such GPU")


def test_run_records_its_ceilings_in_meta(invoke: Invoke, tmp_path: Path) -> None:
    args = ("run", "--variant", "cosine:chunked", "--no-baseline", "--dtype", "fp32,bf16", "--device", "cpu")
    result = invoke(*args, *TINY, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    (folder,) = tmp_path.iterdir()
    ceilings = json.loads((folder / "meta.json").read_text())["ceilings"]
    assert "error" not in ceilings, ceilings
    assert ceilings["device"] == "cpu" and ceilings["copy_gb_per_s"] > 0
    assert set(ceilings["matmul_tflops"]) == {"fp32", "bf16"}
