"""``linbench run --devices``, ``--shard K/N`` with ``linbench merge``, ``--resume`` of a killed
coordinator, and every bad combination of the fleet's options as one line and exit 2.

CPU only: a fake inventory (LINBENCH_FAKE_DEVICES, test-only) stands for the GPUs, the agents
are real processes and every point is measured on the CPU by linbench's own runner."""

from __future__ import annotations

import csv
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from cli_helpers import Invoke, linbench_argv

from linbench.results.schema import KEY_COLUMNS

FAKE = "LINBENCH_FAKE_DEVICES"
# Two scenarios (heads 1, 2) of one impl at two lengths: four points.
SWEEP = [
    *("--variant", "cosine:chunked", "--no-against", "--seq", "32..64", "--heads", "1,2", "--dim", "8"),
    *("--device", "cpu", "--budget-s", "0.02", "--warmup-s", "0", "--min-reps", "2"),
]
WAIT_S = 300.0  # a bound on waiting for a process, never a measured duration


def fake_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int = 2, **extra: object) -> Path:
    """A fake inventory of ``count`` GPUs, switched on for this test and the processes it starts."""
    devices = [
        {"uuid": f"GPU-fake-{i}", "pci_bus_id": f"0000:{i + 1:02x}:00.0", "name": "Fake H100", "numa_node": 0}
        for i in range(count)
    ]
    path = tmp_path / "fake-gpus.json"
    path.write_text(json.dumps({"host": "node-a", "devices": devices, **extra}))
    monkeypatch.setenv(FAKE, str(path))
    return path


def stalling_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agents of the runs this test starts run linbench's own runner with the fake
    inventory's stall (tests/fleet/fake_runner.py), once: a resumed run measures as usual."""
    monkeypatch.setenv("LINBENCH_FLEET_RUNNER", "fake_runner:run_stalling_linbench_points")
    path = [str(Path(__file__).resolve().parents[1] / "fleet"), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in path if p))


