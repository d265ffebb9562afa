"""``linbench check``: the matrix, its exit status, and its answers to bad input."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from cli_helpers import Invoke, assert_usage_error

import linbench
from linbench.check.matrix import run_cell
from linbench.errors import ImplUnavailableError
from linbench.variants.registry import Impl, Variant, register_variant, unregister_variant

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


def _v(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    return v + 0.0 * (q + k).sum(-1, keepdim=True)


def _causal_only(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    if not causal:
        raise ValueError("planted: causal only")
    return _v(q, k, v, causal=causal)


def _one_row_short(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    return _v(q, k, v, causal=causal)[..., :-1, :]


def _nan(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    return _v(q, k, v, causal=causal) * torch.nan


def _plant(name: str, impls: tuple[Impl, ...], **fields: object) -> Iterator[str]:
    register_variant(
        Variant(name, "O = V", impls, impls[0].name, (), lambda *a: 0.0, "O(s)", "O(s)", **fields)  # type: ignore[arg-type]
    )
    yield name
    unregister_variant(name)


@pytest.fixture
def causal_only() -> Iterator[str]:
    """A variant whose reference raises for causal=False, with a wrong-shape and a NaN impl."""
    impls = (
        Impl("ref", _causal_only, "", "O(s)", "O(s)"),
        Impl("short", _one_row_short, "", "O(s)", "O(s)"),
        Impl("nan", _nan, "", "O(s)", "O(s)"),
    )
    yield from _plant("test-cli-causal-only", impls)


@pytest.fixture
def declared_causal() -> Iterator[str]:
    """The same reference, declared causal only."""
    yield from _plant("test-cli-declared-causal", (Impl("ref", _causal_only, "", "O(s)", "O(s)"),), masking=("causal",))


def test_a_reference_that_raises_is_an_error_cell_not_a_traceback(invoke: Invoke, causal_only: str) -> None:
    result = invoke("check", "--variant", f"{causal_only}:ref", *CPU, "--quiet")
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # typer.Exit(1), not a traceback
    assert f"the reference ({causal_only}:ref) raised ValueError: planted: causal only" in result.stdout
    row = next(line for line in result.stdout.splitlines() if f"{causal_only}:ref" in line and "│" in line)
    assert "ok" in row and "error" in row


def test_a_wrong_shape_is_a_fail_cell_and_its_line_names_both_shapes(invoke: Invoke, causal_only: str) -> None:
    result = invoke("check", "--variant", f"{causal_only}:short", *CPU, "--quiet")
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    row = next(line for line in result.stdout.splitlines() if f"{causal_only}:short" in line and "│" in line)
    assert "FAIL shape" in row
    assert "out has shape (1, 2, 0, 8) where the reference has (1, 2, 1, 8)" in result.stdout


def test_a_nan_output_is_said_to_be_nan(invoke: Invoke, causal_only: str) -> None:
    result = invoke("check", "--variant", f"{causal_only}:nan", *CPU, "--quiet")
    assert result.exit_code == 1, result.output
    row = next(line for line in result.stdout.splitlines() if f"{causal_only}:nan" in line and "│" in line)
    assert "FAIL NaN" in row and "inf" not in row
    assert "out is NaN at 16 of 16 elements" in result.stdout


def test_a_causal_only_variant_is_checked_causal_only_with_a_note(invoke: Invoke, declared_causal: str) -> None:
    result = invoke("check", "--variant", declared_causal, "--dtype", "fp64", *CPU, "--quiet")
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if f"{declared_causal}:ref" in line and "│" in line)
    assert "ok" in row and "skipped" in row
    assert f"{declared_causal}: causal only; its bidirectional cells are not checked" in result.stdout
    assert "1 cells checked, 0 failed, 1 skipped" in result.stdout


def _scaled(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, factor: float) -> torch.Tensor:
    return _v(q, k, v, causal=causal) * factor


def _ignores_factor(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool, factor: float) -> torch.Tensor:
    return _v(q, k, v, causal=causal)


@pytest.fixture
def checked_at_a_setting() -> Iterator[str]:
    """A variant checked at factor=2 besides its default 1, with an impl right only at the default."""
    from linbench.variants.registry import Param

    impls = (Impl("ref", _scaled, "", "O(s)", "O(s)"), Impl("ignores", _ignores_factor, "", "O(s)", "O(s)"))
    name = "test-cli-check-params"
    register_variant(
        Variant(
            name,
            "O = V·factor",
            impls,
            "ref",
            (Param("factor", 1.0, "a factor"),),
            lambda *a: 0.0,  # type: ignore[arg-type]
            "O(s)",
            "O(s)",
            check_params=({"factor": 2.0},),
        )
    )
    yield name
    unregister_variant(name)


def test_a_variant_is_also_checked_at_its_check_params(invoke: Invoke, checked_at_a_setting: str) -> None:
    """CPU. An impl right at the defaults but wrong at a declared setting fails, and the line says at which."""
    name = checked_at_a_setting
    result = invoke("check", "--variant", name, "--dtype", "fp64", *CPU, "--quiet")
    assert result.exit_code == 1, result.output
    assert f"also checked at:\n{name}: factor=2.0" in result.stdout
    assert f"{name}:ignores B1-H2-S1-Dk8-Dv8 causal float64 factor=2.0: out err" in result.stdout
    assert f"{name}:ignores B1-H2-S1-Dk8-Dv8 causal float64: out" not in result.stdout
    assert "4 cells checked, 2 failed" in result.stdout


def test_the_gated_variants_are_checked_with_strong_gates(invoke: Invoke) -> None:
    """CPU. gla's cells cover the strong regime besides the default weak one, and (a variant with
    value heads) a shape with more value heads than q/k heads."""
    result = invoke("check", "--variant", "gla:chunked", "--dtype", "fp64", *CPU, "--quiet")
    assert result.exit_code == 0, result.output
    assert "also checked at:\ngla: gate_regime=strong" in result.stdout
    assert "gla: also at B1-H2-HV6-S70-Dk16-Dv8 (more value heads than q/k heads)" in result.stdout


def _one_head_dim(dim_k: int, dim_v: int, dtype: str) -> str | None:
    return None if dim_k == dim_v else "takes one head dim for q, k and v"


def _refuses_long(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    if q.shape[-2] > 200:
        raise ImplUnavailableError("no room for 257 tokens")
    return _v(q, k, v, causal=causal)


@pytest.fixture
def partly_runnable() -> Iterator[str]:
    """A variant whose impls each take only some of check's shapes: one declares it, one finds out."""
    impls = (
        Impl("ref", _v, "", "O(s)", "O(s)"),
        Impl("samedim", _v, "", "O(s)", "O(s)", shape_support=_one_head_dim),
        Impl("short", _refuses_long, "", "O(s)", "O(s)"),
    )
    yield from _plant("test-cli-partly", impls)


