"""``linbench run`` end to end: a tiny sweep, bad input, plugins, and kill -9 then --resume.
CPU only (each run says --device cpu)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from cli_helpers import Invoke, assert_usage_error, linbench_argv

from linbench.results.schema import RESULT_COLUMNS
from linbench.sweep.points import KEY_COLUMNS

PLANTED_FILE = Path(__file__).parents[1] / "plugins" / "planted.py"
STALL_MARKER_ENV = "LINBENCH_PLANTED_STALL"  # planted.py's
WAIT_S = 120.0  # a bound on waiting for a process, never a measured duration
CPU = ("--device", "cpu")
TINY = ("--seq", "64,128", "--heads", "2", "--dim", "16", "--budget-s", "0.05", "--warmup-s", "0", *CPU)


def run_folder(out: Path) -> Path:
    (folder,) = out.iterdir()
    return folder


def read_rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "results.csv").open() as handle:
        return list(csv.DictReader(handle))


def test_a_tiny_sweep_writes_results_samples_and_meta(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("run", "--variant", "cosine:chunked", "--against", "softmax:sdpa", *TINY, "--out", tmp_path)
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


def test_the_start_says_how_many_torch_threads_the_workers_run_with(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("run", "--variant", "cosine:chunked", "--no-against", *TINY, "--threads", "1", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "points to run" in line)
    assert lines[start + 1] == (
        "  threads: 1 torch thread per worker (--threads); its times compare only with runs on as many "
        "threads (each row records its threads)"
    )


def test_the_threads_line_says_the_idle_cores_chose_them() -> None:
    from linbench.cli.run_display import threads_line

    choice = {"threads": 1, "by": "idle cores", "cores": 2, "most": 2, "idle_cores": 0.8}
    line = threads_line({"timing": {"threads_choice": choice}})
    assert line is not None
    assert line.startswith("  threads: 1 torch thread per worker (0.8 of 2 cores idle at the start)")
    assert threads_line({"timing": {"threads": None}}) is None  # a GPU run: torch's default, no choice
    by_hand = {"threads": 8, "by": "--threads", "cores": 2, "most": 2}
    crowded = threads_line({"timing": {"threads_choice": by_hand}})
    assert crowded is not None and "(--threads; more than the 2 usable cores, so threads wait for a core" in crowded
    fitting = threads_line({"timing": {"threads_choice": by_hand | {"threads": 2}}})
    assert fitting is not None and "more than" not in fitting


def test_quiet_prints_only_the_plan_and_the_summary_line(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("run", "--variant", "cosine:chunked", "--no-against", *TINY, "--out", tmp_path, "--quiet")
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
        (("--resume", ".", "--out", "elsewhere"), ("--resume finishes the run in '.', not under --out", "drop --out")),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_folder(
    invoke: Invoke, tmp_path: Path, args: tuple[str, ...], fragments: tuple[str, ...]
) -> None:
    out = tmp_path / "out"
    device = () if {"--device", "--resume"} & set(args) else CPU  # a resumed run keeps its own device
    where = () if "--resume" in args else ("--out", out)  # and its own folder
    assert_usage_error(invoke("run", *args, *device, *where), *fragments)
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
    args = ("--plugin", PLANTED_FILE, "--variant", "planted:good,planted:wrong", "--no-against", *TINY)
    result = invoke("run", *args, "--out", tmp_path)
    assert result.exit_code == 1, result.output  # planted:wrong fails its check
    statuses = {(r["impl"], r["status"]) for r in read_rows(run_folder(tmp_path))}
    assert statuses == {("good", "ok"), ("wrong", "mismatch")}


# A run of planted:stall stops at its first point of FAIL_FROM_SEQ (512) or longer, in the
# worker measuring it, after the rows of the three shorter points: a kill or a Ctrl-C lands
# mid-sweep by construction, never by a race with the clock.
STALL_SEQS = ("64", "128", "256", "512", "1024")
STALL_RUN = ("--plugin", PLANTED_FILE, "--variant", "planted:stall", "--no-against", *CPU, "-q")
STALL_RUN += ("--seq", ",".join(STALL_SEQS), "--heads", "2", "--dim", "16", "--budget-s", "0.05", "--warmup-s", "0")


def start_stalling_run(tmp_path: Path, **popen: Any) -> tuple[subprocess.Popen[str], int]:
    """``linbench run`` of planted:stall into tmp_path/out; returns once its worker has stalled,
    with that worker's pid (which outlives a kill -9 of the run: the test ends it)."""
    marker = tmp_path / "stalled"
    env = os.environ | {STALL_MARKER_ENV: str(marker)}
    command = linbench_argv("run", *STALL_RUN, "--out", tmp_path / "out")
    process = subprocess.Popen(command, text=True, env=env, **popen)
    deadline = time.monotonic() + WAIT_S
    while not marker.exists() or not marker.read_text().endswith("\n"):
        assert time.monotonic() < deadline and process.poll() is None, process.returncode
        time.sleep(0.05)
    return process, int(marker.read_text())


