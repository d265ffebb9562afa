"""``linbench run`` end to end: a tiny sweep, bad input, plugins, and kill -9 then --resume."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch
from cli_helpers import Invoke, assert_usage_error, linbench_argv

from linbench.results.schema import RESULT_COLUMNS
from linbench.sweep.points import KEY_COLUMNS

PLANTED_FILE = Path(__file__).parents[1] / "plugins" / "planted.py"
CPU = ("--device", "cpu")
TINY = ("--seq", "64,128", "--heads", "2", "--dim", "16", "--budget-s", "0.05", *CPU)


def run_folder(out: Path) -> Path:
    (folder,) = out.iterdir()
    return folder


def read_rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "results.csv").open() as handle:
        return list(csv.DictReader(handle))


def wait_for_rows(out: Path, count: int, timeout_s: float = 120) -> None:
    """Until the one run folder under ``out`` holds ``count`` result rows."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        folders = list(out.iterdir())
        if folders and (folders[0] / "results.csv").exists() and len(read_rows(folders[0])) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"no {count} rows under {out} within {timeout_s} s")


def test_a_tiny_sweep_writes_results_samples_and_meta(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("run", "--variant", "cosine:chunked", "--baseline", "softmax:sdpa", *TINY, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    folder = run_folder(tmp_path)
    assert folder.name.endswith("-cosine-chunked")
    rows = read_rows(folder)
    assert tuple(rows[0]) == RESULT_COLUMNS
    assert [(r["impl"], r["seq"], r["status"]) for r in rows] == [
        ("chunked", "64", "ok"),
        ("sdpa", "64", "ok"),
        ("chunked", "128", "ok"),
        ("sdpa", "128", "ok"),
    ]
    for row in rows:
        assert float(row["time_ms_p20"]) <= float(row["time_ms"]) <= float(row["time_ms_p80"])
        assert int(row["peak_bytes"]) > 0 and float(row["flops"]) > 0 and float(row["tflops"]) > 0
        assert float(row["rel_err"]) < 1e-4 and row["check_seq"] == row["seq"]
    with (folder / "samples.csv").open() as handle:
        samples = list(csv.DictReader(handle))
    assert len(samples) == sum(int(r["samples"]) for r in rows)
    meta = json.loads((folder / "meta.json").read_text())
    for key in ("command", "linbench_version", "git_sha", "python", "torch", "device_name", "cpu_model", "started_at"):
        assert key in meta
    assert meta["status"] == "complete" and meta["sweep"]["impls"] == ["cosine:chunked", "softmax:sdpa"]
    assert "fastest" in result.stdout and "4 ok" in result.stdout


def test_quiet_prints_only_the_plan_and_the_summary_line(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("run", "--variant", "cosine:chunked", "--no-baseline", *TINY, "--out", tmp_path, "--quiet")
    assert result.exit_code == 0, result.output
    assert len(result.stdout.strip().splitlines()) == 2 and "2 ok" in result.stdout
    assert "2 of 2 points to run (1 impl) on cpu" in result.stdout


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (("--seq", "64k..1k"), ("seq", "reversed")),
        (
            (
                "--seq",
                "1k..",
            ),
            ("seq", "start and an end"),
        ),
        (("--batch", "0"), ("batch", "positive")),
        (("--heads", "many"), ("heads", "not a number")),
        (("--variant", "cosine:nope"), ("cosine", "nope")),
        (("--variant", "nope"), ("unknown variant 'nope'",)),
        (("--dtype", "fp8"), ("fp8",)),
        (("--mode", "sideways"), ("sideways",)),
        (("--device", "tpu"), ("tpu",)),
        (("--suite", "missing.toml"), ("missing.toml", "does not exist")),
        (("--causal", "--bidirectional"), ("exclude each other",)),
        (("--plugin", "missing.py"), ("missing.py", "does not exist")),
        (("--timeout-s", "0"), ("timeout_s",)),
        (("--resume", "."), ("not a linbench run folder",)),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_folder(
    invoke: Invoke, tmp_path: Path, args: tuple[str, ...], fragments: tuple[str, ...]
) -> None:
    out = tmp_path / "out"
    device = () if {"--device", "--resume"} & set(args) else CPU  # a resumed run keeps its own device
    assert_usage_error(invoke("run", *args, *device, "--out", out), *fragments)
    assert not out.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here: run would sweep on it")
def test_cuda_without_cuda_is_a_usage_error(invoke: Invoke, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert_usage_error(invoke("run", "--device", "cuda", "--out", out), "CUDA is not available")
    assert not out.exists()


def test_a_malformed_suite_is_a_usage_error(invoke: Invoke, tmp_path: Path) -> None:
    suite = tmp_path / "bad.toml"
    suite.write_text("seq = [1k")
    assert_usage_error(invoke("run", "--suite", suite, *CPU, "--out", tmp_path / "out"), "bad.toml", "TOML")


def test_an_unsupported_head_dim_is_a_usage_error(invoke: Invoke, planted: str, tmp_path: Path) -> None:
    from dataclasses import replace

    from linbench.variants.registry import get_variant, register_variant

    variant = get_variant(planted)
    limited = replace(variant.impl("ref"), shape_support=lambda dk, dv, dtype: "dims up to 32" if dk > 32 else None)
    register_variant(replace(variant, impl_list=(limited,)), replace=True)
    result = invoke("run", "--variant", f"{planted}:ref", "--dim", "64", *CPU, "--out", tmp_path / "out")
    assert_usage_error(result, f"{planted}:ref", "dim_k=64", "dims up to 32")
    assert not (tmp_path / "out").exists()


def test_a_plugin_file_shows_in_list_and_runs(invoke: Invoke, tmp_path: Path) -> None:
    listed = invoke("list", "--plugin", PLANTED_FILE, *CPU)
    assert listed.exit_code == 0 and "planted" in listed.stdout
    args = ("--plugin", PLANTED_FILE, "--variant", "planted:good,planted:wrong", "--no-baseline", *TINY)
    result = invoke("run", *args, "--out", tmp_path)
    assert result.exit_code == 1, result.output  # planted:wrong fails its check
    statuses = {(r["impl"], r["status"]) for r in read_rows(run_folder(tmp_path))}
    assert statuses == {("good", "ok"), ("wrong", "mismatch")}


def test_kill_9_leaves_valid_csv_and_resume_finishes_without_duplicates(tmp_path: Path) -> None:
    seqs = "64,96,128,160,192,224,256,288"
    command = linbench_argv("run", "--variant", "cosine:chunked", "--no-baseline", *CPU, "--seq", seqs, "--heads", "2")
    command += ["--dim", "16", "--budget-s", "0.3", "--out", str(tmp_path), "-q"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for_rows(tmp_path, 2)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    folder = run_folder(tmp_path)
    done_before = read_rows(folder)
    assert 2 <= len(done_before) < 8, "the kill should land mid-sweep"
    resumed = subprocess.run(linbench_argv("run", "--resume", folder, "-q"), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    rows = read_rows(folder)
    keys = [tuple(r[c] for c in KEY_COLUMNS) for r in rows]
    assert len(keys) == len(set(keys)) == 8
    assert sorted(int(r["seq"]) for r in rows) == [int(s) for s in seqs.split(",")]
    assert rows[: len(done_before)] == done_before  # finished points were kept, not rerun
    with (folder / "samples.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == sum(int(r["samples"]) for r in rows)
    assert json.loads((folder / "meta.json").read_text())["status"] == "complete"


def test_ctrl_c_stops_cleanly_and_marks_the_run_interrupted(tmp_path: Path) -> None:
    command = linbench_argv("run", "--variant", "cosine:chunked", "--no-baseline", *CPU)
    command += ["--seq", "64..2k:+64", "--heads", "2", "--dim", "16", "--budget-s", "0.3", "--out", str(tmp_path), "-q"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_rows(tmp_path, 1)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "--resume" in stdout
    folder = run_folder(tmp_path)
    assert json.loads((folder / "meta.json").read_text())["status"] == "interrupted"
    assert 1 <= len(read_rows(folder)) < 32


def test_ctrl_c_to_the_whole_process_group_writes_no_error_rows(tmp_path: Path) -> None:
    """A terminal's Ctrl-C also reaches the worker forks; only the supervisor may act on it."""
    command = linbench_argv("run", "--variant", "cosine:chunked", "--no-baseline", *CPU)
    command += ["--seq", "64..2k:+64", "--heads", "2", "--dim", "16", "--budget-s", "0.3", "--out", str(tmp_path), "-q"]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    process = subprocess.Popen(command, **pipes, start_new_session=True)
    wait_for_rows(tmp_path, 2)
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "--resume" in stdout
    rows = read_rows(run_folder(tmp_path))
    assert rows and {row["status"] for row in rows} == {"ok"}
