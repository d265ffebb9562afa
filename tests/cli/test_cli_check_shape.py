"""``linbench check --shape`` and check's one-config autotuner (CPU)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from cli_helpers import Invoke, assert_usage_error

from linbench.variants.feature_forms import autotune_pin

CPU = ("--device", "cpu")


def test_the_matrix_runs_at_the_shapes_given(invoke: Invoke, planted: str) -> None:
    shapes = ("--shape", "B1-H2-S70-Dk64-Dv64", "--shape", "B2-H1-S9-Dk128-Dv32,B1-H2-S70-Dk64-Dv64")
    result = invoke("check", "--variant", f"{planted}:ref", *shapes, "--dtype", "fp64", *CPU, "--quiet")
    assert result.exit_code == 0, result.output
    assert "at B1-H2-S70-Dk64-Dv64, B2-H1-S9-Dk128-Dv32\n" in result.stdout  # a repeat runs once
    assert "B1-H2-S1-Dk8-Dv8" not in result.stdout  # the matrix's own shapes are not run


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ("B1-H2-S70-D64", "write it as B1-H2-S300-Dk64-Dv64"),
        ("B1-H0-S70-Dk64-Dv64", "every size at least 1"),
    ],
)
def test_a_malformed_shape_is_a_usage_error(invoke: Invoke, given: str, words: str) -> None:
    assert_usage_error(
        invoke("check", "--variant", "cosine:chunked", "--shape", given, *CPU), f"--shape '{given}'", words
    )


def test_shape_beside_seq_is_a_usage_error(invoke: Invoke) -> None:
    args = ("--variant", "cosine:chunked", "--shape", "B1-H2-S70-Dk64-Dv64", "--seq", "1k")
    assert_usage_error(invoke("check", *args, *CPU), "--shape", "--seq")


@pytest.fixture
def unpinned() -> Iterator[None]:
    yield
    autotune_pin.unpin()


def test_the_variable_pins_the_autotuner_for_check_and_says_so(
    invoke: Invoke, planted: str, monkeypatch: pytest.MonkeyPatch, unpinned: None
) -> None:
    pytest.importorskip("triton")
    args = ("check", "--variant", f"{planted}:ref", "--dtype", "fp64", *CPU, "--quiet")
    result = invoke(*args)
    assert result.exit_code == 0 and autotune_pin.ENV not in result.stdout and not autotune_pin.pinned()
    monkeypatch.setenv(autotune_pin.ENV, "1")
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert f"first of its configs that compiles here, untimed ({autotune_pin.ENV}=1)" in result.stdout
    assert autotune_pin.pinned()


def test_a_shape_whose_inputs_alone_pass_the_memory_is_a_usage_error(invoke: Invoke) -> None:
    """Defect: its cells ended in a RuntimeError traceback from the allocator."""
    given = "B1-H2-S99999999999-Dk16-Dv16"
    assert_usage_error(
        invoke("check", "--variant", "cosine:chunked", "--shape", given, *CPU), f"--shape {given}", "more than the"
    )


@pytest.mark.parametrize("flag", [("--heads", "4"), ("--dim", "32")])
def test_heads_or_dim_without_seq_is_a_usage_error(invoke: Invoke, flag: tuple[str, str]) -> None:
    """They size --seq's calls; without it they were dropped and the matrix ran its own shapes."""
    assert_usage_error(invoke("check", "--variant", "cosine:chunked", *flag, *CPU), "--heads and --dim", "--shape")
