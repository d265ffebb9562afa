"""The settings a point was timed with split its series, as the gate does not judge across them
(CPU; copies of a committed CPU run, no timing): other torch threads, CUDA-graph timing switched
on or off, another timing protocol. A field a run did not record neither splits a series nor
hides a change across it."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path

import pytest
from history_runs import edit_rows, write_history
from history_series import noisy, observations

from linbench.history.observations import Environment, of_folders
from linbench.history.series import build
from linbench.history.verdict import INCONCLUSIVE, Options, judge


def _split_reasons(runs: list[Path]) -> set[tuple[str | None, ...]]:
    return {tuple(s.split_reason for s in series.segments) for series in build(of_folders(runs))}


def test_a_run_with_other_threads_starts_a_segment_of_its_own(tmp_path: Path) -> None:
    runs = write_history(tmp_path, 4, variants=("softmax",))
    edit_rows(runs[3], lambda _, row: row | {"threads": "2"})
    assert _split_reasons(runs) == {(None, "threads 1 → 2")}


def test_cuda_graph_timing_switched_on_splits_a_series(tmp_path: Path) -> None:
    graphs = {"warmup_s": 0.2, "budget_s": 1.0, "threads": 1, "cuda_graph": True}
    runs = write_history(tmp_path, 4, variants=("softmax",), meta_changes={3: {"timing": graphs}})
    assert _split_reasons(runs) == {(None, "cuda_graph false → true")}


def test_another_timing_protocol_splits_a_series(tmp_path: Path) -> None:
    runs = write_history(tmp_path, 4, variants=("softmax",), meta_changes={4: {"timing_protocol": {"name": "v9"}}})
    assert _split_reasons(runs) == {(None, "timing_protocol processes-v1 → v9")}


def test_a_run_that_did_not_record_them_neither_splits_nor_hides_a_change(tmp_path: Path) -> None:
    runs = write_history(tmp_path, 4, variants=("softmax",), meta_changes={2: {"timing": {}, "timing_protocol": {}}})
    edit_rows(runs[1], lambda _, row: row | {"threads": ""})
    edit_rows(runs[2], lambda _, row: row | {"threads": ""})
    assert _split_reasons(runs) == {(None,)}  # runs 2 and 3 recorded neither: one segment
    edit_rows(runs[3], lambda _, row: row | {"threads": "2"})
    assert _split_reasons(runs) == {(None, "threads 1 → 2")}  # run 4 against run 1's threads


def test_a_driver_unrecorded_between_two_drivers_does_not_hide_their_change() -> None:
    found = observations(noisy(0, 1, 6, 0.01))
    drivers = ["570.1", "570.1", "", "", "580.1", "580.1"]
    found = [replace(o, environment=Environment(driver=d)) for o, d in zip(found, drivers, strict=True)]
    ((first, second),) = [s.segments for s in build(found)]
    assert len(first.observations) == 4 and second.split_reason == "driver 570.1 → 580.1"


@pytest.mark.skipif(
    importlib.util.find_spec("otava") is None, reason="the history extra (Apache Otava) is not installed"
)
def test_a_newest_run_with_other_threads_is_inconclusive_not_judged_against_the_others(tmp_path: Path) -> None:
    runs = write_history(tmp_path, 8, variants=("softmax",), step=3.0, step_from=8, point=("softmax", "sdpa", "2048"))
    edit_rows(runs[-1], lambda _, row: row | {"threads": "2"})
    history = judge(build(of_folders(runs)), Options())
    assert history.status == INCONCLUSIVE and not any(f.recent_regression for f in history.findings)
    assert all(f.unjudged == "insufficient data: 1 run(s) since threads 1 → 2, 5 needed" for f in history.findings)