def rows(run: Path) -> list[dict[str, str]]:
    with (run / "results.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def keys(table: list[dict[str, str]]) -> list[tuple[str, ...]]:
    return [tuple(r[c] for c in KEY_COLUMNS) for r in table]


def only_run(out: Path) -> Path:
    (run,) = [p for p in out.iterdir() if (p / "fleet.json").is_file()]
    return run


@pytest.mark.extended
def test_devices_spreads_a_sweep_and_merges_it(invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_gpus(tmp_path, monkeypatch)
    result = invoke("run", *SWEEP, "--devices", "cuda:0-1", "--oversubscribe", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "cuda:1 → GPU-fake-1  Fake H100  PCI 0000:02:00.0  NUMA 0" in result.stdout
    run = only_run(tmp_path / "out")
    table = rows(run)
    assert len(table) == 4 and {r["status"] for r in table} == {"ok"}
    assert {r["gpu_uuid"] for r in table} == {"GPU-fake-0", "GPU-fake-1"}  # one scenario on each
    assert all(r["host"] == "node-a" and r["shard"] and r["attempt"] == "1" for r in table)
    meta = json.loads((run / "meta.json").read_text())
    assert meta["status"] == "complete" and meta["fleet"]["rows"] == 4 and meta["sweep"]["points"] == 4
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    again = invoke("merge", run)  # deterministic and idempotent
    assert again.exit_code == 0 and "4 rows from 2 shards" in again.stdout
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before


@pytest.mark.slow
@pytest.mark.extended
def test_shard_parts_under_any_launcher_then_merge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_gpus(tmp_path, monkeypatch)
    run = tmp_path / "runs" / "cosine-chunked"  # --out is the parent, as for a plain run
    for part in range(2):  # as two array tasks, each given one GPU (by index, as Slurm gives it)
        env = os.environ | {"CUDA_VISIBLE_DEVICES": str(part)}
        argv = linbench_argv("run", *SWEEP, "--shard", f"{part}/2", "--out", tmp_path / "runs")
        done = subprocess.run(argv, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert f"part {part}/2" in done.stdout and f"linbench merge {run}" in done.stdout
    assert not (run / "results.csv").exists()  # a part never merges
    merged = subprocess.run([sys.executable, "-m", "linbench", "merge", str(run)], capture_output=True, text=True)
    assert merged.returncode == 0, merged.stderr
    table = rows(run)
    assert len(table) == 4 and {r["gpu_uuid"] for r in table} == {"GPU-fake-0", "GPU-fake-1"}


def test_cpu_agents_spread_a_cpu_sweep_without_gpus(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("run", *SWEEP, "--devices", "cpu:2", "--oversubscribe", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "on 2 CPU agents of this host (--devices cpu:2: no GPU)" in result.stdout  # said on the start line
    assert "cpu:1 → CPU-1  CPU" in result.stdout
    table = rows(only_run(tmp_path / "out"))
    assert len(table) == 4 and {r["status"] for r in table} == {"ok"}
    assert {r["gpu_uuid"] for r in table} == {"CPU-0", "CPU-1"}  # one scenario on each agent


@pytest.mark.slow
@pytest.mark.extended
def test_a_killed_coordinator_resumes_without_losing_or_repeating_a_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "stalled"
    fake_gpus(tmp_path, monkeypatch, stall={"seq": "64", "marker": str(marker)})
    stalling_agents(monkeypatch)
    out = tmp_path / "out"
    argv = linbench_argv("run", *SWEEP, "--devices", "all", "--oversubscribe", "--out", out)
    coordinator = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + WAIT_S
    while not marker.exists() or not marker.read_text().endswith("\n"):
        assert time.monotonic() < deadline and coordinator.poll() is None
        time.sleep(0.05)
    stalled = int(marker.read_text())
    coordinator.send_signal(signal.SIGKILL)
    coordinator.wait(timeout=WAIT_S)
    while Path(f"/proc/{stalled}").exists():  # its agents die with it
        assert time.monotonic() < deadline
        time.sleep(0.05)
    run = only_run(out)
    resumed = subprocess.run(linbench_argv("run", "--resume", run), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming 4 points in 2 shards" in resumed.stdout
    table = rows(run)
    assert sorted(keys(table)) == sorted(set(keys(table))) and len(table) == 4  # none lost, none twice
    assert {r["status"] for r in table} == {"ok"}


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--devices", "cuda:7"], "--devices: cuda:7 names cuda:7, but this host has 2 GPUs (cuda:0-1)"),
        (["--devices", "cuda:0", "--shard", "0/2"], "--shard K/N runs one part here"),
        (["--devices", "cuda:0", "--executor", "slurm"], "--executor slurm takes its GPUs from Slurm"),
        (["--devices", "cuda:0", "--node-exclusive"], "--node-exclusive is for --executor slurm, not local"),
        (["--devices", "cuda:0", "--executor", "mpi"], "--executor 'mpi': use local, slurm, ray"),
        (["--executor", "slurm", "--slurm-option", "account"], "--slurm-option 'account' is not KEY=VALUE"),
        (["--executor", "ray", "--nodes", "2"], "--nodes is for --executor slurm, not ray"),
        (["--shard", "2/2"], "--shard '2/2': K must be 0 to N-1"),
        (["--shard", "0/2"], "a --shard agent needs exactly one visible GPU; it sees 0"),
        (["--devices", "cuda:0", "--max-gpus", "4"], "--max-gpus bounds slurm and ray"),
        (["--devices", "cpu:x"], "--devices cpu:x: name CPU agents as cpu:N (N at least 1), alone"),
        (["--devices", "cpu:2", "--shard", "0/2"], "--shard K/N runs one part here"),
        (["--devices", "cuda:0", "--cpus-per-gpu", "0"], "--cpus-per-gpu 0: give a whole number of at least 1"),
    ],
)
def test_bad_fleet_options_are_one_line_and_exit_2(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], words: str
) -> None:
    fake_gpus(tmp_path, monkeypatch)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    result = invoke("run", *SWEEP, *args, "--out", tmp_path / "out")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("linbench: error: ") and result.stderr.count("\n") == 1
    assert words in result.stderr
    assert not (tmp_path / "out").exists()  # nothing made


@pytest.mark.parametrize(("executor", "module", "extra"), [("slurm", "submitit", "slurm"), ("ray", "ray", "ray")])
def test_a_missing_extra_names_its_install_command(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executor: str, module: str, extra: str
) -> None:
    fake_gpus(tmp_path, monkeypatch)
    monkeypatch.setitem(sys.modules, module, None)  # as if not installed: importing it fails
    result = invoke("run", *SWEEP, "--executor", executor, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert result.stderr == f"linbench: error: --executor {executor} needs {module}: pip install 'linbench[{extra}]'\n"


def test_devices_on_a_cpu_sweep_without_the_fake_inventory_is_refused(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(FAKE, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a GPU host asked for a CPU sweep
    result = invoke("run", *SWEEP, "--devices", "all", "--out", tmp_path / "out")
    assert result.exit_code == 2 and "this sweep runs on cpu: several GPUs take a GPU sweep" in result.stderr


def test_devices_on_a_host_without_cuda_says_no_cuda_device_is_here(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(FAKE, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    result = invoke("run", *SWEEP, "--devices", "cuda:0", "--out", tmp_path / "out")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith("linbench: error: --devices cuda:0: no CUDA device is here (torch sees none")
    assert "several GPUs take a GPU sweep" not in result.stderr


def test_merge_refuses_a_folder_that_is_no_fleet_run(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("merge", tmp_path)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr == (
        f"linbench: error: {tmp_path} is not a run spread over several GPUs (--devices, --shard): "
        "it holds no fleet.json\n"
    )
    assert "Errno" not in invoke("merge", tmp_path / "nowhere").stderr


def test_merge_of_a_plain_run_says_it_has_nothing_to_merge(invoke: Invoke, tmp_path: Path) -> None:
    (tmp_path / "results.csv").write_text("status\n")
    result = invoke("merge", tmp_path)
    assert result.exit_code == 2 and "Error" not in result.stderr
    assert f"{tmp_path} is a run on one device, not one spread over several GPUs" in result.stderr
    assert "its results.csv is already whole, with nothing to merge" in result.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--devices", "cuda:5"], "--devices: cuda:5 names cuda:5, but this host has 2 GPUs"),
        (["--device", "cpu", "--devices", "all"], "--device checks one device, --devices a run over several"),
        (["--devices", "all", "--cpus-per-gpu", "64"], "agents need 64 cores each"),
    ],
)
def test_doctor_devices_bad_input_is_one_line_and_exit_2(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], words: str
) -> None:
    fake_gpus(tmp_path, monkeypatch)
    result = invoke("doctor", *args)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and words in result.stderr


@pytest.mark.slow
@pytest.mark.extended
def test_cpu_shard_parts_share_one_run_folder_then_merge_and_the_advice_runs_as_printed(
    invoke: Invoke, tmp_path: Path
) -> None:
    """Two sides of two --shard parts on CPU agents each, merged and compared: too few processes
    to judge, so compare prints, per side, the commands that would measure more; the current
    side's are run as printed. (The two sides' advice comes from one function, each side's from
    its own recorded command: running one side's shows that the printed commands run.)"""
    sweep = [*SWEEP[:3], "--seq", "32", *SWEEP[5:], "--processes", "1", "--max-processes", "1"]  # too few to judge
    for side in ("base", "cur"):
        for part in range(2):
            argv = linbench_argv("run", *sweep, "--shard", f"{part}/2", "--devices", "cpu", "--out", tmp_path / side)
            done = subprocess.run(argv, capture_output=True, text=True)  # records its command, as a user's would
            assert done.returncode == 0, done.stderr
            assert "on one CPU agent on this process's cores (--devices cpu: no GPU)" in done.stdout
        run = tmp_path / side / "cosine-chunked"  # the parts share one run folder under --out
        assert invoke("merge", run).exit_code == 0
        assert {r["gpu_uuid"] for r in rows(run)} == {"CPU-0", "CPU-1"} and len(rows(run)) == 2
    run = tmp_path / "cur" / "cosine-chunked"
    old_usage = invoke("run", *sweep, "--shard", "0/2", "--devices", "cpu", "--out", run)
    assert old_usage.exit_code == 2
    assert f"linbench: error: --out {run} is a run folder (it holds fleet.json)" in old_usage.stderr
    compared = invoke("compare", tmp_path / "base" / "cosine-chunked", run)
    sides = [line.split(": ", 1)[1] for line in compared.output.splitlines() if line.startswith("  the ")]
    assert len(sides) == 2, compared.output  # the baseline side and the current one
    for commands in sides:
        printed = commands.split(" && ")
        assert len(printed) == 3 and printed[-1].startswith("linbench merge ")  # both parts, then the merge
    for commands in sides[1:]:  # the current side's
        printed = commands.split(" && ")
        for command in printed:
            words = shlex.split(command)
            assert words[0] == "linbench"
            argv = linbench_argv(*words[1:]) if words[1] == "run" else [sys.executable, "-m", *words]
            done = subprocess.run(argv, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
        merged = Path(shlex.split(printed[-1])[-1])
        assert len(rows(merged)) == 2 and {r["status"] for r in rows(merged)} == {"ok"}
