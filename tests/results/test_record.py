"""A results row is built in one place, from a point's facts, its check and its processes (no device)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from linbench.results.record import (
    PER_TOKEN,
    TIME_COLUMNS,
    Checked,
    PointFacts,
    ProcessResult,
    failure_row,
    first_failure,
    point_row,
    process_row,
    row_key,
)
from linbench.results.schema import PROCESS_COLUMNS, RESULT_COLUMNS, checked

KEY = {
    **{"variant": "cosine", "impl": "chunked", "mode": "fwd", "causal": True, "dtype": "fp32", "device": "cpu"},
    **{"batch": 2, "heads": 8, "seq": 1024, "dim_k": 64, "dim_v": 64},
}
FACTS = PointFacts(key=KEY, device_name="Test CPU", params="chunk_size=64", flops=4e9, tokens=2 * 1024)
CHECKED = Checked(rel_err=1e-7, check_seq=1024)


def _ok(ms: float) -> ProcessResult:
    return ProcessResult("ok", time_ms=ms, time_ms_p20=ms, time_ms_p80=ms, samples=5, peak_bytes=100)


def test_an_ok_point_s_row_is_its_facts_its_check_its_processes_and_its_rates() -> None:
    row = point_row(FACTS, CHECKED, [_ok(2.0), _ok(4.0), _ok(3.0)])
    checked(row, RESULT_COLUMNS, "results.csv")  # every column it names is declared
    assert {k: row[k] for k in KEY} == KEY and row["device_name"] == "Test CPU" and row["params"] == "chunk_size=64"
    assert (row["status"], row["time_ms"], row["processes"], row["samples"]) == ("ok", 3.0, 3, 15)
    assert (row["rel_err"], row["check_seq"]) == (1e-7, 1024)
    assert row["tflops"] == pytest.approx(4e9 / 3e-3 / 1e12)
    assert row["tokens_per_s"] == pytest.approx(2048 / 3e-3) and row.get("time_per_token_ms") is None


def test_a_point_that_makes_a_token_per_call_reports_the_time_per_token() -> None:
    facts = PointFacts(key=KEY | {"mode": "decode"}, device_name="Test CPU", context=1024, rate=PER_TOKEN)
    row = point_row(facts, Checked(), [_ok(0.5)])
    assert row["time_per_token_ms"] == 0.5 and row["context"] == 1024
    assert "tokens_per_s" not in row and row["flops"] is None and "tflops" not in row


def test_a_failure_keeps_what_the_process_recorded_says_where_and_reports_no_time() -> None:
    processes = [_ok(1.0), ProcessResult("crashed", error="worker killed by SIGKILL", time_ms=9.0)]
    failed = first_failure(processes)
    assert failed is processes[1]
    row = failure_row(FACTS, failed, CHECKED, processes=2, where="process 2 of 2")
    assert row["status"] == "crashed" and row["error"] == "process 2 of 2: worker killed by SIGKILL"
    assert all(row[column] is None for column in TIME_COLUMNS)
    assert row["processes"] == 2 and row["check_seq"] == 1024 and row["flops"] == 4e9


def test_a_skipped_point_has_neither_check_nor_processes() -> None:
    row = failure_row(FACTS, ProcessResult("skipped", error="timed out at a smaller point"))
    assert row["status"] == "skipped" and row["error"] == "timed out at a smaller point"
    assert "processes" not in row and "check_seq" not in row


def test_the_key_of_a_row_is_its_key_columns_as_csv_text() -> None:
    process = process_row(FACTS, ProcessResult("ok", process=0, pid=42))
    checked(process, PROCESS_COLUMNS, "processes.csv")
    assert row_key(process) == row_key({k: str(v) for k, v in KEY.items()})
    # A row without kv_heads, chunk and v_heads (from an older run): kv_heads = v_heads = heads, no chunk;
    # without tokens_per_step and state_dtype (before schema 10): empty, a point that is not served.
    assert row_key(KEY) == (
        "cosine",
        "chunked",
        "fwd",
        "True",
        "fp32",
        "cpu",
        "2",
        "8",
        "1024",
        "64",
        "64",
        "8",
        "",
        "8",
        "",
        "",
        "",
    )
    assert row_key(KEY | {"kv_heads": 2, "chunk": None})[-6:-3] == ("2", "", "8")
    assert row_key(KEY | {"kv_heads": "", "chunk": 32})[-6:-3] == ("8", "32", "8")
    assert row_key(KEY | {"v_heads": 16})[-4] == "16"
    assert row_key(KEY | {"tokens_per_step": 4, "state_dtype": "bf16"})[-3:-1] == ("4", "bf16")
    assert row_key(KEY | {"state_layout": "k-last"})[-1] == "k-last"


def test_the_facts_a_results_row_recorded_read_back_from_its_text() -> None:
    text = {k: str(v) for k, v in FACTS.columns().items()} | {"context": "", "gqa": ""}
    filled = {
        "kv_heads": "8",
        "chunk": "",
        "v_heads": "8",
        "tokens_per_step": "",
        "state_dtype": "",
        "state_layout": "",
    }  # what an older row without them reads as
    expected = FACTS.columns() | {k: str(v) for k, v in KEY.items()} | filled
    assert PointFacts.from_row(text, FACTS.rate).columns() == expected


def test_a_cuda_point_s_row_splits_its_time_and_gives_tokens_per_joule() -> None:
    """host_overhead_ms = time_ms − kernel_ms; tokens_per_j = the call's tokens / joules per call."""
    process = replace(_ok(3.0), kernel_ms=2.25, energy_j=0.5, power_w=400.0, kernel_names="gemm;softmax")
    row = point_row(FACTS, CHECKED, [process])
    assert row["host_overhead_ms"] == pytest.approx(0.75)
    assert row["tokens_per_j"] == pytest.approx(2 * 1024 / 0.5)
    assert row["kernel_names"] == "gemm;softmax"


def test_a_row_without_a_kernel_time_or_energy_has_no_split() -> None:
    row = point_row(FACTS, CHECKED, [replace(_ok(3.0), device_split_note="CPU: none")])
    assert row.get("host_overhead_ms") is None and row.get("tokens_per_j") is None
    assert row["device_split_note"] == "CPU: none"
