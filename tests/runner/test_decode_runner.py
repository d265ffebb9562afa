"""Decode points through real worker processes: measured, gated, and every failure survived."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweep_helpers import make_points, run_points

from linbench.measure.timing_policy import TimingPolicy

TOKENS = 4


def _rows(tmp_path: Path, pairs: list[tuple[str, str]], contexts: list[int], **kwargs) -> dict:
    points = make_points(pairs, contexts, mode="decode", **kwargs)
    # A limit no busy machine reaches: these tests are about what is measured, not when.
    rows = run_points(tmp_path, points, timing=TimingPolicy.for_decode(TOKENS), timeout_s=600.0)
    return {(r["variant"], r["impl"], int(r["context"])): r for r in rows}


def test_a_decode_point_reports_time_per_token_state_and_step_memory(tmp_path: Path) -> None:
    pairs = [("cosine", "recurrent"), ("softmax", "kvcache"), ("softmax", "recompute")]
    rows = _rows(tmp_path, pairs, [256, 1024], shape=(1, 2, 16))
    for row in rows.values():
        assert row["status"] == "ok", row["error"]
        assert row["mode"] == "decode" and row["context"] == row["seq"] and row["causal"] is True
        assert row["time_per_token_ms"] == row["time_ms"] and float(row["time_ms"]) > 0
        assert int(row["samples"]) == TOKENS and row["flops"] is None and row["tflops"] is None
        assert float(row["rel_err"]) < 1e-4 and row["peak_bytes"] is not None
    recurrent = [int(rows["cosine", "recurrent", c]["state_bytes"]) for c in (256, 1024)]
    assert recurrent[0] == recurrent[1] == 2 * 16 * 16 * 4  # H x Dk x Dv in fp32, whatever the context
    cache = [int(rows["softmax", "kvcache", c]["state_bytes"]) for c in (256, 1024)]
    steps = 2 + TOKENS  # two untimed steps, then the timed ones; the cache has room for all
    assert cache == [2 * 2 * (c + steps) * 16 * 4 for c in (256, 1024)]
    assert int(rows["softmax", "recompute", 1024]["state_bytes"]) == 3 * 2 * (1024 + steps) * 16 * 4


def test_the_naive_recompute_step_holds_the_score_matrix(tmp_path: Path) -> None:
    """Figure 2's quadratic case: a recompute step's peak grows with the S x S scores."""
    rows = _rows(tmp_path, [("softmax", "recompute")], [512, 2048], shape=(1, 2, 16))
    small, large = (int(rows["softmax", "recompute", c]["peak_bytes"]) for c in (512, 2048))
    assert large > 2 * 2048 * 2048 * 4  # at least one fp32 score matrix per head
    assert large > 8 * small


def test_decoders_that_fail_are_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    pairs = [("planted", name) for name in ("good", "wrong", "oom", "crash")]
    rows = _rows(tmp_path, pairs, [64, 512, 1024])
    assert {rows["planted", "good", c]["status"] for c in (64, 512, 1024)} == {"ok"}
    assert {rows["planted", "wrong", c]["status"] for c in (64, 512)} == {"mismatch"}
    assert rows["planted", "wrong", 64]["time_ms"] is None
    assert rows["planted", "oom", 64]["status"] == "ok"
    assert rows["planted", "oom", 512]["status"] == "oom"
    assert rows["planted", "oom", 1024]["status"] == "skipped" and "memory" in rows["planted", "oom", 1024]["error"]
    assert rows["planted", "crash", 512]["status"] == "crashed" and "SIGSEGV" in rows["planted", "crash", 512]["error"]


@pytest.mark.cuda
def test_a_cuda_decode_point_reads_the_allocator(tmp_path: Path) -> None:
    from dataclasses import replace

    points = [replace(p, device="cuda:0") for p in make_points([("cosine", "recurrent")], [1024], mode="decode")]
    (row,) = run_points(tmp_path, points, timing=TimingPolicy.for_decode(TOKENS))
    assert row["status"] == "ok", row["error"]
    assert int(row["state_bytes"]) == 2 * 16 * 16 * 4 and row["reserved_bytes"] is not None
