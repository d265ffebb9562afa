"""``linbench check``: the matrix, its exit status, and its answers to bad input."""

from __future__ import annotations

import pytest
import torch
from cli_helpers import Invoke, assert_usage_error

CPU = ("--device", "cpu")


def test_check_one_variant_passes_and_prints_the_table(invoke: Invoke) -> None:
    result = invoke("check", "--variant", "cosine", *CPU, "--quiet")
    assert result.exit_code == 0, result.output
    impls = ("cosine:quadratic (ref)", "cosine:naive", "cosine:chunked", "cosine:recurrent", "cosine:kernel")
    for impl in (*impls, "cosine:fla"):
        assert impl in result.stdout
    assert "cosine:compiled" not in result.stdout  # compiled impls run only where named
    assert "causal fp32" in result.stdout and "bidir fp32" in result.stdout
    # cosine:fla runs only where fla-core and a CUDA GPU are: unavailable, and not a failure.
    assert "10 cells checked, 0 failed, 2 unavailable" in result.stdout


def test_a_wrong_impl_fails_the_check(invoke: Invoke, planted: str) -> None:
    result = invoke("check", "--variant", planted, *CPU, "--quiet")
    assert result.exit_code == 1, result.output
    rows = {line.split()[1]: line for line in result.stdout.splitlines() if line.startswith(f"│ {planted}:")}
    assert "FAIL" in rows[f"{planted}:wrong"]
    assert "ok" in rows[f"{planted}:ref"] and "FAIL" not in rows[f"{planted}:ref"]
    assert "unavailable" in rows[f"{planted}:away"]
    assert f"{planted}:wrong B1-H2-S1-Dk8-Dv8 causal float32: out err" in result.stdout
    assert "4 cells checked, 2 failed, 2 unavailable" in result.stdout


def test_unavailable_impls_are_not_failures(invoke: Invoke, planted: str) -> None:
    result = invoke("check", "--variant", f"{planted}:ref,{planted}:away", "--dtype", "fp64", *CPU, "--quiet")
    assert result.exit_code == 0, result.output
    assert "needs a planted chip" in result.stdout
    assert "2 cells checked, 0 failed, 2 unavailable" in result.stdout


def test_variants_and_dtypes_repeat_and_split_on_commas(invoke: Invoke, planted: str) -> None:
    args = ("--variant", f"{planted}:ref", "--variant", f"{planted}:ref,{planted}:ref", "--dtype", "fp64,bf16")
    result = invoke("check", *args, "--dtype", "fp16", *CPU, "--quiet")
    assert result.exit_code == 0, result.output
    assert result.stdout.count(f"{planted}:ref (ref)") == 1
    assert "6 cells checked, 0 failed" in result.stdout


def test_unknown_variant_is_a_usage_error(invoke: Invoke) -> None:
    assert_usage_error(invoke("check", "--variant", "nosuch", *CPU), "unknown variant 'nosuch'", "cosine")


def test_unknown_impl_is_a_usage_error(invoke: Invoke) -> None:
    assert_usage_error(invoke("check", "--variant", "cosine:nosuch", *CPU), "no impl 'nosuch'", "chunked")


def test_unknown_dtype_is_a_usage_error(invoke: Invoke) -> None:
    assert_usage_error(invoke("check", "--variant", "cosine", "--dtype", "fp8", *CPU), "unknown dtype 'fp8'", "bf16")


def test_unknown_device_is_a_usage_error(invoke: Invoke) -> None:
    assert_usage_error(invoke("check", "--device", "tpu"), "device 'tpu'")


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_cuda_without_cuda_is_a_usage_error(invoke: Invoke) -> None:
    assert_usage_error(invoke("check", "--device", "cuda"), "--device cuda", "CUDA is not available")


def test_typer_usage_errors_still_exit_2(invoke: Invoke) -> None:
    assert invoke("check", "--no-such-option", *CPU).exit_code == 2


def test_check_restores_the_thread_count(invoke: Invoke, planted: str) -> None:
    before = torch.get_num_threads()
    invoke("check", "--variant", f"{planted}:ref", *CPU, "--quiet")
    assert torch.get_num_threads() == before