def test_an_impl_that_takes_some_shapes_is_judged_on_those(invoke: Invoke, partly_runnable: str) -> None:
    # Flash attention takes one head dim: its cells were all "unavailable" on a GPU because one
    # of check's three shapes has Dv != Dk; now the other two are checked and the third named.
    result = invoke("check", "--variant", partly_runnable, "--dtype", "fp64", *CPU, "--quiet")
    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line for line in result.stdout.splitlines() if line.startswith(f"│ {partly_runnable}:")}
    for impl in ("samedim", "short"):
        assert "ok" in rows[f"{partly_runnable}:{impl}"] and "(2/3)" in rows[f"{partly_runnable}:{impl}"]
    assert f"{partly_runnable}:samedim B2-H3-S100-Dk16-Dv24 float64: takes one head dim" in result.stdout
    assert f"{partly_runnable}:short B1-H2-S257-Dk32-Dv32 float64: no room for 257 tokens" in result.stdout
    assert "6 cells checked, 0 failed" in result.stdout


def test_a_wrong_impl_is_still_a_failure_on_the_shapes_it_takes(invoke: Invoke) -> None:
    wrong = Impl("wrong", lambda q, k, v, *, causal: _v(q, k, v, causal=causal) * 1.1, "", "O(s)", "O(s)")
    impls = (
        Impl("ref", _v, "", "O(s)", "O(s)"),
        Impl("samedim", wrong.fn, "", "O(s)", "O(s)", shape_support=_one_head_dim),
    )
    name = "test-cli-partly-wrong"
    register_variant(Variant(name, "O = V", impls, "ref", (), lambda *a: 0.0, "O(s)", "O(s)"))
    try:
        result = invoke("check", "--variant", f"{name}:samedim", "--dtype", "fp64", *CPU, "--quiet")
    finally:
        unregister_variant(name)
    assert result.exit_code == 1, result.output
    assert "FAIL" in result.stdout and "(2/3)" in result.stdout


def test_a_dtype_an_impl_declares_it_cannot_take_is_unavailable_not_an_error() -> None:
    # softmax:varlen raised in fp32 on an H200, failing its cells, although it declares that
    # flash attention takes fp16 and bf16 only: the declaration is read before anything runs.
    cell = run_cell(linbench.get_variant("softmax"), "varlen", "fp32", True, torch.device("cuda"))
    assert cell.unavailable is not None and "fp16 and bf16" in cell.unavailable
    assert not cell.failures


def _forward_only(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool) -> torch.Tensor:
    if torch.is_grad_enabled() and q.requires_grad:
        raise ImplUnavailableError("planted: a forward-only kernel")
    return _v(q, k, v, causal=causal)


def _only_128(dim_k: int, dim_v: int, dtype: str) -> str | None:
    return None if (dim_k, dim_v) == (128, 128) else "planted: head size 128 only"


def test_a_forward_only_kernel_of_head_size_128_is_checked_on_its_outputs_at_128(invoke: Invoke) -> None:
    """A kernel library's impl (K = V = 128, no backward) was "unavailable" in every cell; now
    its outputs are checked at the libraries' shape, and the lines under the table say both."""
    impls = (
        Impl("ref", _v, "", "O(s)", "O(s)"),
        Impl("library", _forward_only, "", "O(s)", "O(s)", shape_support=_only_128),
    )
    name = "test-cli-library"
    register_variant(Variant(name, "O = V", impls, "ref", (), lambda *a: 0.0, "O(s)", "O(s)"))
    try:
        result = invoke("check", "--variant", f"{name}:library", "--dtype", "fp64", *CPU, "--quiet")
    finally:
        unregister_variant(name)
    assert result.exit_code == 0, result.output
    assert f"{name}:library: at B1-H2-S70-Dk128-Dv128 (none of those head sizes is theirs)" in result.stdout
    assert f"outputs only (no gradients):\n{name}:library: planted: a forward-only kernel" in result.stdout
    assert "2 cells checked, 0 failed" in result.stdout
