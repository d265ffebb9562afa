"""The estimate a run starts with, the first-use kernel build it counts, and meta.json's record
of the estimate against what the run took (CPU, real worker processes at tiny sizes)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from linbench import SweepRequest, run_sweep
from linbench.results.estimate_record import EstimateRecord
from linbench.runner import sizing
from linbench.runner.pipeline import Prepared, prepare
from linbench.sweep.estimate import BUILD_S, OVERHEAD_S

TINY = SweepRequest(
    variants=("cosine:chunked",), no_against=True, seq="64", heads=2, dim=16, device="cpu", budget_s=0.05
)

# No warm-up: a point's profiled call is a call more (linbench/sweep/estimate.py).
NO_WARMUP = replace(TINY, warmup_s=0.0)


def test_a_run_records_its_estimate_what_it_took_and_their_ratio(tmp_path: Path) -> None:
    outcome = run_sweep(TINY, out=tmp_path)
    record = EstimateRecord.read(json.loads((outcome.path / "meta.json").read_text()))
    assert record is not None and record.status == "complete" and record.points == 1
    assert record.estimate_s > 0 and record.actual_s is not None and record.actual_s > 0
    assert record.ratio == pytest.approx(record.actual_s / record.estimate_s)
    assert outcome.meta["estimate"]["ratio"] == round(record.actual_s / record.estimate_s, 2)


def test_an_estimate_counts_the_kernel_build_that_planning_made(monkeypatch: pytest.MonkeyPatch) -> None:
    warm = prepare(TINY)
    assert not warm.build.built and warm.estimate_record().build_estimate_s == 0
    # The build cache lacked the kernels when planning began, and planning loaded them.
    monkeypatch.setattr(sizing, "_kernels_cached", lambda: False)
    monkeypatch.setattr(sizing, "_kernels_loaded", lambda: True)
    cold = prepare(TINY)
    assert cold.build.built and cold.build.took_s is not None
    assert cold.estimate_s == pytest.approx(warm.estimate_s + BUILD_S["cpu"])
    assert cold.estimate_record().build_estimate_s == BUILD_S["cpu"]


def test_no_build_is_counted_where_planning_loaded_no_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sizing, "_kernels_cached", lambda: False)
    monkeypatch.setattr(sizing, "_kernels_loaded", lambda: False)  # no kernel impl asked for
    assert not prepare(TINY).build.built


def test_an_estimate_ranges_from_the_processes_asked_for_to_the_most_allowed() -> None:
    """A point's processes grow while they disagree, up to --max-processes: the start line
    gives the range, each process's cost times the processes, from 3 to 20."""
    prepared = prepare(replace(NO_WARMUP, processes=3, max_processes=20))
    assert prepared.most_s is not None
    one = prepare(NO_WARMUP)
    profiled = one.estimate_s - OVERHEAD_S["cpu"] - _process_s(one)
    assert prepared.estimate_s == pytest.approx(3 * (one.estimate_s - profiled) + profiled)
    assert prepared.most_s == pytest.approx(20 * (one.estimate_s - profiled) + profiled)
    assert "up to" in prepared.duration and "at most 20 a point" in prepared.duration
    assert one.most_s == one.estimate_s and "up to" not in one.duration


def test_a_cpu_run_point_counts_its_profiled_call_once() -> None:
    """The first process of a CPU run point with no warm-up to spare runs one more call,
    profiled (alloc_peak_bytes)."""
    prepared = prepare(NO_WARMUP)
    (point,) = prepared.pending
    call = prepared.plan.kind.call_s(point)
    assert prepared.estimate_s == pytest.approx(OVERHEAD_S["cpu"] + _process_s(prepared) + call)


def test_a_cpu_run_point_that_warms_up_counts_no_call_more() -> None:
    """Its profiled call is one of its warm-up calls (the tiny point's call is far shorter
    than the 0.05 s of warm-up)."""
    prepared = prepare(TINY)
    assert prepared.estimate_s == pytest.approx(OVERHEAD_S["cpu"] + _process_s(prepared))


def _process_s(prepared: Prepared) -> float:
    """One process's calls by the model: the timing policy's, and the gate's one."""
    (point,) = prepared.pending
    call = prepared.plan.kind.call_s(point)
    return prepared.plan.timing.predicted_s(call) + call
