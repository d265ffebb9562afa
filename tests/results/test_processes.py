"""A point measured in several processes, summed up: medians of medians, spread between (no
device: synthetic processes)."""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

import pytest

from linbench.results.processes import (
    PROCESS_FIELDS,
    ProcessResult,
    gated_figures,
    gated_ms,
    log_spread,
    summarise,
)
from linbench.results.schema import COLUMNS, COMBINES, RESULT_COLUMNS


def _process(ms: float, **extra: Any) -> ProcessResult:
    measured: dict[str, Any] = {"time_ms": ms, "time_ms_p20": ms * 0.9, "time_ms_p80": ms * 1.1, "samples": 10}
    return ProcessResult("ok", **(measured | extra))


def test_the_time_is_the_median_of_the_process_medians_not_of_the_pooled_samples() -> None:
    row = summarise([_process(1.0), _process(1.1), _process(5.0, samples=1000)])
    assert row["time_ms"] == 1.1  # one slow process (with many repetitions) does not move it
    assert row["processes"] == 3 and row["samples"] == 1020
    assert (row["time_ms_proc_lo"], row["time_ms_proc_hi"]) == (1.0, 5.0)
    assert row["timing"] == "eager" and row["device_ms"] is None


def test_the_spread_is_a_robust_sigma_of_the_log_medians() -> None:
    assert log_spread([1.0]) is None
    assert log_spread([2.0, 2.0, 2.0]) == 0.0
    # log medians 0, ln 1.1, ln 1.21 (centre ln 1.1): MAD ln 1.1.
    assert log_spread([1.0, 1.1, 1.21]) == pytest.approx(1.4826 * math.log(1.1))


def test_memory_is_the_largest_reading_of_any_process() -> None:
    row = summarise([_process(1.0, peak_bytes=100), _process(1.0, peak_bytes=140), _process(1.0)])
    assert row["peak_bytes"] == 140


def test_graph_time_is_gated_only_when_every_process_has_one() -> None:
    both = [_process(2.0, device_ms=1.0, cuda_graph=True), _process(2.2, device_ms=1.1, cuda_graph=True)]
    assert summarise(both)["timing"] == "graph" and summarise(both)["device_ms"] == pytest.approx(1.05)
    assert gated_ms(both[0]) == 1.0 and gated_ms(_process(2.0)) == 2.0
    mixed = [both[0], _process(2.1)]
    assert summarise(mixed)["timing"] == "eager" and summarise(mixed)["device_ms"] is None


def test_paced_figures_are_the_spread_judged_only_where_every_process_was_paced_alike() -> None:
    def one_thread(cpu_ms: float, paced: float | None, work: str | None = "matmul") -> ProcessResult:
        return _process(cpu_ms, cpu_ms_p20=cpu_ms, threads=1, paced_p20=paced, pace_work=work)

    paced = [one_thread(1.0, 10.0), one_thread(1.3, 10.1)]
    assert gated_figures(paced, cpu=True) == [10.0, 10.1]  # the core's phase moved the CPU time 30%
    assert gated_figures(paced, cpu=False) == [1.0, 1.3]  # off a CPU: the medians
    assert gated_figures([*paced, one_thread(1.1, None, None)], cpu=True) == [1.0, 1.3, 1.1]
    assert gated_figures([paced[0], one_thread(1.1, 9.0, "other")], cpu=True) == [1.0, 1.1]


def test_values_read_back_from_csv_as_text_sum_up_the_same() -> None:
    text = [{k: "" if v is None else str(v) for k, v in _process(ms).columns().items()} for ms in (1.0, 2.0, 3.0)]
    read = [ProcessResult.from_row(row) for row in text]
    assert read[0] == _process(1.0) and summarise(read)["time_ms"] == 2.0


def test_every_column_of_a_process_is_a_field_and_every_combined_column_is_summed_up() -> None:
    """A measured column is declared once: its producer fills the field, its ``combine`` sums it up."""
    assert set(PROCESS_FIELDS) <= {field.name for field in fields(ProcessResult)}
    assert {column.combine for column in COLUMNS.values()} <= set(COMBINES)
    row = summarise([_process(1.0)])
    filled_elsewhere = ("key", "point", "gate", "rate", "process", "where")
    combined = {c.name for c in COLUMNS.values() if c.combine not in filled_elsewhere}
    assert set(row) == combined and combined <= set(RESULT_COLUMNS)


def test_a_process_s_columns_read_back_as_the_same_process() -> None:
    process = _process(1.5, cuda_graph=True, throttle_reasons="sw_power_cap", kernels_per_call=12, pid=7)
    text = {k: "" if v is None else str(v) for k, v in process.columns().items()} | {"variant": "cosine"}
    assert ProcessResult.from_row(text) == process


def test_no_process_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one process"):
        summarise([])