def test_the_runs_fork_server_is_a_fork_of_the_command_and_its_workers_come_from_it(tmp_path: Path) -> None:
    """``linbench run`` forks its fork server once it holds the worker's imports
    (linbench/runner/zygote.py): the stalled worker's parent is a child of the command with the
    command's own command line, and no spawned server (a Python of its own) is started."""
    process, worker = start_stalling_run(tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        server = _parent(worker)
        assert _parent(server) == process.pid
        assert _cmdline(server) == _cmdline(process.pid)
        children = [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if _parent(pid) == process.pid]
        assert not [pid for pid in children if b"from multiprocessing.forkserver import main" in _cmdline(pid)]
    finally:
        process.kill()
        process.wait()
        os.kill(worker, signal.SIGKILL)


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
    except (OSError, ValueError):
        return -1  # it ended meanwhile


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


@pytest.mark.slow
def test_kill_9_leaves_valid_csv_and_resume_finishes_without_duplicates(tmp_path: Path) -> None:
    process, worker = start_stalling_run(tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    os.kill(worker, signal.SIGKILL)  # a fork server's child: the kill of the run leaves it
    folder = run_folder(tmp_path / "out")
    done_before = read_rows(folder)
    assert [r["seq"] for r in done_before] == ["64", "128", "256"]
    resumed = subprocess.run(linbench_argv("run", "--resume", folder, "-q"), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    rows = read_rows(folder)
    keys = [tuple(r[c] for c in KEY_COLUMNS) for r in rows]
    assert len(keys) == len(set(keys)) == len(STALL_SEQS)
    assert [r["seq"] for r in rows] == list(STALL_SEQS) and {r["status"] for r in rows} == {"ok"}
    assert rows[: len(done_before)] == done_before  # finished points were kept, not rerun
    with (folder / "samples.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == sum(int(r["samples"]) for r in rows)
    assert json.loads((folder / "meta.json").read_text())["status"] == "complete"


def test_ctrl_c_stops_cleanly_and_marks_the_run_interrupted(tmp_path: Path) -> None:
    process, _ = start_stalling_run(tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=WAIT_S)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "--resume" in stdout
    folder = run_folder(tmp_path / "out")
    assert json.loads((folder / "meta.json").read_text())["status"] == "interrupted"
    assert [r["seq"] for r in read_rows(folder)] == ["64", "128", "256"]


def test_ctrl_c_to_the_whole_process_group_writes_no_error_rows(tmp_path: Path) -> None:
    """A terminal's Ctrl-C also reaches the worker forks; only the supervisor may act on it."""
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    process, _ = start_stalling_run(tmp_path, **pipes, start_new_session=True)
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=WAIT_S)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "--resume" in stdout
    rows = read_rows(run_folder(tmp_path / "out"))
    assert [(r["seq"], r["status"]) for r in rows] == [("64", "ok"), ("128", "ok"), ("256", "ok")]
