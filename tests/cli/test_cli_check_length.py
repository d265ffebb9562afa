"""``linbench check --seq``: the error against length, its CSV and figure, and its bad input. CPU."""

from __future__ import annotations

import csv
from pathlib import Path

from cli_helpers import Invoke, assert_usage_error


def test_check_seq_measures_each_impl_at_each_length_and_dtype(invoke: Invoke, tmp_path: Path) -> None:
    out, plot = tmp_path / "errors.csv", tmp_path / "errors.png"
    args = ("--variant", "cosine:chunked,softmax:sdpa", "--dtype", "fp32,bf16", "--seq", "16,64", "--dim", "8")
    result = invoke("check", *args, "--device", "cpu", "--out", out, "--plot", plot)
    assert result.exit_code == 0, result.output
    assert "output error against the fp64 answer" in result.output
    with out.open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 * 2 * 2
    error = {(r["variant"], r["dtype"], r["seq"]): float(r["rel_err"]) for r in rows}
    for variant in ("cosine", "softmax"):
        for seq in ("16", "64"):
            # bf16 keeps 8 bits, fp32 24: its error is orders of magnitude larger.
            assert error[(variant, "bf16", seq)] > 100 * error[(variant, "fp32", seq)] > 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_out_without_seq_exits_2(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("check", "--variant", "cosine:chunked", "--device", "cpu", "--out", tmp_path / "e.csv")
    assert_usage_error(result, "give --seq")


def test_a_bad_length_range_exits_2(invoke: Invoke) -> None:
    assert_usage_error(invoke("check", "--variant", "cosine:chunked", "--device", "cpu", "--seq", "1k..x"))
