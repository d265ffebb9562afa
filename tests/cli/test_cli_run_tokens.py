"""``linbench run --tokens``: equal work at every length, and tokens_per_s in every run row."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from cli_helpers import Invoke, assert_usage_error

TINY = (
    "--variant",
    "cosine:chunked",
    "--no-against",
    "--heads",
    "2",
    "--dim",
    "16",
    "--budget-s",
    "0.05",
    "--warmup-s",
    "0",
)


def read_rows(out: Path) -> list[dict[str, str]]:
    (folder,) = out.iterdir()
    with (folder / "results.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_a_token_budget_sets_each_point_s_batch(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("run", *TINY, "--seq", "64,128", "--tokens", "256", "--device", "cpu", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    rows = read_rows(tmp_path)
    assert [(r["batch"], r["seq"], r["status"]) for r in rows] == [("4", "64", "ok"), ("2", "128", "ok")]
    for row in rows:
        expected = int(row["batch"]) * int(row["seq"]) / (float(row["time_ms"]) / 1e3)
        assert float(row["tokens_per_s"]) == pytest.approx(expected, rel=1e-3)


def test_tokens_per_s_is_filled_for_every_ok_run_row(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("run", *TINY, "--seq", "64", "--batch", "3", "--device", "cpu", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    (row,) = read_rows(tmp_path)
    assert float(row["tokens_per_s"]) == pytest.approx(3 * 64 / (float(row["time_ms"]) / 1e3), rel=1e-3)


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--seq", "96", "--tokens", "256"), ("tokens: 256 is not a multiple of seq 96",)),
        (("--seq", "512", "--tokens", "256"), ("the batch would be 0",)),
        (("--seq", "64", "--tokens", "256", "--batch", "2"), ("drop --batch",)),
    ],
)
def test_a_budget_that_does_not_divide_exits_2_before_any_folder(
    invoke: Invoke, tmp_path: Path, args: tuple[str, ...], fragments: tuple[str, ...]
) -> None:
    out = tmp_path / "out"
    assert_usage_error(invoke("run", *TINY, *args, "--device", "cpu", "--out", out), *fragments)
    assert not out.exists()
