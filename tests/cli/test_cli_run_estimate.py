"""What run says of its estimate: the first-use kernel build counted, an idle machine's figure
on a busy one, and at the end what the run took against it (CPU only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import Invoke

from linbench.machine import load
from linbench.runner import sizing
from linbench.sweep.estimate import BUILD_S, format_duration

SMALL = ("--heads", "2", "--dim", "16", "--budget-s", "0.05", "--device", "cpu")
ARGS = ("run", "--variant", "cosine:chunked", "--no-against", "--seq", "64", *SMALL)


@pytest.fixture
def idle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load, "load_average", lambda: [0.5, 0.5, 0.5])


def test_a_dry_run_counts_the_kernel_build_that_planning_made(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, idle: None
) -> None:
    plain = invoke(*ARGS, "--dry-run")
    assert plain.exit_code == 0, plain.output
    assert "kernel build" not in plain.stdout and "busy" not in plain.stdout
    monkeypatch.setattr(sizing, "_kernels_cached", lambda: False)
    monkeypatch.setattr(sizing, "_kernels_loaded", lambda: True)
    cold = invoke(*ARGS, "--dry-run")
    # The build's figure is the estimate's declared one, formatted as every duration is.
    build_s = format_duration(BUILD_S["cpu"])
    assert f"with the first-use kernel build (about {build_s}; it took" in cold.stdout
    assert "which this dry run has done: a run now would not" in cold.stdout


def test_on_a_busy_machine_the_estimate_says_it_is_an_idle_machine_s(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(load, "load_average", lambda: [9.0, 5.0, 3.0])
    monkeypatch.setattr(load, "cpu_cores", lambda: 2)
    result = invoke(*ARGS, "--dry-run")
    assert "on an idle machine; this one is busy (load average 9.0 on 2 cores): expect longer" in result.stdout


def test_a_run_ends_with_what_it_took_against_its_estimate(invoke: Invoke, tmp_path: Path, idle: None) -> None:
    result = invoke(*ARGS, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    (folder,) = tmp_path.iterdir()
    estimate = json.loads((folder / "meta.json").read_text())["estimate"]
    line = next(line for line in result.stdout.splitlines() if line.startswith("time: took"))
    assert f"took {estimate['actual_s']:.0f} s against an estimate of {estimate['estimate_s']:.0f} s" in line
    assert f"{estimate['ratio']:.2f}× the estimate" in line
