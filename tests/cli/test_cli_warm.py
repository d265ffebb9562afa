"""``linbench warm``: the points as run plans them, each warmed up in a worker, what it took;
bad input is one line and exit 2 (device: CPU; the Triton kernels' own warming is
tests/runner/test_triton_interpreted_runs.py's, under the interpreter)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import Invoke, assert_usage_error

from linbench.measure.autotune_store import FOLDER_VARIABLE

POINTS = ("--variant", "cosine:chunked", "--no-against", "--seq", "32,64", "--heads", "1", "--dim", "8")


def test_warm_plans_the_points_as_run_does_and_says_what_it_took(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FOLDER_VARIABLE, str(tmp_path / "store"))
    result = invoke("warm", *POINTS, "--device", "cpu")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("warming 2 point(s) on ")
    assert sum("cosine:chunked fwd fp32 causal" in line and "no autotuned Triton kernel" in line for line in lines) == 2
    assert lines[-1].startswith("warmed 2 point(s) in ") and "0 ran autotuned Triton kernels, 2 none" in lines[-1]
    assert f"choices kept in {tmp_path / 'store'}" in lines[-1]


def test_warm_refuses_bad_input_in_one_line(invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FOLDER_VARIABLE, str(tmp_path / "store"))
    assert_usage_error(invoke("warm", "--variant", "nosuch", "--device", "cpu"), "nosuch")
    assert_usage_error(invoke("warm", "--variant", "cosine:chunked", "--seq", "abc", "--device", "cpu"), "seq")
