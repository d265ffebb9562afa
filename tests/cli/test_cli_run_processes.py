"""run --processes end to end (CPU): process rows, the protocol and the harness's time in
meta.json, bad values refused, and --resume refusing another machine's run."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import Invoke, assert_usage_error

from linbench.measure.pace import PACE_WORK
from linbench.results.schema import SCHEMA_VERSION

ONE_IMPL = ("--variant", "softmax:sdpa", "--no-against", "--heads", "2", "--dim", "16")
TINY = (*ONE_IMPL, "--seq", "64")
QUICK = ("--budget-s", "0.05", "--warmup-s", "0", "--device", "cpu")


def _folder(out: Path) -> Path:
    (folder,) = out.iterdir()
    return folder


def test_processes_are_rows_of_their_own_and_the_protocol_is_recorded(invoke: Invoke, tmp_path: Path) -> None:
    args = ("--processes", "3", "--max-processes", "3", "--threads", "1", "--out", tmp_path)
    result = invoke("run", *TINY, *QUICK, *args)
    assert result.exit_code == 0, result.output
    assert "harness:" in result.stdout and "wall timed" in result.stdout
    folder = _folder(tmp_path)
    with (folder / "processes.csv").open() as handle:
        processes = list(csv.DictReader(handle))
    assert [p["process"] for p in processes] == ["0", "1", "2"] and len({p["pid"] for p in processes}) == 3
    # Each process's CPU time of a call, which the gate judges for one-thread CPU processes.
    assert all(p["threads"] == "1" and float(p["cpu_ms_p20"]) > 0 for p in processes), processes
    # ... and that time over a reference call's timed beside it (measure/pace.py), which the gate
    # judges where both sides have it.
    assert all(float(p["paced_p20"]) > 0 and float(p["pace_ms"]) > 0 for p in processes), processes
    assert {p["pace_work"] for p in processes} == {PACE_WORK}
    with (folder / "results.csv").open() as handle:
        (row,) = list(csv.DictReader(handle))
    assert row["processes"] == "3" and row["timing"] == "eager" and float(row["cpu_ms_p20"]) > 0
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["schema_version"] == SCHEMA_VERSION
    protocol = meta["timing_protocol"]
    assert (protocol["name"], protocol["processes"], protocol["max_processes"]) == ("processes-v1", 3, 3)
    overhead = meta["overhead"]
    assert overhead["processes"] == 3 and 0 < overhead["timed_s"] < overhead["wall_s"]
    assert 0 < overhead["timed_fraction"] < 1
    # Run inside this test's process, the command's start is not this process's.
    assert overhead["command_s"] == 0 and overhead["command_timed_fraction"] is None


def test_a_command_of_its_own_counts_its_whole_wall_time_in_the_overhead(tmp_path: Path) -> None:
    """Its process's start, Python's and torch's imports and the planning come before the
    run's ledger starts: meta.json's command_s counts them, and the timed share of it."""
    argv = [sys.executable, "-m", "linbench", "run", *TINY, *QUICK, "--out", str(tmp_path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "of the command's" in done.stdout
    overhead = json.loads((_folder(tmp_path) / "meta.json").read_text())["overhead"]
    assert overhead["command_s"] > overhead["wall_s"] > overhead["timed_s"] > 0
    # The share is of the seconds before they were rounded to the millisecond.
    share = overhead["timed_s"] / overhead["command_s"]
    assert overhead["command_timed_fraction"] == pytest.approx(share, abs=1e-3 / overhead["command_s"])


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--processes", "0"), "processes"),
        (("--processes", "five"), "processes"),
        (("--processes", "5", "--max-processes", "3"), "--max-processes 3 is fewer than --processes 5"),
    ],
)
def test_bad_process_counts_exit_2_with_one_line_and_no_folder(
    invoke: Invoke, tmp_path: Path, args: tuple[str, ...], fragment: str
) -> None:
    assert_usage_error(invoke("run", *TINY, *QUICK, *args, "--out", tmp_path), fragment)
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


def test_resume_refuses_a_run_from_another_device_or_commit_unless_told_to_mix(invoke: Invoke, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    assert invoke("run", *ONE_IMPL, "--seq", "64,128", *QUICK, "--out", out).exit_code == 0
    folder = _folder(out)
    results = folder / "results.csv"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join(lines[:-1]))  # the 128 point is still to run
    meta = json.loads((folder / "meta.json").read_text())
    meta |= {"device_name": "NVIDIA H100 80GB HBM3", "git_sha": "0" * 40}
    (folder / "meta.json").write_text(json.dumps(meta))
    refused = invoke("run", "--resume", folder)
    assert_usage_error(refused, "--resume would mix measurements", "NVIDIA H100", "--mix")
    assert len(results.read_text().splitlines()) == 2  # nothing was appended
    mixed = invoke("run", "--resume", folder, "--mix")
    assert mixed.exit_code == 0, mixed.output
    assert len(results.read_text().splitlines()) == 3


def test_mix_without_resume_is_a_usage_error(invoke, tmp_path) -> None:
    """It was ignored without a word."""
    assert_usage_error(
        invoke("run", "--mix", "--variant", "cosine:chunked", "--seq", "64", "--device", "cpu", "--out", tmp_path),
        "--mix",
        "give --resume",
    )
