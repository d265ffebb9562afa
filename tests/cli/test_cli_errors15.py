"""What a demanding new user hit (issue 15): exit statuses that tell a failed sweep from a
finished one, and bad input or a full disk reported in one line, never a traceback."""

from __future__ import annotations

import csv
from pathlib import Path

from cli_helpers import Invoke

PLANTED_FILE = Path(__file__).parents[1] / "plugins" / "planted.py"
SMALL = ("--heads", "2", "--dim", "16", "--budget-s", "0.05", "--device", "cpu")
TINY = ("--seq", "64", *SMALL)
TINY_DECODE = ("--context", "64", "--tokens", "2", "--heads", "2", "--dim", "16", "--device", "cpu")


def statuses(out: Path) -> set[tuple[str, str]]:
    (folder,) = out.iterdir()
    with (folder / "results.csv").open() as handle:
        return {(row["impl"], row["status"]) for row in csv.DictReader(handle)}


def test_run_exits_1_when_a_point_fails_and_says_so(invoke: Invoke, tmp_path: Path) -> None:
    args = ("run", "--plugin", PLANTED_FILE, "--variant", "planted:good,planted:wrong", "--no-baseline", *TINY)
    result = invoke(*args, "--out", tmp_path, "--quiet")
    assert result.exit_code == 1, result.output
    assert statuses(tmp_path) == {("good", "ok"), ("wrong", "mismatch")}
    summary = result.stdout.strip().splitlines()[-1]
    assert "1 mismatch" in summary and "1 point(s) failed" in summary and "planted:wrong" in summary
    assert "exit 1" in summary and "--allow-failures" in summary
    assert "Traceback" not in result.output


def test_allow_failures_exits_0_anyway(invoke: Invoke, tmp_path: Path) -> None:
    args = ("run", "--plugin", PLANTED_FILE, "--variant", "planted:wrong", "--no-baseline", *TINY)
    result = invoke(*args, "--out", tmp_path, "--quiet", "--allow-failures")
    assert result.exit_code == 0, result.output
    assert "exit 0 (--allow-failures)" in result.stdout


def test_oom_and_timeout_are_the_sweep_s_reach_and_exit_0(invoke: Invoke, tmp_path: Path) -> None:
    args = ("run", "--plugin", PLANTED_FILE, "--variant", "planted:oom,planted:hang", "--no-baseline", *SMALL)
    result = invoke(*args, "--seq", "512", "--timeout-s", "2", "--out", tmp_path, "--quiet")
    assert statuses(tmp_path) == {("oom", "oom"), ("hang", "timeout")}
    assert result.exit_code == 0, result.output
    assert "failed" not in result.stdout


def test_decode_exits_1_when_a_decoder_fails(invoke: Invoke, tmp_path: Path) -> None:
    args = ("decode", "--plugin", PLANTED_FILE, "--variant", "planted:good,planted:wrong", "--no-baseline")
    result = invoke(*args, *TINY_DECODE, "--out", tmp_path, "--quiet")
    assert result.exit_code == 1, result.output
    assert statuses(tmp_path) == {("good", "ok"), ("wrong", "mismatch")}
    allowed = invoke(*args, *TINY_DECODE, "--out", tmp_path / "again", "--quiet", "--allow-failures")
    assert allowed.exit_code == 0, allowed.output
