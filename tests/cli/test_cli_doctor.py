"""``linbench doctor`` end to end (device: cpu unless a test says otherwise), bad input, and the
ceilings ``run`` records for ``report``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from cli_helpers import Invoke, assert_usage_error
from result_rows import result_row
from synthetic_runs import write_run

from linbench.results.store import RunStore

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
    args = ("run", "--variant", "cosine:chunked", "--no-against", "--dtype", "fp32,bf16", "--device", "cpu")
    result = invoke(*args, *TINY, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    (folder,) = tmp_path.iterdir()
    ceilings = json.loads((folder / "meta.json").read_text())["ceilings"]
    assert "error" not in ceilings, ceilings
    assert ceilings["device"] == "cpu" and ceilings["copy_gb_per_s"] > 0
    assert set(ceilings["matmul_tflops"]) == {"fp32", "bf16"}
    report = invoke("report", folder, "--json")
    assert report.exit_code == 0, report.output
    roofline = json.loads(report.stdout)["roofline"]
    assert {r["dtype"] for r in roofline} == {"fp32", "bf16"}
    assert all(r["bandwidth_fraction"] > 0 and r["flops_fraction"] > 0 for r in roofline)


def test_report_shows_the_roofline_only_for_runs_with_ceilings(invoke: Invoke, tmp_path: Path) -> None:
    rows = [
        result_row(s, time_ms=s / 1024) | {"flops": 1e9, "tflops": 1e9 / (s / 1024 * 1e-3) / 1e12} for s in (1024, 2048)
    ]
    folder = write_run(tmp_path, rows)
    assert "roofline" not in json.loads(invoke("report", folder, "--json").stdout)
    assert "ceilings" not in invoke("report", folder).stdout
    store = RunStore(folder)
    store.write_meta(
        store.read_meta() | {"ceilings": {"device": "cpu", "copy_gb_per_s": 10.0, "matmul_tflops": {"fp32": 0.1}}}
    )
    table = invoke("report", folder)
    assert table.exit_code == 0, table.output
    assert "Against the ceilings" in table.stdout and "of copy" in table.stdout
    markdown = invoke("report", folder, "--format", "md").stdout
    assert "| impl | mode | dtype | shape | time | bandwidth | of copy |" in markdown
    (record, _) = json.loads(invoke("report", folder, "--json").stdout)["roofline"]
    assert record["bandwidth_fraction"] == pytest.approx(8 * 1024 * 256 * 4 / 1e6 / 10.0)


@pytest.mark.parametrize("flag", [("--cpus-per-gpu", "2"), ("--oversubscribe",)])
def test_doctor_s_placement_flags_without_devices_are_usage_errors(invoke: Invoke, flag: tuple[str, ...]) -> None:
    """They were ignored without a word (--cpus-per-gpu -1 too)."""
    assert_usage_error(invoke("doctor", *flag, "--device", "cpu"), "give --devices")
